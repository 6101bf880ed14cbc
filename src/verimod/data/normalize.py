"""Text normalisation for building Chinese moderation data sets.

:func:`normalize_text` runs the text rules over one text; :func:`normalize_records` (or a
:class:`Normalizer`, one record at a time) also applies the record filters and counts
everything in a :class:`NormalizeReport`: nothing is changed or dropped without being counted,
and ``records_in == records_out + sum(removed.values())`` is checked at the end.

Text rules, in this fixed order (``RULE_ORDER``; each can be switched off in
:class:`NormalizeConfig`):

0. ``escapes`` — backslash escapes written out as text by a double encoding (``\\r\\n``,
   ``\\"``, ``\\u3000``: 96 of the 37,480 COLD comments) decoded.
1. ``html`` — entities ending in ``;`` unescaped until none is left (``&amp;lt;`` → ``<``);
   tags of known HTML elements, comments and script/style elements removed.
2. ``controls`` — zero-width, bidi, BOM, soft hyphen and C0/C1 control characters removed (a
   ZWJ inside an emoji sequence stays); tab and line breaks → spaces (``keep_newlines``: ``\\n``).
   Done before any pattern so that ``138\\u200b0013\\u200b8000`` is still a phone number.
3. ``nfkc`` — Unicode NFKC **except** ``，！？：；（）～…``. Plain NFKC folds these to ASCII
   (``，`` is U+FF0C FULLWIDTH COMMA), which would rewrite almost every Chinese sentence; they
   are the normal Chinese marks and stay, their vertical/small forms (︐ ﹐ ﹗) become them.
   Everything else full-width is folded by NFKC itself (ＡＢＣ１２３ → ABC123, ＠ → @,
   U+3000 → space, ｡ → 。): no full-width (East Asian Width F) character survives NFKC, so no
   separate width table is needed. 。、「」『』【】《》“” are left by NFKC and stay. Spacing
   accents that NFKC would split into a space and a combining mark (´ ￣ ¨, in kaomoji) stay too.
4. ``t2s`` — optional Traditional → Simplified with OpenCC (``pip install ".[data]"``).
5. ``urls`` — URLs and known short links removed (or ``placeholders.url``).
6. ``emoticons`` — optional: Weibo bracket emoticons ``[哈哈]`` removed.
7. ``emoji`` — optional: emoji removed (ZWJ sequences, skin tones, keycaps, flags); ★ ♀ ❤
   written as plain symbols stay.
8. ``topics`` — ``#话题#`` unwrapped to ``话题`` by default: the topic words are often the
   content being judged (``#女拳#``), the ``#`` marks are platform syntax. ``remove`` or ``keep``.
9–15. ``emails`` ``id_cards`` ``phones`` ``landlines`` ``qq`` ``wechat`` ``mentions`` — personal
   identifiers → placeholders (``<邮箱>`` ``<身份证号>`` ``<手机号>`` ``<电话>`` ``<QQ号>``
   ``<微信号>`` ``@用户``). ID numbers need a real birth date and a valid MOD 11-2 check digit
   (others are counted under ``left_alone`` and kept); QQ numbers and WeChat ids need a cue.
16. ``punctuation`` — ``keep`` (default: marks as typed), ``ascii`` (``，`` → ``,`` as NFKC would),
    or ``cjk`` (``,!?;:~()`` right after a Chinese character → full-width).
17. ``whitespace`` — runs → one space, trimmed, spaces beside wide Chinese marks dropped. A
    space between two Chinese characters stays (``小明 白`` ≠ ``小明白``) unless
    ``remove_cjk_spaces``.

Removal rules run before the identifier rules, and a changed text is run through the pipeline
again until it stops changing, so normalising twice equals normalising once.

Record filters, after the text rules, in this order (the first that applies is the reason):
``missing_text`` (no string in the text field; only with ``missing_text="reject"``, otherwise an
:class:`~verimod.core.errors.InputError`), ``empty``, ``symbol_only`` (no letter, digit or CJK
character), ``too_short`` (fewer than ``min_length`` characters as
:func:`~verimod.data.normalize_filters.text_length` counts them: whitespace does not count, a
placeholder or a bracket emoticon such as ``[酷]`` counts one; off by default, ``min_length = 0``:
short comments are often the abusive ones — "这中男人就是垃圾" has 8 characters — and in COLD
train a floor of 15 removes 11.5 % of the records, 970 of them offensive, skewing the labels),
``spam`` (weighted patterns of
``resources/normalize_patterns.json``: strong patterns such as 兼职日结 or 免费领取 suffice, weak
cues such as 私信我, 代购 or 加微信 need a second cue or a contact — so abusive comments that
merely mention WeChat are kept), ``duplicate`` (same normalised text as an earlier kept record;
the first is kept). A duplicate that carries a label (the ``label_field``, default ``label``)
other than the kept copy's (an unlabelled kept copy included) is a *conflict*: still removed, but counted
in ``duplicate_conflicts`` / ``conflict_groups`` and listed in :attr:`Normalizer.conflicts`, so
the annotation disagreement can be adjudicated instead of silently resolved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from verimod.core.errors import InputError
from verimod.data.normalize_config import (
    REMOVAL_REASONS,
    NormalizeConfig,
    NormalizeReport,
    Placeholders,
    RemovalReason,
)
from verimod.data.normalize_filters import has_content, load_spam_patterns, text_key, text_length
from verimod.data.normalize_rules import (
    CONTACT_RULES,
    RULE_ORDER,
    MissingExtraError,
    apply_rules,
    build_rules,
)

__all__ = [
    "REMOVAL_REASONS",
    "RULE_ORDER",
    "DuplicateConflict",
    "MissingExtraError",
    "NormalizeConfig",
    "NormalizeReport",
    "Normalizer",
    "Placeholders",
    "Rejected",
    "normalize_records",
    "normalize_text",
]

_DEFAULT = NormalizeConfig()


class Rejected(NamedTuple):
    """A removed record (with its normalised text, and the original when ``keep_original``),
    the filter that removed it and a detail (the spam patterns, the first copy, the length)."""

    record: dict[str, Any]
    reason: RemovalReason
    detail: str


@dataclass(frozen=True)
class DuplicateConflict:
    """A removed duplicate whose label differs from the kept copy's: where each copy is (line or
    position) and both labels."""

    kept_line: int
    line: int
    kept_label: Any
    label: Any


def normalize_text(text: str, config: NormalizeConfig | None = None) -> tuple[str, list[str]]:
    """Normalise one text; return it and the names of the rules that changed it, in pipeline order.

    >>> normalize_text("加ＶＸ：abc_123，私聊&amp;领取")
    ('加VX：<微信号>，私聊&领取', ['html', 'nfkc', 'wechat'])
    """
    return apply_rules(text, build_rules(config or _DEFAULT), Counter())


class Normalizer:
    """Normalises and filters records one at a time, keeping the report and the keys of kept
    texts (for duplicate removal): use one instance per data set, in record order."""

    def __init__(
        self,
        config: NormalizeConfig | None = None,
        text_field: str = "text",
        source: str = "<records>",
        label_field: str | None = "label",
    ):
        self.config = config or _DEFAULT
        self.text_field = text_field
        self.label_field = label_field
        #: Every removed duplicate that carries another label than the kept copy, in input order.
        self.conflicts: list[DuplicateConflict] = []
        self.source = source
        if self.config.keep_original == text_field:
            raise ValueError(f"keep_original must differ from the text field {text_field!r}")
        self._rules = build_rules(self.config)
        self._spam = load_spam_patterns(self.config.spam_patterns) if self.config.drop_spam else None
        ph = self.config.placeholders
        self._placeholders = tuple(p for p in ph.model_dump().values() if p)
        self._contact_placeholders = tuple(p for p in (ph.url, ph.email, ph.phone, ph.landline, ph.qq, ph.wechat) if p)
        self._seen: dict[bytes, tuple[int, Any]] = {}
        self._conflicted: set[int] = set()
        self._position = 0
        self._where = 0
        names = [name for name, _ in self._rules]
        self.report = NormalizeReport(
            config=self.config, changed=dict.fromkeys(names, 0), replaced=dict.fromkeys(names, 0)
        )

    def process(self, record: dict[str, Any], line: int | None = None) -> tuple[dict[str, Any], Rejected | None]:
        """Normalise one record; return the output record and, when a filter removed it, its
        :class:`Rejected`. The input record is not modified. ``line`` (e.g. from
        :func:`~verimod.data.jsonl.read_jsonl`) is how errors and duplicate details name the
        record; by default its 1-based position."""
        self._position += 1
        self._where = self._position if line is None else line
        report = self.report
        report.records_in += 1
        text = record.get(self.text_field)
        if not isinstance(text, str):
            return self._reject(dict(record), "missing_text", self._missing(text))
        counts: Counter[str] = Counter()
        normalized, changed = apply_rules(text, self._rules, counts)
        self._tally(changed, counts)
        out = {**record, self.text_field: normalized}
        if self.config.keep_original is not None:
            if self.config.keep_original in record:
                raise InputError.at(
                    self.source, self._where, self.config.keep_original,
                    "already present: choose another field name for the original text",
                )  # fmt: skip
            out[self.config.keep_original] = text
        verdict = self._filter(normalized, counts, record.get(self.label_field) if self.label_field else None)
        if verdict is not None:
            return self._reject(out, *verdict)
        report.records_out += 1
        return out, None

    def finish(self) -> NormalizeReport:
        """Check the count invariant, mark the report complete and return it."""
        self.report.check()
        self.report.complete = True
        return self.report

    def _missing(self, value: object) -> str:
        what = "missing" if value is None else f"expected a string, got {type(value).__name__}"
        if self.config.missing_text == "error":
            raise InputError.at(self.source, self._where, self.text_field, f"{what} (the text to normalise)")
        return what

    def _reject(self, record: dict[str, Any], reason: RemovalReason, detail: str) -> tuple[dict[str, Any], Rejected]:
        self.report.removed[reason] += 1
        return record, Rejected(record, reason, detail)

    def _tally(self, changed: list[str], counts: Counter[str]) -> None:
        report = self.report
        report.texts_changed += bool(changed)
        for name in changed:
            report.changed[name] += 1
        for key, n in counts.items():
            if "." in key:
                report.left_alone[key] = report.left_alone.get(key, 0) + n
            else:
                report.replaced[key] += n

    def _filter(self, text: str, counts: Counter[str], label: Any) -> tuple[RemovalReason, str] | None:
        config = self.config
        if config.drop_empty and not text:
            return "empty", ""
        if config.drop_symbol_only and text and not has_content(text):
            return "symbol_only", ""
        if config.min_length:
            length = text_length(text, self._placeholders)
            if length < config.min_length:
                return "too_short", f"{length} < {config.min_length} characters"
        if self._spam is not None:
            contact = any(counts[r] for r in CONTACT_RULES) or any(p in text for p in self._contact_placeholders)
            score, names = self._spam.match(text, contact)
            if score >= config.spam_threshold:
                for name in names:
                    self.report.spam_patterns[name] = self.report.spam_patterns.get(name, 0) + 1
                return "spam", f"{'+'.join(names)} (score {score})"
        if config.drop_duplicates:
            return self.duplicate_verdict(text_key(text), label, self._where)
        return None

    def duplicate_verdict(self, key: bytes, label: Any, where: int) -> tuple[RemovalReason, str] | None:
        """The duplicate filter alone: None for the first record with this text ``key``
        (:func:`~verimod.data.normalize_filters.text_key`), which is remembered as kept at
        ``where``; ``("duplicate", detail)`` for a later one, counted as a conflict when its
        ``label`` differs from the kept copy's. Call it in record order, for records that passed
        every earlier filter (the distributed normalize calls it per text key)."""
        first = self._seen.get(key)
        if first is None:
            self._seen[key] = (where, label)
            return None
        kept_line, kept_label = first
        if label is None or kept_label == label:  # nothing is lost with this copy
            return "duplicate", f"same text as record {kept_line}"
        self._conflict(DuplicateConflict(kept_line, where, kept_label, label))
        return "duplicate", f"same text as record {kept_line}, another label ({kept_label!r} kept, {label!r} here)"

    def _conflict(self, conflict: DuplicateConflict) -> None:
        if conflict.kept_line not in self._conflicted:
            self._conflicted.add(conflict.kept_line)
            self.report.conflict_groups += 1
        self.report.duplicate_conflicts += 1
        self.conflicts.append(conflict)


def normalize_records(
    records: Iterable[dict[str, Any]],
    text_field: str = "text",
    config: NormalizeConfig | None = None,
    *,
    on_reject: Callable[[Rejected], None] | None = None,
    source: str = "<records>",
    label_field: str | None = "label",
) -> tuple[Iterator[dict[str, Any]], NormalizeReport]:
    """Normalise ``records`` lazily: return an iterator over the kept records and the report it
    fills in as it goes. Removed records are passed to ``on_reject`` as they occur.

    The report is final (``complete`` True, invariant checked) once the iterator is exhausted:
    consume it first (``kept = list(kept)`` for small data). Only the 16-byte keys of kept texts
    are held in memory. Records keep their other fields; the text field is replaced by the
    normalised text. A record whose text field is missing or not a string raises
    :class:`InputError` naming ``source`` and the record number (1-based), unless
    ``config.missing_text == "reject"``. Configuration errors (OpenCC missing, a placeholder
    that rules would rewrite) are raised here, before any record is read.
    """
    normalizer = Normalizer(config, text_field, source, label_field)

    def kept() -> Iterator[dict[str, Any]]:
        for record in records:
            out, rejected = normalizer.process(record)
            if rejected is None:
                yield out
            elif on_reject is not None:
                on_reject(rejected)
        normalizer.finish()

    return kept(), normalizer.report
