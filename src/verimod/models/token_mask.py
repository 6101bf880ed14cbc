"""Constrained decoding in-process: a precompiled token mask applied to the logits (llguidance).

Why llguidance (and not xgrammar or outlines): it computes the set of allowed tokens of a
regular expression, a grammar or a JSON schema over the whole vocabulary in tens of
microseconds per step, lazily, with no index to build first (outlines builds a finite-state
index over the vocabulary for every new regex, minutes for a bounded-repetition grammar like the
VARM one); it is one 3 MB wheel without dependencies (xgrammar pulls torch, transformers and
triton), works on numpy arrays as well as torch tensors, and reads a llama.cpp vocabulary as
well as a Hugging Face tokenizer — so the ``hf`` backend and, where wanted, the ``gguf``
backend share this one implementation. vLLM and SGLang ship it as one of their grammar backends.

Contract:

- :func:`llguidance_grammar` turns a :class:`~verimod.models.base.StructuredOutput` into
  llguidance's grammar text (a :class:`~verimod.models.grammar.TextGrammar` through its regex
  rendering, a regex as is, a JSON schema); an invalid one is a ``client`` error naming it.
- :class:`TokenMask` follows one generation: called with the token sequence so far and the
  next-token logits (a 1-D numpy array or torch tensor, written in place), it feeds the tokens
  generated since the last call to the matcher (the first call marks where generation starts:
  everything before is prompt) and sets the logits of every token the grammar does not allow
  next to −inf. Ids beyond the tokenizer's vocabulary (padding rows of the output layer) are
  never allowed. Once the grammar is complete only end-of-sequence tokens remain allowed; after
  one was generated, the row is finished and later calls leave its logits alone (a batch keeps
  padding finished rows). A token the grammar rejects (impossible when the mask was applied) is
  a ``model`` :class:`~verimod.models.base.BackendError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from verimod.models._local import require_module
from verimod.models.base import BackendError, StructuredOutput


def llguidance_module(purpose: str) -> Any:
    """The ``llguidance`` module, or a ``client`` error naming ``purpose`` and the extra."""
    return require_module("llguidance", "hf", purpose)


def llguidance_grammar(structured: StructuredOutput, purpose: str) -> str:
    """llguidance's grammar text for ``structured`` (validated: a ``client`` error if invalid)."""
    llguidance = llguidance_module(purpose)
    matcher = llguidance.LLMatcher
    try:
        if structured.grammar is not None:
            text, what = matcher.grammar_from_regex(structured.grammar.regex()), structured.grammar.name
        elif structured.regex is not None:
            text, what = matcher.grammar_from_regex(structured.regex), "the regex"
        elif structured.json_schema is not None:
            text, what = matcher.grammar_from_json_schema(json.dumps(structured.json_schema)), "the JSON schema"
        else:
            raise BackendError("client", f"{purpose}: no schema, regex or grammar given")
    except (ValueError, RuntimeError) as exc:
        raise BackendError("client", f"{purpose}: not a valid constraint: {_one_line(str(exc))}") from None
    error = matcher.validate_grammar(text)
    if error:
        raise BackendError("client", f"{purpose}: {what} is not a valid constraint: {_one_line(error)}")
    return str(text)


#: text whose tokens the mask's view of a tokenizer must decode back to the same bytes
PROBE: Final = "评论[T: 外地人] 判[L: harmful]，归[C: region_ethnicity]。Ab 1\n"


def check_readable(mask_tokenizer: Any, tokenizer: Any, what: str) -> None:
    """A ``client`` error unless llguidance's view of ``tokenizer`` (a Hugging Face tokenizer)
    decodes :data:`PROBE`'s tokens back to its bytes: llguidance reads byte-level BPE and
    SentencePiece tokenizers, and would build a wrong mask over any other (e.g. a word-level
    one)."""
    ids = tokenizer(PROBE, add_special_tokens=False)["input_ids"]
    if bytes(mask_tokenizer.decode_bytes(ids)) != PROBE.encode("utf-8"):
        raise BackendError(
            "client",
            f"constrained decoding: llguidance cannot read {what} (its tokens do not decode to the text they "
            "encode; byte-level BPE and SentencePiece tokenizers are supported)",
        )


def _one_line(text: str) -> str:
    """``text``'s whitespace runs (line breaks included) as single spaces, cut at 300 characters."""
    return " ".join(text.split())[:300]


def _first_line(matcher: Any) -> str:
    """The first line of the matcher's error (llguidance appends a multi-line parser state)."""
    return _one_line(str(matcher.get_error()).strip().split("\n", 1)[0])


class TokenMask:
    """The grammar mask of one generation (see the module docstring)."""

    def __init__(self, tokenizer: Any, grammar: str, width: int) -> None:
        llguidance = llguidance_module("constrained decoding")
        self._matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
        self._vocab = int(tokenizer.vocab_size)
        self._width = width
        self._eos = frozenset(int(t) for t in tokenizer.eos_tokens)
        self._start: int | None = None
        self._consumed = 0
        self.finished = False

    def allowed(self, sequence: Sequence[int]) -> np.ndarray | None:
        """Boolean array over the logits' width: the tokens allowed next after ``sequence``
        (None once the generation has finished)."""
        if self._start is None:
            self._start = len(sequence)
        for token in sequence[self._start + self._consumed :]:
            self._consumed += 1
            if self.finished:
                continue
            if not self._matcher.consume_token(int(token)):
                raise BackendError("model", f"grammar: token {int(token)} rejected: {_first_line(self._matcher)}")
            self.finished = int(token) in self._eos
        if self.finished:
            return None
        if self._matcher.is_error():
            raise BackendError("model", f"grammar: {_first_line(self._matcher)}")
        bits = np.frombuffer(self._matcher.compute_bitmask(), dtype=np.uint8)
        allowed = np.zeros(self._width, dtype=bool)
        known = min(self._vocab, self._width)
        allowed[:known] = np.unpackbits(bits, bitorder="little")[:known].astype(bool)
        return allowed

    def __call__(self, sequence: Sequence[int], logits: Any) -> Any:
        """Mask ``logits`` (numpy array or torch tensor, in place) and return them."""
        allowed = self.allowed(sequence)
        if allowed is None:
            return logits
        if isinstance(logits, np.ndarray):
            logits[~allowed] = -np.inf
        else:  # a torch tensor
            import torch

            logits.masked_fill_(torch.from_numpy(~allowed).to(logits.device), float("-inf"))
        return logits
