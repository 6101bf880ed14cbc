"""Pluggable scorers of the SoftHateBench search, and their implementations.

Interfaces (structural :class:`typing.Protocol` types; every scorer has a ``name`` that
enters traces):

- :class:`NliScorer` — ``await score(premise, hypothesis, key=...) -> NliProbs``
  (``(p_entail, p_neutral, p_contradict)`` via :meth:`NliProbs.as_tuple`);
- :class:`LanguageScorer` — ``await score(context, continuation, key=...) -> LmStats``
  (mean token negative log-likelihood and mean next-token entropy of the continuation);
- :class:`TextSimilarity` — ``similarity(reference, candidates) -> list[float]`` in [0, 1];
- :data:`SafetyCheck` — any ``text -> bool`` or ``text -> Awaitable[bool]`` (True: passed);
  :class:`verimod.tasks.softhate.filters.SafetyFilter` (the classifier ensemble) is one.

``key`` is a deterministic identifier of the call (the search passes
``<candidate id>/nli`` and ``<candidate id>/lm``): backend scorers use it as the request's
sample id (so ``scripted:`` files answer by it), static scorers look it up.

Implementations:

- :class:`BackendNliScorer` over any engine backend. The request carries the NLI prompt, the
  labels ``entailment``, ``neutral``, ``contradiction`` and the (premise, hypothesis) pair as
  ``input_pair``, so an NLI cross-encoder (``hfcls:``) classifies the pair itself. A backend
  that fills ``label_probs`` is read through :func:`nli_from_label_probs` (label aliases such as
  ``ENTAILMENT`` or ``contradict``); otherwise the answer text is read by :func:`nli_from_text`: a JSON object
  of the three probabilities, or else the first label word, which becomes a one-hot
  distribution (a text-only LLM gives no graded probabilities).
- :class:`LlamaCppScorer` — a :class:`LanguageScorer` over a GGUF file run by llama-cpp-python
  with per-position logits (``logits_all``); :class:`LlamaCppNliScorer` asks the same model
  the NLI question and reads the three labels' token log-probabilities:
  ``p_label = exp(lp_label) / Σ_l exp(lp_l)`` where ``lp_label`` is the summed log-probability
  of the label's tokens as the assistant's answer. A scorer LM over an OpenAI-compatible
  server (vLLM, llama.cpp server) is :class:`verimod.tasks.softhate.http_scorer.HttpLanguageScorer`.
- :class:`StaticNliScorer` / :class:`StaticLanguageScorer` — answers from tables keyed by
  ``key`` (tests, or scores computed elsewhere).
- :class:`CharNgramTfidfSimilarity` (default, offline, no model download) and
  :class:`EmbeddingSimilarity` (cosine of any embedder's vectors).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, Outcome, run_requests
from verimod.models._local import SerialRunner, require_module
from verimod.models.base import ChatMessage, GenerationParams, ModelBackend, ModelRequest
from verimod.tasks.softhate.prompts import nli_messages, softhate_prompts
from verimod.tasks.softhate.schema import Language
from verimod.tasks.softhate.scoring import LmStats, NliProbs, normalise_text

NLI_LABELS: tuple[str, str, str] = ("entailment", "neutral", "contradiction")
_ALIASES: dict[str, str] = {
    "entailment": "entail",
    "entail": "entail",
    "entails": "entail",
    "entailed": "entail",
    "neutral": "neutral",
    "contradiction": "contradict",
    "contradict": "contradict",
    "contradicts": "contradict",
    "contradictory": "contradict",
}

SafetyCheck: TypeAlias = Callable[[str], Awaitable[bool]] | Callable[[str], bool]


class ScoringError(Exception):
    """A scorer could not score (failed call, unreadable answer); the message is one line."""


class NliScorer(Protocol):
    """Natural-language inference: how strongly ``premise`` supports ``hypothesis``."""

    name: str

    async def score(self, premise: str, hypothesis: str, *, key: str | None = None) -> NliProbs:
        """``(p_entail, p_neutral, p_contradict)`` as :class:`NliProbs`; raises :class:`ScoringError`."""
        ...


class LanguageScorer(Protocol):
    """A scorer LM: processing effort of ``continuation`` read after ``context``."""

    name: str

    async def score(self, context: str, continuation: str, *, key: str | None = None) -> LmStats:
        """Mean NLL (nats/token) and mean next-token entropy (nats); raises :class:`ScoringError`."""
        ...


class TextSimilarity(Protocol):
    """Semantic similarity of candidates to a reference text, each in [0, 1]."""

    name: str

    def similarity(self, reference: str, candidates: Sequence[str]) -> list[float]:
        """One similarity per candidate."""
        ...


async def passes_safety(safety: SafetyCheck, text: str) -> bool:
    """Run a sync or async :data:`SafetyCheck`; True when the text passed."""
    result = safety(text)
    if inspect.isawaitable(result):
        result = await result
    return bool(result)


def nli_from_label_probs(probs: Mapping[str, float]) -> NliProbs:
    """Map label probabilities (keys case-insensitive, aliases like ``entail``/``entailment``)
    onto :class:`NliProbs`, renormalised to sum 1 when their sum is off by more than 1e-9 (so
    probabilities given exactly stay exact). Raises :class:`ScoringError` if none of the three
    labels is present or all are zero."""
    found = {"entail": 0.0, "neutral": 0.0, "contradict": 0.0}
    seen = False
    for label, value in probs.items():
        slot = _ALIASES.get(label.strip().casefold())
        if slot is not None and isinstance(value, int | float) and math.isfinite(value) and value >= 0:
            found[slot] += float(value)
            seen = True
    total = sum(found.values())
    if not seen or total <= 0:
        raise ScoringError(f"no usable NLI label probabilities in {sorted(probs)}")
    if abs(total - 1.0) <= 1e-9:
        total = 1.0
    return NliProbs(**{k: min(1.0, v / total) for k, v in found.items()})


_LABEL_WORD = re.compile(r"[a-z]+")


def nli_from_text(text: str | None) -> NliProbs:
    """Read an LLM's NLI answer: a JSON object of label probabilities, or the first label word
    (one-hot). Raises :class:`ScoringError` otherwise."""
    body = (text or "").strip()
    start, end = body.find("{"), body.rfind("}")
    if start >= 0 and end > start:
        try:
            obj = json.loads(body[start : end + 1])
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            return nli_from_label_probs({k: v for k, v in obj.items() if isinstance(v, int | float)})
    for word in _LABEL_WORD.findall(body.casefold()):
        slot = _ALIASES.get(word)
        if slot is not None:
            return NliProbs(**{k: float(k == slot) for k in ("entail", "neutral", "contradict")})
    raise ScoringError(f"no NLI label in the answer {body[:80]!r}")


def hashed_key(kind: str, *parts: str) -> str:
    return f"{kind}/" + hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]


class BackendNliScorer:
    """An NLI scorer over an engine backend (see the module docstring)."""

    def __init__(
        self,
        backend: ModelBackend,
        *,
        language: Language = "en",
        max_tokens: int = 16,
        engine: EngineConfig | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.name = backend.spec
        self.language = language
        self.params = GenerationParams(temperature=0.0, max_tokens=max_tokens)
        self.engine = engine or EngineConfig()

    async def score(self, premise: str, hypothesis: str, *, key: str | None = None) -> NliProbs:
        """Ask the backend; ``key`` (or a content hash) is the sample id."""
        request = ModelRequest(
            sample_id=key or hashed_key("nli", premise, hypothesis),
            messages=nli_messages(premise, hypothesis, self.language),
            params=self.params,
            labels=NLI_LABELS,
            input_pair=(premise, hypothesis),
        )
        outcomes: list[Outcome] = []
        await run_requests(
            self.backend, [request], outcomes.append, self.engine, self.cache, softhate_prompts().version
        )
        outcome = outcomes[0]
        if outcome.response is None:
            error = outcome.error
            raise ScoringError(f"NLI call failed: {error.kind if error else 'model'}: {error}")
        if outcome.response.label_probs:
            return nli_from_label_probs(outcome.response.label_probs)
        return nli_from_text(outcome.response.text)


class StaticNliScorer:
    """NLI probabilities from a table keyed by ``key`` (a missing key is a :class:`ScoringError`)."""

    def __init__(self, table: Mapping[str, NliProbs | tuple[float, float, float]], name: str = "static-nli") -> None:
        self.name = name
        self._table = {
            k: v if isinstance(v, NliProbs) else NliProbs(entail=v[0], neutral=v[1], contradict=v[2])
            for k, v in table.items()
        }

    async def score(self, premise: str, hypothesis: str, *, key: str | None = None) -> NliProbs:
        """The table's entry for ``key``."""
        if key is None or key not in self._table:
            raise ScoringError(f"no static NLI score for key {key!r}")
        return self._table[key]


