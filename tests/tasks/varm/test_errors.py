import json
from pathlib import Path

from sklearn.metrics import confusion_matrix

from tests.tasks.varm.test_uncertainty import run
from verimod.tasks.varm.codebook import VOCABULARY
from verimod.tasks.varm.errors import UNPARSED, analyse_errors
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import score_predictions
from verimod.tasks.varm.uncertainty import scorer_of

GOLDEN = json.loads((Path(__file__).parent / "golden_scores.json").read_text(encoding="utf-8"))["cases"]


def test_golden_mixed_case_hidden_errors_and_parse_errors():
    case = next(c for c in GOLDEN if c["name"] == "mixed_errors")
    refs = [VarmReference.model_validate(r) for r in case["references"]]
    _, items = score_predictions(refs, {p["id"]: p["output"] for p in case["predictions"]})
    analysis = analyse_errors(refs, items, scorer_of(refs, items))
    assert [(h.id, h.label_correct, h.category_correct, h.failing_fields) for h in analysis.hidden_errors] == [
        ("r2", True, False, ["category"])
    ]
    assert [(p.error_class, p.count, [e.id for e in p.examples]) for p in analysis.parse_errors] == [
        ("missing_anchor", 1, ["r4"])
    ]


def test_breakdown_equals_scoring_each_group_alone():
    refs, outputs = run(7, n=120)
    refs = [r.model_copy(update={"tags": ["quotation"] if k % 3 == 0 else []}) for k, r in enumerate(refs)]
    _, items = score_predictions(refs, outputs)
    analysis = analyse_errors(refs, items, scorer_of(refs, items))
    for group in analysis.breakdown:
        members = [
            r for r in refs if (r.category == group.group if group.kind == "category" else group.group in r.tags)
        ]
        alone, _ = score_predictions(members, {r.id: outputs[r.id] for r in members if r.id in outputs})
        assert group.n == len(members) and group.jrem == alone.jrem and group.mismatch == alone.mismatch
        assert group.shapley == alone.shapley and group.parse_rate == alone.parse_rate
    assert {g.kind for g in analysis.breakdown} == {"category", "tag"}


def test_confusion_matrices_match_scikit_learn():
    refs, outputs = run(8, n=150)
    _, items = score_predictions(refs, outputs)
    analysis = analyse_errors(refs, items, scorer_of(refs, items))
    for matrix in analysis.confusion:
        labels = list(VOCABULARY[matrix.field])
        y_true = [getattr(r, matrix.field) for r in refs]
        y_pred = [UNPARSED if i.values is None else i.values[1 + list(VOCABULARY).index(matrix.field)] for i in items]
        expected = confusion_matrix(y_true, y_pred, labels=[*labels, UNPARSED])[: len(labels)]
        assert matrix.counts == expected.tolist() and matrix.predicted[-1] == UNPARSED
