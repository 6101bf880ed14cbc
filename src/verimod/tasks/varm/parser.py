"""The VARM anchor parser: rationale text → six-field record, deterministically.

Contract of :func:`parse_rationale`:

- An *anchor* is ``[TAG: value]``. Brackets may be ASCII ``[ ]`` or full-width ``【 】 ［ ］``
  (mixed is accepted), the colon ASCII ``:`` or full-width ``：``, with any spacing; tags are
  case-insensitive. Recognised tags: ``T`` (target, then explicitness), ``TY`` (target type),
  ``TE`` and ``E`` (aliases of the explicitness tag), ``S`` (stance), ``L`` (label),
  ``C`` (category). Bracketed text without one of these tags and a colon — an emoticon such
  as ``[机智]`` quoted from the input, ``[Note: …]`` — is ignored.
- ``T`` tags: when a ``TE``/``E`` anchor is present every ``T`` is a target anchor; otherwise
  the first ``T`` is the target and the second the explicitness.
- Parse succeeds when each of the six anchors occurs exactly once, in the fixed order, with an
  admissible value (canonical or an alias from ``resources/varm_aliases.json``).
- Failures have one error class, checked in this precedence: ``empty_output`` (blank text),
  ``duplicate_anchor``, ``missing_anchor`` (no anchors at all included), ``anchor_order``,
  ``invalid_value``. ``detail`` says which anchor.
- Format (strict validity) holds when parse succeeds, every anchor is written exactly
  ``[TAG: value]`` (ASCII brackets and colon, one space, tags T/TY/T/S/L/C, canonical values)
  and the record satisfies the codebook constraints.
- Linear time in the length of the text; never raises on any ``str`` (lone surrogates,
  control characters, bidirectional marks, megabytes of brackets). Spans are code-point
  offsets into the original text.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Final, NamedTuple

from verimod.tasks.varm.aliases import canonical_value
from verimod.tasks.varm.codebook import CANONICAL_TAGS, FIELDS, codebook_violations_of
from verimod.tasks.varm.schema import VarmRecord

PARSER_VERSION: Final = "varm-anchor-parser/1"

_OPEN: Final = "[【［"
_CLOSE: Final = "]】］"
# One anchor candidate: opener, tag letters, colon, value (no bracket of either kind), closer.
# Every quantifier ranges over a character class disjoint from what follows it, and the value
# scan stops at the next bracket, so the scan over a text is linear.
_ANCHOR_RE: Final = re.compile(
    r"[\[【［][ \t\u3000]*([A-Za-z]+)[ \t\u3000]*([:：])([^\[\]【】［］]*)([\]】］])"
)

# Tag (upper-cased) → slot kind. "T" is resolved to target or explicitness by position.
_TAG_KIND: Final = {"T": "T", "TY": "TY", "TE": "E", "E": "E", "S": "S", "L": "L", "C": "C"}
_KIND_SLOT: Final = {"TY": 1, "E": 2, "S": 3, "L": 4, "C": 5}
_SLOT_NAMES: Final = ("T (target)", "TY", "T (explicitness)", "S", "L", "C")
_CANONICAL_TAG_LIST: Final = tuple(CANONICAL_TAGS[f] for f in FIELDS)


class ParseErrorClass(StrEnum):
    """Why an output did not parse."""

    EMPTY_OUTPUT = "empty_output"
    DUPLICATE_ANCHOR = "duplicate_anchor"
    MISSING_ANCHOR = "missing_anchor"
    ANCHOR_ORDER = "anchor_order"
    INVALID_VALUE = "invalid_value"


class Anchor(NamedTuple):
    """One recognised anchor: which field it fills, what was written and where.

    ``start``/``end`` span the whole anchor (brackets included); ``value`` is the canonical
    value, or None when the written value is not admissible.
    """

    field: str
    tag: str
    raw_value: str
    value: str | None
    start: int
    end: int
    canonical: bool


class ParseResult(NamedTuple):
    """Outcome of parsing one rationale; see the module docstring for the contract.

    ``values`` holds the six canonical field values in :data:`FIELDS` order when the parse
    succeeded (None otherwise); :attr:`record` is the same as a :class:`VarmRecord`.
    """

    values: tuple[str, str, str, str, str, str] | None
    error_class: ParseErrorClass | None
    detail: str | None
    anchors: tuple[Anchor, ...]
    format_ok: bool
    flags: tuple[str, ...]
    violations: tuple[str, ...]
    parser_version: str = PARSER_VERSION

    @property
    def ok(self) -> bool:
        """True when the six-field record was recovered."""
        return self.values is not None

    @property
    def record(self) -> VarmRecord | None:
        """The recovered record, or None when the output did not parse."""
        if self.values is None:
            return None
        return VarmRecord.model_construct(**dict(zip(FIELDS, self.values, strict=True)))

    @property
    def status(self) -> str:
        """``"ok"`` or ``"parse_error"``."""
        return "ok" if self.values is not None else "parse_error"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready view (record, status, error class, anchors with spans, flags)."""
        return {
            "status": self.status,
            "error_class": None if self.error_class is None else str(self.error_class),
            "detail": self.detail,
            "record": None if self.values is None else dict(zip(FIELDS, self.values, strict=True)),
            "format_ok": self.format_ok,
            "flags": list(self.flags),
            "violations": list(self.violations),
            "anchors": [
                {
                    "field": a.field,
                    "tag": a.tag,
                    "value": a.value,
                    "raw_value": a.raw_value,
                    "start": a.start,
                    "end": a.end,
                    "canonical": a.canonical,
                }
                for a in self.anchors
            ],
            "parser_version": self.parser_version,
        }


