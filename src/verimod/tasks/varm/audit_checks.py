"""Deterministic rationale audit: groundedness, adequacy and coherence proxies (no model).

The VARM-Bench paper audits rationales on three dimensions: **Groundedness** (no claim
unsupported by the source text), **Adequacy** (a sample-specific justification, not a
restatement of the anchor values) and **Coherence** (consistent within itself and with the
parsed record). These checks are cheap proxies, run before any judge; each returns a
:class:`CheckResult` — ``pass``, ``fail`` or ``n/a`` (nothing to check) — with the evidence
spans (code-point offsets into the rationale) that decided it. A dimension fails when any of its
checks fails, passes when at least one passed and none failed, and is ``n/a`` otherwise
(:func:`dimension_verdicts`).

Text comparison (:func:`comparable`): NFKC, case folding, and only letters and digits kept
(punctuation, spaces and symbols removed), so "一身肥肉" matches "一身  肥肉！". The *input* is the
comment and its context together.

Groundedness

- ``quoted_spans``: every quoted span of the rationale — “…”, "…", 「…」, 『…』, ‘…’, at least
  two comparable characters — is found in the input: its comparable characters occur in order
  within a stretch of the input at most twice the quote's length plus 4 characters, covering
  at least ``quote_coverage`` (0.8) of them (:func:`quote_coverage`; an exact substring covers
  1.0, a lightly shortened paraphrase such as “占地方” for "占那么大地方" also passes). An ellipsis
  (… or ...) inside a quote splits it into pieces checked one by one. A quotation right after a
  mention marker (代替, 谐音, 暗指, 称作, … in ``resources/audit_boilerplate.json``; within 8
  characters before it in the same clause) names a word rather than citing the input and is
  not checked. All unfound quotations are evidence.
- ``cited_abuse_terms``: abusive terms of the ``general_abuse`` cue lexicon that the rationale
  writes outside its anchors and quotes occur in the input. (Identity, status and body terms are
  left out: a rationale uses them as its own descriptive words.)
- ``target_grounded``: the target anchor's value occurs in the input — unless the record says
  the target is implicit or there is no clear target (then ``n/a``).

Adequacy

- ``content_share``: of the rationale's comparable characters, the share outside anchors,
  quotes and boilerplate phrases (``resources/audit_boilerplate.json``) is at least
  ``min_content_share`` (0.25). A rationale that only strings anchors together with stock
  phrases fails.
- ``input_engagement``: besides the target, the rationale shares at least ``min_shared_bigrams``
  (2) distinct character bigrams with the input (quotes included: quoting is engagement).
- ``near_identical`` (across items, :func:`near_identical_groups`): the rationale, with its anchors
  and target masked, is not near-identical (RapidFuzz ``ratio`` ≥ ``near_identical`` 92) to that
  of an item with a different input. Evidence names the other items.

Coherence

- ``anchor_contradiction``: no phrase that negates an anchor's value stands in the same clause
  before it, within ``window`` (30) characters — e.g. "并非攻击" before ``[S: attack_or_endorse]``,
  "无害" before ``[L: harmful]``, "有害" before ``[L: non_harmful]`` (phrase lists in
  ``resources/audit_boilerplate.json``). A clause ends at 。！？；and at a contrast (但, 然而,
  不过, 可是, 却, 而是, but, however): "看似无害，但…[L: harmful]" is coherent. A phrase with a
  negator (不 非 没 无 未 别) in the four characters before it does not count ("不是有害" before
  ``[L: non_harmful]``). Evidence: the phrase and the anchor.
- ``record_consistent``: the parsed record satisfies the codebook constraints (the parser's
  violations, e.g. a non-harmful label with a harmful category). Evidence: the anchors.

An output that does not parse gets ``n/a`` on every check that needs anchors and ``fail`` on
``record_consistent`` (there is no consistent record).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Final, Literal

from verimod.resources import resource_path
from verimod.tasks.varm.cue_lexicons import CueMatcher, default_lexicons
from verimod.tasks.varm.parser import ParseResult, parse_rationale

Dimension = Literal["groundedness", "adequacy", "coherence"]
Verdict = Literal["pass", "fail", "n/a"]
DIMENSIONS: Final[tuple[Dimension, ...]] = ("groundedness", "adequacy", "coherence")

_QUOTES: Final = re.compile(r"“([^”]{1,300})”|\"([^\"]{1,300})\"|「([^」]{1,300})」|『([^』]{1,300})』|‘([^’]{1,300})’")
_ELLIPSIS: Final = re.compile(r"…+|\.{3,}")
_CLAUSE_END: Final = re.compile(r"[。！？；!?;]|但是|但|然而|不过|可是|却|而是|\bbut\b|\bhowever\b", re.IGNORECASE)
_NEGATORS: Final = "不非没无未别"


@dataclass(frozen=True)
class Evidence:
    """A span of the rationale (code points) and its text."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict on one rationale."""

    check: str
    dimension: Dimension
    verdict: Verdict
    detail: str = ""
    evidence: tuple[Evidence, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "check": self.check,
            "dimension": self.dimension,
            "verdict": self.verdict,
            "detail": self.detail,
            "evidence": [{"start": e.start, "end": e.end, "text": e.text} for e in self.evidence],
        }


