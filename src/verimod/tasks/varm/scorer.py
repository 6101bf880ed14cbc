"""Deterministic end-to-end scoring of VARM outputs against reference records.

Every reference item is in every denominator: a missing prediction, a failed model call or an
output that does not parse counts as wrong on every field (a miss for its true class and a
false positive for no class), has T-F1 = 0 and J = 0. For N reference items:

- Macro-F1 of label, category, target_type, target_explicitness, stance: mean per-class F1 over
  the classes present in the reference column (:func:`verimod.stats.macro_f1`), with an INVALID
  prediction for unparseable outputs.
- T-F1: mean of the per-item target score: :func:`verimod.stats.char_f1` of predicted and
  reference target; 1 when both are ``no_clear_target``, 0 when only one is; 0 when unparseable.
- Parse: fraction of outputs that parse; Format: fraction that parse, are written canonically
  and satisfy the codebook constraints.
- Truncation: an output that does not parse and whose generation was cut at the token limit
  (``finish_reason`` ``length`` or ``max_tokens``) has the error class ``truncated`` instead of
  the parser's class (the parser's detail is kept); one that parses despite the cut is scored as
  usual. ``n_truncated`` counts every cut output, parsed or not.
- JREM: mean of J_i, where J_i = 1 iff output i parses, T-F1_i ≥ 0.5 and the five discrete
  fields equal the reference.
- HER-C = Σ M_i^C (1 − J_i) / Σ M_i^C with M_i^C = 1 iff output i parses and its category is
  correct; HER-L likewise for the label. None when the denominator is 0.
- Mismatch rate of each field over N (target mismatch: T-F1 < 0.5; unparseable outputs
  mismatch every field).
- Exact Shapley decomposition of Parse − JREM over the groups referent = {target, target_type,
  target_explicitness}, stance = {stance}, decision = {label, category}, with
  v(S) = (1/N)·#{i : output i parses and every field of every group in S is correct} and
  φ_g = Σ_{S ⊆ G∖{g}} |S|!(|G|−|S|−1)!/|G|! · (v(S) − v(S ∪ {g})). The three φ sum exactly to
  Parse − JREM (checked in rational arithmetic).

Partial references (converted public data annotating only some fields) are scored field by
field: each field's metrics (macro-F1, T-F1, mismatch) are taken over the items whose
reference carries that field (``fields_scored`` gives the counts; a metric with no such item is
None); JREM is *partial* — J_i requires the fields present in reference i to be right — over the
items carrying at least one field (``n_jrem``); HER-C and HER-L condition on items carrying the
category or label; the Shapley terms decompose Parse − JREM over the same items as JREM, with
each group judged on its present fields. Parse and Format are over all N. With complete
references all of this reduces to the definitions above.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Final, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict

from verimod.stats import char_f1, per_class_f1, shapley_values
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, FIELDS, NO_CLEAR_TARGET, VOCABULARY, RecordLike
from verimod.tasks.varm.parser import PARSER_VERSION, ParseErrorClass, parse_rationale

T_F1_THRESHOLD: Final = 0.5
MISSING_PREDICTION: Final = "missing_prediction"
MODEL_ERROR: Final = "model_error"
TRUNCATED: Final = "truncated"
#: ``finish_reason`` values that mean the generation hit the token limit.
TRUNCATION_REASONS: Final = frozenset({"length", "max_tokens"})
SHAPLEY_GROUPS: Final = {
    "referent": ("target", "target_type", "target_explicitness"),
    "stance": ("stance",),
    "decision": ("label", "category"),
}
_CODES: Final = {field: {v: i for i, v in enumerate(values)} for field, values in VOCABULARY.items()}
# Bits of the per-item status word: parsed, format ok, one "correct" bit per field, and one
# "present in the reference" bit per field.
_PARSED: Final = 1
_FORMAT: Final = 2
_FIELD_BIT: Final = {field: 4 << i for i, field in enumerate(FIELDS)}
if tuple(_FIELD_BIT.values()) != (4, 8, 16, 32, 64, 128):  # VarmScorer.add unrolls these
    raise AssertionError("field bits changed: update VarmScorer.add")
_PRESENT_BIT: Final = {field: 256 << i for i, field in enumerate(FIELDS)}
_PRESENT_LIST: Final = tuple(_PRESENT_BIT[f] for f in FIELDS)
_ALL_PRESENT: Final = sum(_PRESENT_LIST)
_CODE_LIST: Final = tuple(_CODES[f] for f in DISCRETE_FIELDS)
_INCONSISTENT: Final = 1 << 14  # the parsed record breaks the codebook
#: Error classes of items without a parsed record, in code order.
ERROR_CLASSES: Final = (*(str(e) for e in ParseErrorClass), TRUNCATED, "missing_prediction", "model_error")
_ERROR_CLASSES: Final = ERROR_CLASSES
_ERROR_CODE: Final = {name: i for i, name in enumerate(_ERROR_CLASSES)}
_ABSENT: Final = -2  # reference code of a field the reference does not carry
_UNPARSED: Final = -1  # prediction code of an unparseable output


class ItemScore(NamedTuple):
    """The scored outcome of one item: enough to audit it without re-running anything."""

    id: str
    status: str  # "ok" | "parse_error" | "missing" | "error"
    error_class: str | None
    detail: str | None
    values: tuple[str, ...] | None
    format_ok: bool
    violations: tuple[str, ...]
    flags: tuple[str, ...]
    correct: tuple[bool | None, ...]  # None: the reference does not carry the field
    target_char_f1: float | None
    j: int
    output: str | None
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        """True when the generation was cut at the token limit."""
        return self.finish_reason in TRUNCATION_REASONS

    def to_dict(self) -> dict[str, Any]:
        """One per-item JSONL row (id, status, error class, record, per-field correctness, T-F1, J)."""
        return {
            "id": self.id,
            "status": self.status,
            "error_class": self.error_class,
            "detail": self.detail,
            "record": None if self.values is None else dict(zip(FIELDS, self.values, strict=True)),
            "format_ok": self.format_ok,
            "violations": list(self.violations),
            "flags": list(self.flags),
            "correct": dict(zip(FIELDS, self.correct, strict=True)),
            "target_char_f1": self.target_char_f1,
            "j": self.j,
            "output": self.output,
            "finish_reason": self.finish_reason,
            "parser_version": PARSER_VERSION,
        }


class VarmScores(BaseModel):
    """Summary metrics of one scored prediction set; fractions in [0, 1]."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    label_macro_f1: float | None
    category_macro_f1: float | None
    target_char_f1: float | None
    target_type_macro_f1: float | None
    explicitness_macro_f1: float | None
    stance_macro_f1: float | None
    parse_rate: float
    format_rate: float
    jrem: float | None
    her_c: float | None
    her_l: float | None
    mismatch: dict[str, float | None]
    shapley: dict[str, float]
    fields_scored: dict[str, int]
    n_jrem: int
    n_parsed: int
    n_format: int
    n_missing: int
    n_model_errors: int
    n_inconsistent: int
    n_truncated: int = 0
    error_classes: dict[str, int]
    per_class_f1: dict[str, dict[str, float]]
    parser_version: str