def _failure(error: ParseErrorClass, detail: str, anchors: tuple[Anchor, ...] = ()) -> ParseResult:
    return ParseResult(None, error, detail, anchors, False, (), ())


def _flags_of(text: str, matches: list[re.Match[str]], anchors: list[Anchor]) -> tuple[str, ...]:
    """Which lenient forms the anchors use (empty when every anchor is canonical)."""
    flags: set[str] = set()
    for match, anchor in zip(matches, anchors, strict=True):
        if anchor.canonical:
            continue
        if text[match.start()] != "[" or match.group(4) != "]":
            flags.add("fullwidth_bracket")
        if match.group(2) != ":":
            flags.add("fullwidth_colon")
        upper = anchor.tag.upper()
        if upper in ("TE", "E"):
            flags.add("tag_alias")
        elif anchor.tag != upper:
            flags.add("tag_case")
        written = anchor.raw_value.strip()
        if anchor.value is not None and written != anchor.value:
            flags.add("value_alias")
        if (
            anchor.raw_value != " " + written
            or match.group(0)[1] != anchor.tag[0]
            or match.group(0)[-2] == " "
        ):
            flags.add("spacing")
    return tuple(sorted(flags))


def _slot_matches(text: str) -> list[list[re.Match[str]]] | None:
    """Recognised anchors grouped by slot (0–5 in FIELDS order); None when there are none."""
    found = [
        (kind, match)
        for match in _ANCHOR_RE.finditer(text)
        if (kind := _TAG_KIND.get(match.group(1)) or _TAG_KIND.get(match.group(1).upper())) is not None
    ]
    if not found:
        return None
    explicit_tag_present = any(kind == "E" for kind, _ in found)
    slots: list[list[re.Match[str]]] = [[], [], [], [], [], []]
    seen_t = 0
    for kind, match in found:
        if kind == "T":
            slots[0 if explicit_tag_present or seen_t == 0 else 2].append(match)
            seen_t += 1
        else:
            slots[_KIND_SLOT[kind]].append(match)
    return slots


def parse_rationale(text: str) -> ParseResult:
    """Parse one model output into a VARM record (see the module docstring)."""
    if not isinstance(text, str) or not text.strip():
        return _failure(ParseErrorClass.EMPTY_OUTPUT, "the output is empty")
    slots = _slot_matches(text)
    if slots is None:
        return _failure(ParseErrorClass.MISSING_ANCHOR, "no anchors found")
    if any(len(s) != 1 for s in slots):
        duplicated = [i for i, s in enumerate(slots) if len(s) > 1]
        if duplicated:
            names = ", ".join(f"{_SLOT_NAMES[i]} ×{len(slots[i])}" for i in duplicated)
            return _failure(ParseErrorClass.DUPLICATE_ANCHOR, f"anchor written more than once: {names}")
        names = ", ".join(_SLOT_NAMES[i] for i, s in enumerate(slots) if not s)
        return _failure(ParseErrorClass.MISSING_ANCHOR, f"missing anchor: {names}")

    matches = [s[0] for s in slots]
    anchors: list[Anchor] = []
    for field, canonical_tag, match in zip(FIELDS, _CANONICAL_TAG_LIST, matches, strict=True):
        tag, _colon, raw, _close = match.groups()
        value = canonical_value(field, raw)
        start, end = match.span()
        canonical = value is not None and match.group(0) == f"[{canonical_tag}: {value}]"
        anchors.append(Anchor(field, tag, raw, value, start, end, canonical))
    frozen = tuple(anchors)

    for i in range(5):
        if anchors[i + 1].start < anchors[i].start:
            return _failure(
                ParseErrorClass.ANCHOR_ORDER, f"{_SLOT_NAMES[i + 1]} comes before {_SLOT_NAMES[i]}", frozen
            )
    for i, anchor in enumerate(anchors):
        if anchor.value is None:
            written = anchor.raw_value.strip()[:40]
            return _failure(
                ParseErrorClass.INVALID_VALUE, f"{_SLOT_NAMES[i]} value {written!r} is not admissible", frozen
            )

    values = tuple(a.value for a in anchors)
    violations = codebook_violations_of(values)  # type: ignore[arg-type]
    all_canonical = all(a.canonical for a in anchors)
    flags = () if all_canonical else _flags_of(text, matches, anchors)
    return ParseResult(values, None, None, frozen, all_canonical and not violations, flags, violations)  # type: ignore[arg-type]
