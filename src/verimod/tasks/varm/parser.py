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
from typing import Any, Final, NamedTuple

from verimod.tasks.varm.aliases import canonical_value
from verimod.tasks.varm.codebook import CANONICAL_TAGS, FIELDS, VOCABULARY, codebook_violations_of
from verimod.tasks.varm.schema import VarmRecord

PARSER_VERSION: Final = "varm-anchor-parser/1"

# One anchor candidate: opener, tag letters, colon, value (no bracket of either kind), closer.
# Every quantifier ranges over a character class disjoint from what follows it, and the value
# scan stops at the next bracket, so the scan over a text is linear.
_ANCHOR_RE: Final = re.compile(r"[\[【［][ \t\u3000]*([A-Za-z]+)[ \t\u3000]*([:：])([^\[\]【】［］]*)([\]】］])")

_SLOT_NAMES: Final = ("T (target)", "TY", "T (explicitness)", "S", "L", "C")
_ONE_EACH: Final = [1, 1, 1, 1, 1, 1]
# Slot (1–5) → {exact canonical anchor text: value}: one lookup recognises a canonical anchor.
_CANONICAL_ANCHORS: Final = tuple(
    {f"[{CANONICAL_TAGS[field]}: {v}]": v for v in VOCABULARY[field]} if field in VOCABULARY else {} for field in FIELDS
)


class ParseErrorClass(StrEnum):
    """Why an output did not parse."""

    EMPTY_OUTPUT = "empty_output"
    DUPLICATE_ANCHOR = "duplicate_anchor"
    MISSING_ANCHOR = "missing_anchor"
    ANCHOR_ORDER = "anchor_order"
    INVALID_VALUE = "invalid_value"


class Anchor(NamedTuple):
    """One recognised anchor: which field it fills, what was written and where.

    ``start``/``end`` span the whole anchor (brackets included) in code points; ``value`` is
    the canonical value, or None when the written value is not admissible.
    """

    field: str
    tag: str
    raw_value: str
    value: str | None
    start: int
    end: int
    canonical: bool


class ParseResult:
    """Outcome of parsing one rationale; see the module docstring for the contract.

    ``values`` holds the six canonical field values in :data:`FIELDS` order when the parse
    succeeded (None otherwise); :attr:`record` is the same as a :class:`VarmRecord`.
    ``anchors`` lists the six anchors with their spans (empty when an anchor is missing or
    duplicated); it is built on first access.
    """

    __slots__ = ("_anchors", "_matches", "detail", "error_class", "flags", "format_ok", "values", "violations")
    parser_version: Final = PARSER_VERSION

    def __init__(
        self,
        values: tuple[str, ...] | None,
        error_class: ParseErrorClass | None,
        detail: str | None,
        matches: list[re.Match[str]] | None,
        format_ok: bool,
        flags: tuple[str, ...],
        violations: tuple[str, ...],
    ) -> None:
        self.values = values
        self.error_class = error_class
        self.detail = detail
        self._matches = matches
        self._anchors: tuple[Anchor, ...] | None = None
        self.format_ok = format_ok
        self.flags = flags
        self.violations = violations

    def __repr__(self) -> str:
        return f"ParseResult(values={self.values!r}, error_class={self.error_class!r}, format_ok={self.format_ok})"

    @property
    def anchors(self) -> tuple[Anchor, ...]:
        """The six anchors in field order, with spans, written values and canonical values."""
        if self._anchors is None:
            self._anchors = () if self._matches is None else tuple(map(_anchor, FIELDS, self._matches))
        return self._anchors

    @property
    def ok(self) -> bool:
        """True when the six-field record was recovered."""
        return self.values is not None

    @property
    def record(self) -> VarmRecord | None:
        """The recovered record, or None when the output did not parse."""
        if self.values is None:
            return None
        fields: dict[str, Any] = dict(zip(FIELDS, self.values, strict=True))
        return VarmRecord.model_construct(None, **fields)

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
            "anchors": [a._asdict() for a in self.anchors],
            "parser_version": self.parser_version,
        }


def _anchor(field: str, match: re.Match[str]) -> Anchor:
    tag, _colon, raw, _close = match.groups()
    value = canonical_value(field, raw)
    canonical = value is not None and match.group(0) == f"[{CANONICAL_TAGS[field]}: {value}]"
    return Anchor(field, tag, raw, value, match.start(), match.end(), canonical)