class StaticLanguageScorer:
    """(mean NLL, mean entropy) from a table keyed by ``key``."""

    def __init__(self, table: Mapping[str, tuple[float, float]], name: str = "static-lm") -> None:
        self.name = name
        self._table = dict(table)

    async def score(self, context: str, continuation: str, *, key: str | None = None) -> LmStats:
        """The table's entry for ``key``."""
        if key is None or key not in self._table:
            raise ScoringError(f"{self.name}: no static LM score for key {key!r}")
        nll, entropy = self._table[key]
        return LmStats(scorer=self.name, mean_nll=nll, mean_entropy=entropy)


class CharNgramTfidfSimilarity:
    """Cosine of character n-gram TF-IDF vectors (scikit-learn; no model download).

    Texts go through :func:`~verimod.tasks.softhate.scoring.normalise_text`; the IDF is fitted
    on the reference and the candidates of one call (so the score depends on that set only).
    Character n-grams work for Chinese without word segmentation.
    """

    def __init__(self, ngram_range: tuple[int, int] = (1, 3)) -> None:
        self.ngram_range = ngram_range
        self.name = f"char-tfidf-{ngram_range[0]}-{ngram_range[1]}"

    def similarity(self, reference: str, candidates: Sequence[str]) -> list[float]:
        """Cosine of each candidate's vector with the reference's, clipped to [0, 1]."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not candidates:
            return []
        texts = [normalise_text(reference), *(normalise_text(c) for c in candidates)]
        if not any(texts):
            return [1.0] * len(candidates)
        vectorizer = TfidfVectorizer(analyzer="char", ngram_range=self.ngram_range, lowercase=False)
        try:
            matrix = vectorizer.fit_transform(texts)
        except ValueError:  # no n-gram at all
            return [float(c == texts[0]) for c in texts[1:]]
        sims = (matrix[1:] @ matrix[0].T).toarray().ravel()
        return [float(min(1.0, max(0.0, s))) for s in sims]


class EmbeddingSimilarity:
    """Cosine similarity of vectors from any embedder ``texts -> vectors`` (clipped to [0, 1])."""

    def __init__(self, embed: Callable[[Sequence[str]], Any], name: str) -> None:
        self._embed = embed
        self.name = name

    def similarity(self, reference: str, candidates: Sequence[str]) -> list[float]:
        """Cosine of each candidate's vector with the reference's."""
        if not candidates:
            return []
        vectors = np.asarray(self._embed([reference, *candidates]), dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        unit = vectors / norms[:, None]
        return [float(min(1.0, max(0.0, s))) for s in unit[1:] @ unit[0]]


def token_nll_entropy(logits: npt.ArrayLike, tokens: Sequence[int]) -> tuple[float, float]:
    """Mean negative log-likelihood of ``tokens`` and mean entropy of the distributions.

    ``logits[i]`` are the raw next-token logits of the position that predicts ``tokens[i]``:
    ``log p = z − logsumexp(z)``; ``nll_i = −log p_i[tokens[i]]``;
    ``H_i = −Σ_v p_i(v) log p_i(v)``; returns ``(mean_i nll_i, mean_i H_i)`` in nats.
    """
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] != len(tokens) or not len(tokens):
        raise ValueError(f"need one logits row per token, got {z.shape} for {len(tokens)} tokens")
    shift = z - z.max(axis=1, keepdims=True)
    logp = shift - np.log(np.exp(shift).sum(axis=1, keepdims=True))
    nll = -logp[np.arange(len(tokens)), np.asarray(tokens)]
    entropy = -(np.exp(logp) * logp).sum(axis=1)
    return float(nll.mean()), float(max(0.0, entropy.mean()))


class LlamaCppScorer:
    """A :class:`LanguageScorer` over a GGUF model (llama-cpp-python, ``pip install ".[local]"``).

    Loads its own model instance with per-position logits (``logits_all``; memory grows with
    ``context_size × vocabulary``, about 300 MB at 512 tokens for a 150k vocabulary). The
    context is read as plain text followed by a newline (no chat template), the continuation
    as the text after it; a context too long for the window loses its beginning, a
    continuation too long loses its end. Calls run one at a time in a worker thread.
    """

    def __init__(
        self, path: str | Path, *, threads: int | None = None, context_size: int = 512, name: str | None = None
    ) -> None:
        llama_cpp = require_module("llama_cpp", "local", "the llama.cpp scorer")
        self.path = Path(path)
        self.name = name or f"llama.cpp:{self.path.name}"
        self._runner = SerialRunner(self.name)
        self._llm: Any = llama_cpp.Llama(
            model_path=str(self.path),
            n_ctx=context_size,
            n_threads=threads,
            n_threads_batch=threads,
            logits_all=True,
            verbose=False,
        )

    @classmethod
    def from_backend(cls, backend: ModelBackend, *, context_size: int = 512) -> LlamaCppScorer:
        """A scorer over the same GGUF file (and thread count) as a ``gguf:`` backend."""
        path = getattr(backend, "path", None)
        if backend.prefix != "gguf" or not isinstance(path, Path):
            raise TypeError(f"not a gguf backend: {backend.spec}")
        return cls(path, threads=backend.options.threads, context_size=context_size)

    def _stats(self, context: str, continuation: str) -> LmStats:
        llm = self._llm
        ctx = llm.tokenize((context + "\n").encode("utf-8"), add_bos=True, special=False)
        cont = llm.tokenize(continuation.encode("utf-8"), add_bos=False, special=False)
        if not cont:
            raise ScoringError("empty continuation")
        n_ctx = llm.n_ctx()
        cont = cont[: n_ctx - 1]
        ctx = ctx[-(n_ctx - len(cont)) :]
        llm.reset()
        llm.eval(ctx + cont)
        rows = llm.scores[len(ctx) - 1 : len(ctx) + len(cont) - 1]
        nll, entropy = token_nll_entropy(rows, cont)
        return LmStats(scorer=self.name, mean_nll=max(0.0, nll), mean_entropy=entropy, n_tokens=len(cont))

    async def score(self, context: str, continuation: str, *, key: str | None = None) -> LmStats:
        """Mean NLL and entropy of ``continuation`` after ``context`` (``key`` is unused)."""
        if self._llm is None:
            raise ScoringError(f"{self.name}: the scorer is closed")
        try:
            return await self._runner.run(lambda: self._stats(context, continuation))
        except (RuntimeError, ValueError) as exc:
            raise ScoringError(f"{self.name}: {type(exc).__name__}: {exc}") from None

    def _chat_prompt(self, messages: Sequence[ChatMessage]) -> tuple[str, bool]:
        """The chat-formatted prompt (the GGUF's own template) and whether it holds the BOS."""
        llm = self._llm
        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            text = "".join(f"{m.role}: {m.content}\n" for m in messages) + "assistant: "
            return text, False
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def token_text(token: int) -> str:
            return "" if token < 0 else llm.detokenize([token], special=True).decode("utf-8", "replace")

        formatter = Jinja2ChatFormatter(
            template=template, eos_token=token_text(llm.token_eos()), bos_token=token_text(llm.token_bos())
        )
        chat: Any = [{"role": m.role, "content": m.content} for m in messages]
        rendered = formatter(messages=chat)
        return rendered.prompt, "bos_token" in template

    def _label_logprobs(self, messages: Sequence[ChatMessage], labels: Sequence[str]) -> dict[str, float]:
        llm = self._llm
        prompt, has_bos = self._chat_prompt(messages)
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=not has_bos, special=True)
        llm.reset()
        llm.eval(tokens)
        out: dict[str, float] = {}
        for label in labels:
            label_tokens = llm.tokenize(label.encode("utf-8"), add_bos=False, special=False)
            llm.n_tokens = len(tokens)  # rewind to the end of the prompt (eval drops the KV cache past it)
            llm.eval(label_tokens)
            rows = llm.scores[len(tokens) - 1 : len(tokens) + len(label_tokens) - 1]
            nll, _ = token_nll_entropy(rows, label_tokens)
            out[label] = -nll * len(label_tokens)
        return out

    async def label_logprobs(self, messages: Sequence[ChatMessage], labels: Sequence[str]) -> dict[str, float]:
        """Summed token log-probability of each label as the assistant's whole answer."""
        if self._llm is None:
            raise ScoringError(f"{self.name}: the scorer is closed")
        try:
            return await self._runner.run(lambda: self._label_logprobs(messages, labels))
        except (RuntimeError, ValueError) as exc:
            raise ScoringError(f"{self.name}: {type(exc).__name__}: {exc}") from None

    async def aclose(self) -> None:
        """Wait for the running call, then free the model (never under a running evaluation)."""
        await self._runner.close(self._free)

    def _free(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None and hasattr(llm, "close"):
            llm.close()


class LlamaCppNliScorer:
    """An NLI scorer reading the label log-probabilities of a :class:`LlamaCppScorer`'s model."""

    def __init__(self, scorer: LlamaCppScorer, *, language: Language = "en") -> None:
        self.scorer = scorer
        self.language = language
        self.name = f"{scorer.name}/nli-logprobs"

    async def score(self, premise: str, hypothesis: str, *, key: str | None = None) -> NliProbs:
        """``p_label = softmax over the three labels' summed token log-probabilities``."""
        logprobs = await self.scorer.label_logprobs(nli_messages(premise, hypothesis, self.language), NLI_LABELS)
        top = max(logprobs.values())
        weights = {label: math.exp(lp - top) for label, lp in logprobs.items()}
        return nli_from_label_probs(weights)