def target_score(pred_target: str, ref_target: str) -> float:
    """Per-item target score: char F1, with the ``no_clear_target`` rule (1 if both, 0 if one)."""
    pred_none = pred_target == NO_CLEAR_TARGET
    ref_none = ref_target == NO_CLEAR_TARGET
    if pred_none or ref_none:
        return 1.0 if pred_none and ref_none else 0.0
    return char_f1(pred_target, ref_target)


class VarmScorer:
    """Accumulates items one at a time in compact columns; :meth:`scores` summarises them.

    Memory per item is a few dozen bytes, so millions of items can be scored in one process;
    the per-item :class:`ItemScore` returned by :meth:`add` is for the caller to keep or drop.
    """

    def __init__(self) -> None:
        # One signed-byte column per discrete field, reference and prediction (−1: unparsed).
        self._ref = [array("b") for _ in DISCRETE_FIELDS]
        self._pred = [array("b") for _ in DISCRETE_FIELDS]
        self._tf1 = array("d")
        self._bits = array("H")
        self._error = array("b")  # per item: index into _ERROR_CLASSES, or −1 when the output parsed
        self._truncated = array("b")  # per item: 1 when the generation hit the token limit

    def __len__(self) -> int:
        return len(self._bits)

    def columns(self) -> dict[str, np.ndarray]:
        """Per-item columns (read-only views) for analyses: ``parsed``, ``format_ok``, ``j``, one
        ``correct_<field>`` and ``present_<field>`` per field, ``ref_<field>`` / ``pred_<field>``
        codes of the discrete fields (index into :data:`VOCABULARY`; −1 unparsed, −2 absent),
        ``target_char_f1`` and ``error_code`` (index into :data:`ERROR_CLASSES`, −1: parsed)."""
        bits = np.frombuffer(self._bits, dtype=np.uint16)
        out: dict[str, np.ndarray] = {
            "parsed": (bits & _PARSED) > 0,
            "format_ok": (bits & _FORMAT) > 0,
            "target_char_f1": np.frombuffer(self._tf1, dtype=np.float64),
            "error_code": np.frombuffer(self._error, dtype=np.int8),
            "truncated": np.frombuffer(self._truncated, dtype=np.int8) > 0,
        }
        j = out["parsed"].copy()
        scored = np.zeros(len(bits), dtype=bool)
        for field in FIELDS:
            out[f"present_{field}"] = (bits & _PRESENT_BIT[field]) > 0
            out[f"correct_{field}"] = (bits & _FIELD_BIT[field]) > 0
            j &= out[f"correct_{field}"] | ~out[f"present_{field}"]
            scored |= out[f"present_{field}"]
        out["j"] = j & scored
        for field, ref_column, pred_column in zip(DISCRETE_FIELDS, self._ref, self._pred, strict=True):
            out[f"ref_{field}"] = np.frombuffer(ref_column, dtype=np.int8)
            out[f"pred_{field}"] = np.frombuffer(pred_column, dtype=np.int8)
        return out

    def add(
        self,
        item_id: str,
        reference: RecordLike,
        output: str | None,
        error: str | None = None,
        finish_reason: str | None = None,
    ) -> ItemScore:
        """Score one output against its reference record (fields may be None: partial).

        ``output=None`` means no prediction: status ``missing`` (``missing_prediction``), or
        status ``error`` (``model_error``, with ``error`` as the detail) when the model call
        failed. Either way the item is wrong on every field. ``finish_reason`` is the
        backend's (``length``: cut at the token limit, see the module docstring).
        """
        cut = output is not None and finish_reason in TRUNCATION_REASONS
        self._truncated.append(cut)
        ref = (
            reference.target,
            reference.target_type,
            reference.target_explicitness,
            reference.stance,
            reference.label,
            reference.category,
        )
        if None not in ref:  # a complete reference: the common case, kept fast
            present = _ALL_PRESENT
            for column, codes, value in zip(self._ref, _CODE_LIST, ref[1:], strict=True):
                column.append(codes[value])  # type: ignore[index]  # not None: checked above
        else:
            present = 0
            for bit, value in zip(_PRESENT_LIST, ref, strict=True):
                if value is not None:
                    present |= bit
            for column, codes, value in zip(self._ref, _CODE_LIST, ref[1:], strict=True):
                column.append(_ABSENT if value is None else codes[value])
        parsed = None if output is None else parse_rationale(output)
        values = None if parsed is None else parsed.values
        if values is None:
            for column in self._pred:
                column.append(_UNPARSED)
            self._tf1.append(0.0)
            self._bits.append(present)
            if parsed is not None and cut:
                status, error_class = "parse_error", TRUNCATED
                detail = f"cut at the token limit (finish_reason {finish_reason}) before the record was complete; "
                detail += str(parsed.detail)
            elif parsed is not None:
                status, error_class, detail = "parse_error", str(parsed.error_class), parsed.detail
            elif error is not None:
                status, error_class, detail = "error", MODEL_ERROR, error
            else:
                status, error_class, detail = "missing", MISSING_PREDICTION, None
            self._error.append(_ERROR_CODE[error_class])
            wrong = tuple(None if value is None else False for value in ref)
            tf1_missing = None if ref[0] is None else 0.0
            return ItemScore(
                item_id, status, error_class, detail, None, False, (), (), wrong, tf1_missing, 0, output, finish_reason
            )
        assert parsed is not None
        for column, codes, value in zip(self._pred, _CODE_LIST, values[1:], strict=True):
            column.append(codes[value])
        tf1 = None if ref[0] is None else target_score(values[0], ref[0])
        correct = (
            None if tf1 is None else tf1 >= T_F1_THRESHOLD,
            None if ref[1] is None else values[1] == ref[1],
            None if ref[2] is None else values[2] == ref[2],
            None if ref[3] is None else values[3] == ref[3],
            None if ref[4] is None else values[4] == ref[4],
            None if ref[5] is None else values[5] == ref[5],
        )
        bits = present | _PARSED | (_FORMAT if parsed.format_ok else 0)
        # the "correct" bits of FIELDS, unrolled (hot path): _FIELD_BIT == 4, 8, …, 128
        if correct[0]:
            bits |= 4
        if correct[1]:
            bits |= 8
        if correct[2]:
            bits |= 16
        if correct[3]:
            bits |= 32
        if correct[4]:
            bits |= 64
        if correct[5]:
            bits |= 128
        if parsed.violations:
            bits |= _INCONSISTENT
        self._tf1.append(0.0 if tf1 is None else tf1)
        self._bits.append(bits)
        self._error.append(-1)
        j = int(present != 0 and False not in correct)
        return ItemScore(
            item_id,
            "ok",
            None,
            None,
            values,
            parsed.format_ok,
            parsed.violations,
            parsed.flags,
            correct,
            tf1,
            j,
            output,
            finish_reason,
        )

    def scores(self, index: np.ndarray | None = None) -> VarmScores:
        """Summary metrics over every item added so far (see the module docstring), or over the
        items selected by ``index`` (positions in order of addition; repeats allowed — this is
        how bootstrap resamples and per-group breakdowns are scored)."""
        total = len(self._bits)
        if index is None:
            index = np.arange(total)
        n = len(index)
        if n == 0:
            raise ValueError("no items to score")
        bits = np.frombuffer(self._bits, dtype=np.uint16)[index]
        parsed = (bits & _PARSED) > 0
        present = {field: (bits & bit) > 0 for field, bit in _PRESENT_BIT.items()}
        # "right or not asked": a field the reference does not carry cannot make J fail
        correct = {field: (bits & bit) > 0 for field, bit in _FIELD_BIT.items()}
        satisfied = {field: correct[field] | ~present[field] for field in FIELDS}
        scored = np.zeros(n, dtype=bool)
        for mask in present.values():
            scored |= mask
        j = parsed & scored
        for mask in satisfied.values():
            j &= mask

        per_class: dict[str, dict[str, float]] = {}
        macro: dict[str, float | None] = {}
        for field, ref_column, pred_column in zip(DISCRETE_FIELDS, self._ref, self._pred, strict=True):
            mask = present[field]
            y_true = np.frombuffer(ref_column, dtype=np.int8)[index].astype(np.int64)[mask]
            y_pred = np.frombuffer(pred_column, dtype=np.int8)[index].astype(np.int64)[mask]
            if not mask.any():
                per_class[field], macro[field] = {}, None
                continue
            f1 = per_class_f1(y_true, y_pred, labels=np.unique(y_true).tolist())
            per_class[field] = {VOCABULARY[field][int(code)]: score for code, score in f1.items()}
            macro[field] = float(np.mean(list(f1.values())))

        def rate(mask: np.ndarray, over: np.ndarray) -> float | None:
            total = int(over.sum())
            return None if total == 0 else float((mask & over).sum() / total)

        def her(field: str) -> float | None:
            return rate(~j, correct[field] & present[field])

        n_jrem = int(scored.sum())
        counts: dict[frozenset[str], int] = {frozenset(): int((parsed & scored).sum())}
        for size in (1, 2, 3):
            for coalition in _coalitions(size):
                mask = parsed & scored
                for group in coalition:
                    for field in SHAPLEY_GROUPS[group]:
                        mask &= satisfied[field]
                counts[coalition] = int(mask.sum())
        denominator = max(n_jrem, 1)
        loss = {c: Fraction(counts[frozenset()] - k, denominator) for c, k in counts.items()}
        phi = shapley_values(list(SHAPLEY_GROUPS), lambda c: loss[c], exact=True)
        if sum(phi.values()) != Fraction(counts[frozenset()] - int(j.sum()), denominator):
            raise AssertionError("Shapley values do not sum to Parse − JREM")

        tf1 = np.frombuffer(self._tf1, dtype=np.float64)[index]
        error_codes = np.frombuffer(self._error, dtype=np.int8)[index]
        error_counts = np.bincount(error_codes[error_codes >= 0], minlength=len(_ERROR_CLASSES))
        errors = {name: int(c) for name, c in zip(_ERROR_CLASSES, error_counts, strict=True) if c}
        target_present = present["target"]
        return VarmScores(
            n=n,
            label_macro_f1=macro["label"],
            category_macro_f1=macro["category"],
            target_char_f1=float(tf1[target_present].mean()) if target_present.any() else None,
            target_type_macro_f1=macro["target_type"],
            explicitness_macro_f1=macro["target_explicitness"],
            stance_macro_f1=macro["stance"],
            parse_rate=float(parsed.sum() / n),
            format_rate=float(((bits & _FORMAT) > 0).sum() / n),
            jrem=rate(j, scored),
            her_c=her("category"),
            her_l=her("label"),
            mismatch={
                ("explicitness" if f == "target_explicitness" else f): rate(~correct[f], present[f]) for f in FIELDS
            },
            shapley={group: float(value) for group, value in phi.items()},
            fields_scored={f: int(present[f].sum()) for f in FIELDS},
            n_jrem=n_jrem,
            n_parsed=int(parsed.sum()),
            n_format=int(((bits & _FORMAT) > 0).sum()),
            n_missing=errors.get(MISSING_PREDICTION, 0),
            n_model_errors=errors.get(MODEL_ERROR, 0),
            n_inconsistent=int(((bits & _INCONSISTENT) > 0).sum()),
            n_truncated=int(np.frombuffer(self._truncated, dtype=np.int8)[index].sum()),
            error_classes=dict(sorted(errors.items())),
            per_class_f1=per_class,
            parser_version=PARSER_VERSION,
        )


def _coalitions(size: int) -> Iterable[frozenset[str]]:
    from itertools import combinations

    return (frozenset(c) for c in combinations(SHAPLEY_GROUPS, size))


def score_predictions(references: Sequence[Any], outputs: Mapping[str, str]) -> tuple[VarmScores, list[ItemScore]]:
    """Score ``outputs`` (id → raw output) against ``references`` (objects with ``id`` and the six
    fields). References without an output are scored as missing; outputs whose id is not a
    reference id raise ``KeyError`` (the file loaders report them with their line instead)."""
    unknown = set(outputs) - {r.id for r in references}
    if unknown:
        raise KeyError(f"outputs for unknown reference ids: {sorted(unknown)[:5]}")
    scorer = VarmScorer()
    items = [scorer.add(ref.id, ref, outputs.get(ref.id)) for ref in references]
    return scorer.scores(), items