def _failure(error: ParseErrorClass, detail: str, matches: list[re.Match[str]] | None = None) -> ParseResult:
    return ParseResult(None, error, detail, matches, False, (), ())


def _flags_of(matches: list[re.Match[str]], anchors: tuple[Anchor, ...]) -> tuple[str, ...]:
    """Which lenient forms the anchors use (empty when every anchor is canonical)."""
    flags: set[str] = set()
    for match, anchor in zip(matches, anchors, strict=True):
        if anchor.canonical:
            continue
        whole = match.group(0)
        if whole[0] != "[" or whole[-1] != "]":
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
        if anchor.raw_value != " " + written or whole[1] != anchor.tag[0] or whole[-2] == " ":
            flags.add("spacing")
    return tuple(sorted(flags))


# Tag (as written, or upper-cased) → bucket: 0 T, 1 TY, 3 S, 4 L, 5 C, 6 TE/E (explicitness).
_TAG_BUCKET: Final = {"T": 0, "TY": 1, "S": 3, "L": 4, "C": 5, "TE": 6, "E": 6}


def _slots(text: str) -> list[list[re.Match[str]]] | None:
    """Recognised anchors grouped by slot (0–5 in FIELDS order); None when there are none.

    ``T`` anchors fill the target slot, and the explicitness slot too (second and later ``T``)
    unless a ``TE``/``E`` anchor is present.
    """
    buckets: list[list[re.Match[str]]] = [[], [], [], [], [], [], []]
    found = False
    for match in _ANCHOR_RE.finditer(text):
        tag = match.group(1)
        index = _TAG_BUCKET.get(tag)
        if index is None:
            index = _TAG_BUCKET.get(tag.upper())
            if index is None:
                continue
        buckets[index].append(match)
        found = True
    if not found:
        return None
    explicit = buckets.pop()
    if explicit:
        buckets[2] = explicit
    else:
        targets = buckets[0]
        buckets[0], buckets[2] = targets[:1], targets[1:]
    return buckets


def parse_rationale(text: str) -> ParseResult:
    """Parse one model output into a VARM record (see the module docstring)."""
    if not isinstance(text, str) or not text or text.isspace():
        return _failure(ParseErrorClass.EMPTY_OUTPUT, "the output is empty")
    slots = _slots(text)
    if slots is None:
        return _failure(ParseErrorClass.MISSING_ANCHOR, "no anchors found")
    if [len(slot) for slot in slots] != _ONE_EACH:
        duplicated = [i for i, slot in enumerate(slots) if len(slot) > 1]
        if duplicated:
            names = ", ".join(f"{_SLOT_NAMES[i]} ×{len(slots[i])}" for i in duplicated)
            return _failure(ParseErrorClass.DUPLICATE_ANCHOR, f"anchor written more than once: {names}")
        names = ", ".join(_SLOT_NAMES[i] for i, slot in enumerate(slots) if not slot)
        return _failure(ParseErrorClass.MISSING_ANCHOR, f"missing anchor: {names}")

    matches = [slot[0] for slot in slots]
    starts = [m.start() for m in matches]
    for i in range(5):
        if starts[i + 1] < starts[i]:
            return _failure(
                ParseErrorClass.ANCHOR_ORDER, f"{_SLOT_NAMES[i + 1]} comes before {_SLOT_NAMES[i]}", matches
            )

    # Fast path: canonical anchors are recognised by one dictionary lookup each.
    target_match = matches[0]
    raw_target = target_match.group(3)
    target = canonical_value("target", raw_target)
    canonical = target is not None and target_match.group(0) == f"[T: {target}]"
    values: list[str | None] = [target]
    for i in range(1, 6):
        match = matches[i]
        value = _CANONICAL_ANCHORS[i].get(match.group(0))
        if value is None:
            canonical = False
            value = canonical_value(FIELDS[i], match.group(3))
        values.append(value)
    if None in values:
        i = values.index(None)
        written = matches[i].group(3).strip()[:40]
        return _failure(ParseErrorClass.INVALID_VALUE, f"{_SLOT_NAMES[i]} value {written!r} is not admissible", matches)

    record = tuple(values)
    violations = codebook_violations_of(record)  # type: ignore[arg-type]
    result = ParseResult(record, None, None, matches, canonical and not violations, (), violations)  # type: ignore[arg-type]
    if not canonical:
        result.flags = _flags_of(matches, result.anchors)
    return result