@dataclass(frozen=True)
class AuditItem:
    """What is audited: an item's input (comment and context) and one rationale."""

    id: str
    text: str
    rationale: str | None
    context: str | None = None
    system: str | None = None  # who wrote the rationale (kept from judges, shown in reports)


@dataclass(frozen=True)
class AuditThresholds:
    """The proxies' thresholds (module docstring)."""

    quote_coverage: float = 0.8
    min_content_share: float = 0.25
    min_shared_bigrams: int = 2
    near_identical: float = 92.0
    window: int = 30


@dataclass
class ItemAudit:
    """Every check of one item, and the dimension verdicts they give."""

    item: AuditItem
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def verdicts(self) -> dict[str, Verdict]:
        """Dimension → verdict (module docstring)."""
        return dimension_verdicts(self.checks)


def comparable(text: str) -> str:
    """NFKC, case-folded, letters and digits only."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LN")


@cache
def _phrases() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resource_path("audit_boilerplate.json").read_text(encoding="utf-8"))
    return data


@cache
def _abuse_matcher() -> CueMatcher:
    return CueMatcher([lex for lex in default_lexicons() if lex.family == "general_abuse"])


def _quotes(rationale: str) -> list[tuple[int, int, str]]:
    """(start, end, inner text) of every quoted span."""
    out = []
    for match in _QUOTES.finditer(rationale):
        group = next(g for g in range(1, 6) if match.group(g) is not None)
        out.append((match.start(), match.end(), match.group(group)))
    return out


def _masked(rationale: str, spans: Sequence[tuple[int, int]]) -> str:
    """The rationale with ``spans`` replaced by spaces (offsets kept)."""
    chars = list(rationale)
    for start, end in spans:
        for k in range(start, end):
            chars[k] = " "
    return "".join(chars)


def _bigrams(text: str) -> set[str]:
    return {text[k : k + 2] for k in range(len(text) - 1)}


def quote_coverage(quote: str, source: str) -> float:
    """The largest share of ``quote``'s characters that occur in order (a common subsequence)
    within one stretch of ``source`` of length ≤ 2·len(quote) + 4; both comparable text. 1.0
    for a substring, 0.0 for an empty quote."""
    if not quote:
        return 0.0
    if quote in source:
        return 1.0
    width = 2 * len(quote) + 4
    best = 0
    for start in range(len(source)):
        if source[start] not in quote:
            continue
        window = source[start : start + width]
        # longest common subsequence of quote and window (quote is short: O(len · width))
        previous = [0] * (len(window) + 1)
        for ch in quote:
            current = [0]
            for k, other in enumerate(window):
                current.append(previous[k] + 1 if ch == other else max(previous[k + 1], current[k]))
            previous = current
        best = max(best, previous[-1])
        if best == len(quote):
            break
    return best / len(quote)


def _is_mention(rationale: str, start: int) -> bool:
    """A mention marker within 8 characters before ``start``, in the same clause."""
    before = _CLAUSE_END.split(rationale[max(0, start - 8) : start])[-1]
    return any(marker in before for marker in _phrases()["mention_markers"])


def check_quoted_spans(rationale: str, source: str, minimum: float = 0.8) -> CheckResult:
    """``quoted_spans`` (module docstring)."""
    quotes = [(s, e, q) for s, e, q in _quotes(rationale) if len(comparable(q)) >= 2]
    mentions = [q for q in quotes if _is_mention(rationale, q[0])]
    cited = [q for q in quotes if q not in mentions]
    if not cited:
        detail = f"{len(mentions)} quoted mention(s), no citation" if mentions else "no quotation"
        return CheckResult("quoted_spans", "groundedness", "n/a", detail)
    missing = [
        Evidence(s, e, rationale[s:e])
        for s, e, q in cited
        if any(piece and quote_coverage(piece, source) < minimum for piece in map(comparable, _ELLIPSIS.split(q)))
    ]
    quotes = cited
    if missing:
        return CheckResult(
            "quoted_spans", "groundedness", "fail", f"{len(missing)} of {len(quotes)} quotation(s) not in the input",
            tuple(missing),
        )  # fmt: skip
    return CheckResult("quoted_spans", "groundedness", "pass", f"{len(quotes)} quotation(s) found in the input")


def _per_char_normalised(text: str) -> tuple[str, list[int]]:
    """NFKC + case folding character by character, and the original offset of each output
    character (so spans found in the normalised text map back to the rationale)."""
    out: list[str] = []
    origin: list[int] = []
    for k, ch in enumerate(text):
        piece = unicodedata.normalize("NFKC", ch).casefold()
        out.append(piece)
        origin.extend([k] * len(piece))
    origin.append(len(text))
    return "".join(out), origin


def check_cited_abuse_terms(rationale: str, source: str, covered: Sequence[tuple[int, int]]) -> CheckResult:
    """``cited_abuse_terms`` (module docstring); ``covered`` are anchor and quote spans."""
    normalised, origin = _per_char_normalised(_masked(rationale, covered))
    found = _abuse_matcher().find(normalised)
    if not found:
        return CheckResult("cited_abuse_terms", "groundedness", "n/a", "no abusive term outside anchors and quotes")
    spans = [(origin[m.start], origin[m.end - 1] + 1, m.term) for m in found]
    missing = [
        Evidence(start, end, rationale[start:end]) for start, end, term in spans if comparable(term) not in source
    ]
    if missing:
        terms = "、".join(dict.fromkeys(e.text for e in missing))
        return CheckResult("cited_abuse_terms", "groundedness", "fail", f"not in the input: {terms}", tuple(missing))
    return CheckResult("cited_abuse_terms", "groundedness", "pass", f"{len(found)} abusive term(s), all in the input")


def check_target_grounded(parsed: ParseResult, source: str) -> CheckResult:
    """``target_grounded`` (module docstring)."""
    if not parsed.ok or parsed.values is None:
        return CheckResult("target_grounded", "groundedness", "n/a", "the output did not parse")
    target, _, explicitness = parsed.values[:3]
    anchor = parsed.anchors[0]
    if explicitness != "explicit":
        return CheckResult("target_grounded", "groundedness", "n/a", f"target explicitness is {explicitness}")
    evidence = (Evidence(anchor.start, anchor.end, anchor.raw_value),)
    if comparable(target) and comparable(target) in source:
        return CheckResult(
            "target_grounded", "groundedness", "pass", "the explicit target occurs in the input", evidence
        )
    return CheckResult("target_grounded", "groundedness", "fail", "the explicit target is not in the input", evidence)


def check_content_share(rationale: str, covered: Sequence[tuple[int, int]], minimum: float) -> CheckResult:
    """``content_share`` (module docstring); ``covered`` are anchor and quote spans."""
    total = len(comparable(rationale))
    if total == 0:
        return CheckResult("content_share", "adequacy", "n/a", "empty rationale")
    rest = _masked(rationale, covered)
    for phrase in _phrases()["boilerplate"]:
        rest = rest.replace(phrase, " " * len(phrase))
    share = len(comparable(rest)) / total
    verdict: Verdict = "pass" if share >= minimum else "fail"
    return CheckResult("content_share", "adequacy", verdict, f"{share:.2f} of the rationale is its own content")


def check_input_engagement(rationale: str, source: str, target: str | None, minimum: int) -> CheckResult:
    """``input_engagement`` (module docstring)."""
    own = comparable(rationale)
    text = source
    if target and comparable(target):
        own = own.replace(comparable(target), " ")
        text = text.replace(comparable(target), " ")
    shared = {g for g in _bigrams(own) & _bigrams(text) if " " not in g}
    verdict: Verdict = "pass" if len(shared) >= minimum else "fail"
    return CheckResult("input_engagement", "adequacy", verdict, f"{len(shared)} input bigram(s) beyond the target")


def check_anchor_contradiction(rationale: str, parsed: ParseResult, window: int) -> CheckResult:
    """``anchor_contradiction`` (module docstring)."""
    if not parsed.ok:
        return CheckResult("anchor_contradiction", "coherence", "n/a", "the output did not parse")
    negations: dict[str, dict[str, list[str]]] = _phrases()["contradictions"]
    found: list[Evidence] = []
    details = []
    for anchor in parsed.anchors:
        phrases = negations.get(anchor.field, {}).get(anchor.value or "", [])
        if not phrases:
            continue
        left = max(0, anchor.start - window)
        clause = _CLAUSE_END.split(rationale[left : anchor.start])[-1]
        offset = anchor.start - len(clause)
        for phrase in phrases:
            at = clause.rfind(phrase)
            if at >= 0 and not any(ch in _NEGATORS for ch in clause[max(0, at - 4) : at]):
                found += [Evidence(offset + at, offset + at + len(phrase), phrase),
                          Evidence(anchor.start, anchor.end, rationale[anchor.start : anchor.end])]  # fmt: skip
                details.append(f"“{phrase}” before {rationale[anchor.start : anchor.end]}")
                break
    if found:
        return CheckResult("anchor_contradiction", "coherence", "fail", "; ".join(details), tuple(found))
    return CheckResult("anchor_contradiction", "coherence", "pass", "no negating phrase before an anchor")


def check_record_consistent(parsed: ParseResult) -> CheckResult:
    """``record_consistent`` (module docstring)."""
    if not parsed.ok:
        return CheckResult("record_consistent", "coherence", "fail", f"no record: {parsed.error_class}")
    if parsed.violations:
        evidence = tuple(Evidence(a.start, a.end, a.raw_value) for a in parsed.anchors)
        return CheckResult("record_consistent", "coherence", "fail", "; ".join(parsed.violations), evidence)
    return CheckResult("record_consistent", "coherence", "pass", "the record satisfies the codebook")


def audit_item(item: AuditItem, thresholds: AuditThresholds | None = None) -> ItemAudit:
    """Every single-item check of one rationale (``near_identical`` needs the whole set: see
    :func:`audit_items`)."""
    limits = thresholds or AuditThresholds()
    rationale = item.rationale or ""
    source = comparable(item.text + "\n" + (item.context or ""))
    parsed = parse_rationale(rationale)
    anchors = [(a.start, a.end) for a in parsed.anchors]
    quotes = [(s, e) for s, e, _ in _quotes(rationale)]
    target = parsed.values[0] if parsed.values is not None else None
    if not rationale.strip():
        empty = [CheckResult(name, dim, "fail", "empty output") for name, dim in _SINGLE_CHECKS]
        return ItemAudit(item, empty)
    checks = [
        check_quoted_spans(rationale, source, limits.quote_coverage),
        check_cited_abuse_terms(rationale, source, anchors + quotes),
        check_target_grounded(parsed, source),
        check_content_share(rationale, anchors + quotes, limits.min_content_share),
        check_input_engagement(_masked(rationale, anchors), source, target, limits.min_shared_bigrams),
        check_anchor_contradiction(rationale, parsed, limits.window),
        check_record_consistent(parsed),
    ]
    return ItemAudit(item, checks)


_SINGLE_CHECKS: Final[tuple[tuple[str, Dimension], ...]] = (
    ("quoted_spans", "groundedness"),
    ("cited_abuse_terms", "groundedness"),
    ("target_grounded", "groundedness"),
    ("content_share", "adequacy"),
    ("input_engagement", "adequacy"),
    ("anchor_contradiction", "coherence"),
    ("record_consistent", "coherence"),
)


def masked_for_comparison(rationale: str) -> str:
    """The rationale with anchors replaced by their tag and the target masked: what stays when
    two rationales differ only in their anchor values."""
    parsed = parse_rationale(rationale)
    out = rationale
    target = parsed.values[0] if parsed.values is not None else None
    for anchor in reversed(parsed.anchors):
        out = out[: anchor.start] + f"[{anchor.tag}]" + out[anchor.end :]
    if target:
        out = out.replace(target, "〇")
    return out


def near_identical_groups(items: Sequence[AuditItem], threshold: float) -> dict[str, list[str]]:
    """Item id → ids of items with a *different input* whose masked rationale is near-identical
    (RapidFuzz ``ratio`` ≥ ``threshold``); exact join through :mod:`verimod.data.neardup`."""
    from verimod.data.neardup import near_duplicate_pairs

    present = [i for i in items if (i.rationale or "").strip()]
    texts = [masked_for_comparison(i.rationale or "") for i in present]
    out: dict[str, list[str]] = {}
    for a, b, _ in near_duplicate_pairs(texts, threshold):
        first, second = present[a], present[b]
        if comparable(first.text) == comparable(second.text):
            continue
        out.setdefault(first.id, []).append(second.id)
        out.setdefault(second.id, []).append(first.id)
    return out


def audit_items(items: Sequence[AuditItem], thresholds: AuditThresholds | None = None) -> list[ItemAudit]:
    """:func:`audit_item` for each item, plus ``near_identical`` across them."""
    limits = thresholds or AuditThresholds()
    groups = near_identical_groups(items, limits.near_identical)
    audits = []
    for item in items:
        audit = audit_item(item, limits)
        others = groups.get(item.id)
        if not (item.rationale or "").strip():
            audit.checks.append(CheckResult("near_identical", "adequacy", "n/a", "empty output"))
        elif others:
            detail = f"near-identical to the rationale of {len(others)} other input(s): {', '.join(others[:5])}"
            audit.checks.append(CheckResult("near_identical", "adequacy", "fail", detail))
        else:
            audit.checks.append(CheckResult("near_identical", "adequacy", "pass", "no near-identical rationale"))
        audits.append(audit)
    return audits


def dimension_verdicts(checks: Sequence[CheckResult]) -> dict[str, Verdict]:
    """Per dimension: ``fail`` if any check failed, ``pass`` if one passed, else ``n/a``."""
    out: dict[str, Verdict] = {}
    for dimension in DIMENSIONS:
        own = [c.verdict for c in checks if c.dimension == dimension]
        out[dimension] = "fail" if "fail" in own else "pass" if "pass" in own else "n/a"
    return out
