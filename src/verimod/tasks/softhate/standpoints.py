"""Standpoint extraction and per-group medoid standpoints (the end of SoftHateBench stage 1).

After the detector vote, an LLM (DeepSeek-V3.1 in the paper) reads each seed and writes the
hostile standpoint S it expresses and the target phrase ([TG] as written). Target phrases are
resolved to groups of a taxonomy (Level 1 after UK equality guidance, Level 2 after US census
definitions; verimod's mapping is ``resources/softhate/groups.json``); groups with fewer than
20 items are removed; in each remaining group the medoid standpoint is taken, and it must be
entailed by its source sentence and entail it (NLI, both directions).

**Extraction** (:func:`extract_standpoints`): one request per seed, sample id = the seed's id,
the prompt of ``resources/softhate/standpoint_prompt.json`` (its ``version`` is the engine's
``prompt_version``) and JSON-schema structured output ``{"standpoint": str, "target": str}``.
The answer is read only when, stripped, it is a bare JSON object or one fenced code block
(three backticks, optionally tagged ``json``) holding one; both fields must be non-empty
strings (whitespace is collapsed). Anything else — a failed request, prose, invalid JSON, a
missing, non-string or empty field — is an :class:`Extraction` with ``error`` set and
``standpoint = target = None``. No seed is dropped or guessed.

**Group resolution**: :mod:`~verimod.tasks.softhate.groups`.

**Selection** (:func:`select_group_standpoints`): each successful extraction joins the group
of its target phrase (failed extractions are ignored; unresolved phrases are counted under
``"<unresolved>"``). A group with fewer than ``min_group`` members is dropped. In each other
group, members are ranked by the mean cosine similarity of their standpoint texts to the
group's other standpoints, m_i = Σ_{j≠i} s_ij / (n − 1), ties by input order
(:func:`~verimod.tasks.softhate.seed_selection.select_medoids_async`; the embedder — default
character n-gram TF-IDF — is fitted per group, so one group's result does not depend on
another's). The best-ranked member with P(standpoint ⊨ source) ≥ τ and P(source ⊨ standpoint)
≥ τ (τ = ``threshold``, the paper's τ_ent = 0.6) becomes the group's
:class:`~verimod.tasks.softhate.schema.Standpoint`: id ``sp-<slug of level2>`` (NFKC,
case-folded, runs of characters other than letters, digits and ``_`` replaced by ``-``),
``source_id`` = the seed's id. A failed check falls back to the next-best member; a group
where no member passes is dropped. Every check is recorded. ``entailment=None`` makes no
check: the top-ranked member is taken and its check recorded with ``passed = None``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from string import Template
from typing import Any, Final

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, Outcome, run_requests
from verimod.core.errors import InputError, did_you_mean, one_line, shown
from verimod.models.base import ChatMessage, GenerationParams, ModelBackend, ModelRequest, StructuredOutput
from verimod.resources import resource_path
from verimod.tasks.softhate.groups import GroupTaxonomy, slug
from verimod.tasks.softhate.prompts import field_schema
from verimod.tasks.softhate.schema import Gold, Language, Standpoint, TargetGroup
from verimod.tasks.softhate.scorers import NliScorer, ScoringError, hashed_key
from verimod.tasks.softhate.seed_selection import select_medoids, select_medoids_async
from verimod.tasks.softhate.seed_similarity import Embedder
from verimod.tasks.softhate.seeds import SeedItem

PROMPT_RESOURCE: Final = "softhate/standpoint_prompt.json"
FIELDS: Final = ("standpoint", "target")
UNRESOLVED: Final = "<unresolved>"
CHECK_FIELDS: Final = ("group", "item_id", "forward", "backward", "passed", "error")
#: An async NLI probability P(premise ⊨ hypothesis).
AsyncEntailment = Callable[[str, str], Awaitable[float]]

# ---------------------------------------------------------------------------------------------
# extraction


@dataclass(frozen=True)
class StandpointPrompt:
    """The bundled extraction prompt: its version and a (system, user) template per language,
    for hate seeds (``languages``: the hostile standpoint) and for non-hate control seeds
    (``claims``: the claim the text makes about a group)."""

    version: str
    languages: Mapping[str, tuple[str, str]]
    claims: Mapping[str, tuple[str, str]]

    def messages(self, text: str, language: Language = "en", polarity: Gold = "hate") -> tuple[ChatMessage, ...]:
        """The chat messages asking about ``text`` (inserted verbatim; ``$`` in it is not read)."""
        system, user = (self.languages if polarity == "hate" else self.claims)[language]
        body = Template(user).substitute(text=text)
        head = (ChatMessage(role="system", content=system),) if system else ()
        return (*head, ChatMessage(role="user", content=body))


@cache
def standpoint_prompt() -> StandpointPrompt:
    """The bundled prompt (``resources/softhate/standpoint_prompt.json``)."""
    data = json.loads(resource_path(PROMPT_RESOURCE).read_text(encoding="utf-8"))
    languages = {name: (block.get("system", ""), block["user"]) for name, block in data["languages"].items()}
    claims = {name: (block.get("system", ""), block["user"]) for name, block in data["claims"].items()}
    return StandpointPrompt(version=data["version"], languages=languages, claims=claims)


@dataclass(frozen=True)
class Extraction:
    """One seed's extraction: the standpoint and target phrase as the model wrote them (None
    when it failed), the raw output (``""`` when the request failed) and why it failed."""

    item_id: str
    source_text: str
    standpoint: str | None
    target: str | None
    raw: str
    error: str | None

    @property
    def ok(self) -> bool:
        """True when both fields were read."""
        return self.error is None and self.standpoint is not None and self.target is not None


_FENCED = re.compile(r"\A```(?:json)?[ \t]*\n(.*?)\n?[ \t]*```\Z", re.DOTALL | re.IGNORECASE)


def _parse(raw: str) -> tuple[str, str]:
    """``(standpoint, target)`` of an answer (module docstring); ValueError with the reason."""
    body = raw.strip()
    if not body:
        raise ValueError("empty output")
    fenced = _FENCED.match(body)
    if fenced is not None:
        body = fenced.group(1).strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError("no JSON object (expected a bare JSON object or one ```json block)")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg} at character {exc.pos})") from None
    values = []
    for name in FIELDS:
        if name not in obj:
            raise ValueError(f"missing field '{name}'")
        if not isinstance(obj[name], str):
            raise ValueError(f"field '{name}' is not a string: {shown(obj[name])}")
        if not obj[name].strip():
            raise ValueError(f"field '{name}' is empty")
        values.append(one_line(obj[name], limit=2000))
    return values[0], values[1]


async def extract_standpoints(
    items: Sequence[SeedItem],
    backend: ModelBackend,
    *,
    language: Language = "en",
    polarity: Gold = "hate",
    params: GenerationParams | None = None,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
) -> list[Extraction]:
    """One :class:`Extraction` per item, in input order (module docstring); ``polarity``
    ``non_hate`` asks for the claim of a non-hate control seed instead of a hostile standpoint.

    ``params`` default to temperature 0, 256 tokens, seed 0; the JSON schema of the answer is
    added as structured output unless ``params`` already carry one. Item ids must be unique
    (they are the sample ids). Never raises for a failed request or an unreadable answer.
    """
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise ValueError(f"duplicate item id {item.id!r}")
        seen.add(item.id)
    prompt = standpoint_prompt()
    structured = StructuredOutput(json_schema=field_schema(FIELDS))
    generation = GenerationParams(temperature=0.0, max_tokens=256) if params is None else params
    if generation.structured is None:
        generation = generation.model_copy(update={"structured": structured})
    requests = [
        ModelRequest(sample_id=item.id, messages=prompt.messages(item.text, language, polarity), params=generation)
        for item in items
    ]
    outcomes: dict[str, Outcome] = {}
    if requests:
        await run_requests(
            backend, requests, lambda o: outcomes.__setitem__(o.request.sample_id, o), engine, cache, prompt.version
        )
    out = []
    for item in items:
        outcome = outcomes[item.id]
        if outcome.response is None:
            error = outcome.error
            reason = f"request failed: {error.kind}: {one_line(str(error))}" if error else "request failed"
            out.append(Extraction(item.id, item.text, None, None, "", reason))
            continue
        raw = outcome.response.text or ""
        try:
            standpoint, target = _parse(raw)
        except ValueError as exc:
            out.append(Extraction(item.id, item.text, None, None, raw, str(exc)))
            continue
        out.append(Extraction(item.id, item.text, standpoint, target, raw, None))
    return out


_RECORD_FIELDS: Final = ("item_id", "source_text", "standpoint", "target", "raw", "error")


def extraction_to_record(e: Extraction) -> dict[str, Any]:
    """A JSON-ready dict with the six fields of :class:`Extraction` (one JSONL line)."""
    return {name: getattr(e, name) for name in _RECORD_FIELDS}


def _text(row: Mapping[str, Any], path: str, line: int, name: str, *, nullable: bool) -> str | None:
    value = row.get(name)
    if value is None:
        if nullable:
            return None
        raise InputError.at(path, line, name, "missing value" if name in row else "missing field")
    if not isinstance(value, str):
        raise InputError.at(path, line, name, f"expected a string, got {shown(value)}")
    return value


def extraction_from_record(row: object, path: str, line: int) -> Extraction:
    """The :class:`Extraction` of one JSONL record written by :func:`extraction_to_record`.

    ``item_id``, ``source_text`` and ``raw`` are required strings (``item_id`` non-empty);
    ``standpoint``, ``target`` and ``error`` are strings or null (absent means null). Without
    ``error`` both ``standpoint`` and ``target`` must be non-empty; with it both must be null.
    Unknown fields are refused. Problems raise a one-line
    :class:`~verimod.core.errors.InputError` naming ``path``, ``line`` and the field.
    """
    if not isinstance(row, Mapping):
        raise InputError.at(path, line, None, f"expected a JSON object, got {type(row).__name__}")
    for name in row:
        if name not in _RECORD_FIELDS:
            hint = did_you_mean(str(name), _RECORD_FIELDS)
            raise InputError.at(path, line, str(name), f"unknown field{hint}")
    item_id = _text(row, path, line, "item_id", nullable=False)
    if not item_id:
        raise InputError.at(path, line, "item_id", "must be a non-empty string")
    source_text = _text(row, path, line, "source_text", nullable=False)
    raw = _text(row, path, line, "raw", nullable=False)
    standpoint = _text(row, path, line, "standpoint", nullable=True)
    target = _text(row, path, line, "target", nullable=True)
    error = _text(row, path, line, "error", nullable=True)
    for name, value in (("standpoint", standpoint), ("target", target)):
        if error is None and not (value and value.strip()):
            raise InputError.at(path, line, name, "must be a non-empty string when 'error' is null")
        if error is not None and value is not None:
            raise InputError.at(path, line, name, "must be null when 'error' is set")
    assert item_id is not None and source_text is not None and raw is not None
    return Extraction(item_id, source_text, standpoint, target, raw, error)


# ---------------------------------------------------------------------------------------------
# per-group medoid standpoints


def entailment_from_nli(nli: NliScorer) -> AsyncEntailment:
    """``(premise, hypothesis) → P(entail)`` of an :class:`~verimod.tasks.softhate.scorers.NliScorer`.

    The call's key is ``nli/<sha256(premise NUL hypothesis)[:16]>`` — the id a
    :class:`~verimod.tasks.softhate.scorers.BackendNliScorer` gives a keyless call, so a
    ``scripted:`` file or a static table answers by it. A failed call raises
    :class:`~verimod.tasks.softhate.scorers.ScoringError`.
    """

    async def entail(premise: str, hypothesis: str) -> float:
        probs = await nli.score(premise, hypothesis, key=hashed_key("nli", premise, hypothesis))
        return probs.entail

    return entail


@dataclass(frozen=True)
class GroupSelection:
    """The outcome of :func:`select_group_standpoints`.

    ``standpoints``: one per kept group, in taxonomy order. ``members``: group name → the ids
    of every successful extraction assigned to it (before any threshold). ``dropped``: group
    name, or ``"<unresolved>"``, → the reason. ``checks``: every entailment check, in the order
    made: ``{"group", "item_id", "forward", "backward", "passed", "error"}`` with forward =
    P(standpoint ⊨ source), backward = P(source ⊨ standpoint) (None when not computed).
    """

    standpoints: list[Standpoint]
    members: dict[str, list[str]]
    dropped: dict[str, str]
    checks: list[dict[str, Any]]


def check_selection_args(min_group: int, threshold: float, item_ids: Sequence[str]) -> None:
    """ValueError for ``min_group < 1``, a threshold outside [0, 1] or a repeated item id."""
    if min_group < 1:
        raise ValueError(f"min_group must be ≥ 1, got {min_group}")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    repeated = [i for i, n in Counter(item_ids).items() if n > 1]
    if repeated:
        raise ValueError(f"duplicate item id {repeated[0]!r}")


async def select_group_standpoints(
    extractions: Sequence[Extraction],
    taxonomy: GroupTaxonomy,
    *,
    entailment: AsyncEntailment | None,
    min_group: int = 20,
    threshold: float = 0.6,
    embedder: Embedder | None = None,
) -> GroupSelection:
    """Assign extractions to groups and choose each group's medoid standpoint (module docstring).

    A :class:`~verimod.tasks.softhate.scorers.ScoringError` from ``entailment`` fails that
    check (the value is None and ``error`` holds the message; the next member is tried); other
    exceptions propagate. ``entailment=None``: no check, ``passed`` is None.
    """
    check_selection_args(min_group, threshold, [e.item_id for e in extractions])
    assigned: dict[str, list[Extraction]] = {g.name: [] for g in taxonomy.groups}
    unresolved = 0
    for e in extractions:
        if not e.ok:
            continue
        group = taxonomy.resolve(e.target)
        if group is None:
            unresolved += 1
        else:
            assigned[group.name].append(e)
    members = {name: [e.item_id for e in found] for name, found in assigned.items() if found}
    dropped: dict[str, str] = {}
    standpoints: list[Standpoint] = []
    checks: list[dict[str, Any]] = []
    for group in taxonomy.groups:
        found = assigned[group.name]
        if not found:
            continue
        if len(found) < min_group:
            dropped[group.name] = f"fewer than {min_group} items"
            continue
        chosen = await _medoid(group, found, entailment, threshold, embedder, checks)
        if chosen is None:
            dropped[group.name] = "no member passed the bidirectional entailment check"
            continue
        assert chosen.standpoint is not None
        sp_id = f"sp-{slug(group.level2)}"
        standpoints.append(Standpoint(id=sp_id, text=chosen.standpoint, target=group, source_id=chosen.item_id))
    if unresolved:
        dropped[UNRESOLVED] = f"target phrase not in the taxonomy: {unresolved} items"
    return GroupSelection(standpoints, members, dropped, checks)


async def _medoid(
    group: TargetGroup,
    found: list[Extraction],
    entailment: AsyncEntailment | None,
    threshold: float,
    embedder: Embedder | None,
    checks: list[dict[str, Any]],
) -> Extraction | None:
    """The chosen member of one group (None if none passed); appends its checks."""
    texts = [e.standpoint or "" for e in found]
    sources = [e.source_text for e in found]
    labels = [group.name] * len(found)
    if entailment is None:
        top = select_medoids(texts, sources, labels, lambda a, b: 1.0, tau=threshold, embedder=embedder, max_tries=1)
        index = top[0].chosen
        assert index is not None
        checks.append(dict(zip(CHECK_FIELDS, (group.name, found[index].item_id, None, None, None, None), strict=True)))
        return found[index]
    errors: dict[tuple[str, str], str] = {}

    async def guarded(premise: str, hypothesis: str) -> float:
        try:
            return float(await entailment(premise, hypothesis))
        except ScoringError as exc:
            errors[(premise, hypothesis)] = one_line(str(exc))
            return float("nan")

    (choice,) = await select_medoids_async(texts, sources, labels, guarded, tau=threshold, embedder=embedder)
    for check in choice.checks:
        a, b = texts[check.index], sources[check.index]
        error = errors.get((a, b)) or errors.get((b, a))
        forward = None if (a, b) in errors else check.forward
        backward = None if (b, a) in errors else check.backward
        values = (group.name, found[check.index].item_id, forward, backward, check.passed, error)
        checks.append(dict(zip(CHECK_FIELDS, values, strict=True)))
    return None if choice.chosen is None else found[choice.chosen]
