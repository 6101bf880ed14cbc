import json
import random
import unicodedata
from collections import Counter
from fractions import Fraction
from itertools import permutations
from pathlib import Path

import pytest
from sklearn.metrics import f1_score

from tests.conftest import REQUIRED_SCORE_KEYS, rationale
from verimod.tasks.varm.codebook import FIELDS, NO_CLEAR_TARGET, VOCABULARY
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import VarmScorer, score_predictions

GOLDEN = json.loads((Path(__file__).parent / "golden_scores.json").read_text(encoding="utf-8"))["cases"]


def _assert_close(actual, expected, path=""):
    if isinstance(expected, dict):
        assert set(expected) <= set(actual), path
        for key, value in expected.items():
            _assert_close(actual[key], value, f"{path}.{key}")
    elif expected is None or isinstance(expected, str):
        assert actual == expected, path
    else:
        assert actual == pytest.approx(expected, abs=1e-12), path


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_golden_cases(case):
    references = [VarmReference.model_validate(r) for r in case["references"]]
    outputs = {p["id"]: p["output"] for p in case["predictions"]}
    scores, items = score_predictions(references, outputs)
    _assert_close(scores.model_dump(), case["expected"])
    assert set(scores.model_dump()) >= REQUIRED_SCORE_KEYS
    # efficiency: the terms sum to Parse − JREM over the items JREM is taken on
    scored = [item for item, ref in zip(items, references, strict=True) if ref.present_fields()]
    parse_scored = sum(item.status == "ok" for item in scored) / len(scored)
    assert sum(scores.shapley.values()) == pytest.approx(parse_scored - scores.jrem, abs=1e-12)
    assert [item.id for item in items] == [r.id for r in references]


def test_per_item_rows_describe_each_outcome():
    case = next(c for c in GOLDEN if c["name"] == "mixed_errors")
    references = [VarmReference.model_validate(r) for r in case["references"]]
    _, items = score_predictions(references, {p["id"]: p["output"] for p in case["predictions"]})
    rows = [item.to_dict() for item in items]
    assert rows[0]["status"] == "ok" and rows[0]["j"] == 1 and rows[0]["target_char_f1"] == pytest.approx(0.8)
    assert rows[1]["correct"] == {
        "target": True,
        "target_type": True,
        "target_explicitness": True,
        "stance": True,
        "label": True,
        "category": False,
    }
    assert rows[1]["format_ok"] is False and "fullwidth_bracket" in rows[1]["flags"]
    assert rows[3]["status"] == "parse_error" and rows[3]["error_class"] == "missing_anchor"
    assert rows[3]["record"] is None and rows[3]["output"].startswith("评论")
    assert all(row["parser_version"] for row in rows)
    json.dumps(rows, ensure_ascii=False)


def test_missing_prediction_is_its_own_status():
    ref = VarmReference.model_validate(GOLDEN[0]["references"][0])
    _, items = score_predictions([ref], {})
    assert items[0].status == "missing" and items[0].error_class == "missing_prediction"


def test_unknown_output_ids_are_refused():
    ref = VarmReference.model_validate(GOLDEN[0]["references"][0])
    with pytest.raises(KeyError):
        score_predictions([ref], {"nope": "x"})


def test_empty_scorer_refuses_to_summarise():
    with pytest.raises(ValueError):
        VarmScorer().scores()


# --- cross-check against independent implementations on random data ---------------------------


def _independent_char_f1(pred, ref):
    def norm(s):
        s = unicodedata.normalize("NFKC", s).lower()
        return [c for c in s if not c.isspace() and not unicodedata.category(c).startswith(("P", "S"))]

    if pred == NO_CLEAR_TARGET or ref == NO_CLEAR_TARGET:
        return float(pred == ref)
    p, r = norm(pred), norm(ref)
    if not p and not r:
        return 1.0
    common = sum((Counter(p) & Counter(r)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(r)
    return 2 * precision * recall / (precision + recall)


def _permutation_shapley(v):
    players = ["referent", "stance", "decision"]
    phi = dict.fromkeys(players, Fraction(0))
    for order in permutations(players):
        s = frozenset()
        for p in order:
            phi[p] += v(s) - v(s | {p})
            s = s | {p}
    return {p: x / 6 for p, x in phi.items()}


TARGETS = ["河南人", "河南", "东北人", "小县城公务员", "公务员", "女司机", "楼主", "某些人", NO_CLEAR_TARGET]


def _random_case(rng, drop=0.0):
    """Random references (each field absent with probability ``drop``) and outputs; ``truth``
    holds the predicted record of each output that parses (None otherwise)."""
    references, outputs, truth = [], {}, []
    for i in range(rng.randint(1, 120)):
        ref = {f: rng.choice(VOCABULARY[f]) for f in VOCABULARY}
        ref["target"] = rng.choice(TARGETS)
        kept = {f: v for f, v in ref.items() if rng.random() >= drop}
        references.append(VarmReference(id=f"i{i}", text="随机生成的测试评论文本内容。", **kept))
        roll = rng.random()
        if roll < 0.1:
            truth.append(None)  # missing
            continue
        if roll < 0.2:
            outputs[f"i{i}"] = rng.choice(["", "无锚点的输出", rationale().replace("[L: harmful]", "")])
            truth.append(None)
            continue
        pred = {f: (ref[f] if rng.random() < 0.7 else rng.choice(VOCABULARY[f])) for f in VOCABULARY}
        pred["target"] = ref["target"] if rng.random() < 0.6 else rng.choice(TARGETS)
        outputs[f"i{i}"] = rationale(*(pred[f] for f in FIELDS))
        truth.append(pred)
    return references, outputs, truth


def _mean_or_none(values):
    return None if not values else sum(values) / len(values)


@pytest.mark.parametrize("drop", [0.0, 0.4])
@pytest.mark.parametrize("seed", range(20))
def test_random_cases_match_independent_computation(seed, drop):
    """Every metric recomputed independently (scikit-learn F1, a separate char-F1, permutation
    Shapley), for complete references (drop 0) and partial ones (fields absent at random)."""
    rng = random.Random(seed)
    references, outputs, truth = _random_case(rng, drop)
    scores, items = score_predictions(references, outputs)
    refs = [r.model_dump() for r in references]

    def present(field):
        return [k for k, r in enumerate(refs) if r[field] is not None]

    for field, key in [
        ("label", "label_macro_f1"),
        ("category", "category_macro_f1"),
        ("target_type", "target_type_macro_f1"),
        ("target_explicitness", "explicitness_macro_f1"),
        ("stance", "stance_macro_f1"),
    ]:
        rows = present(field)
        if not rows:
            assert getattr(scores, key) is None
            continue
        y_true = [refs[k][field] for k in rows]
        y_pred = ["INVALID" if truth[k] is None else truth[k][field] for k in rows]
        expected = f1_score(y_true, y_pred, labels=sorted(set(y_true)), average="macro", zero_division=0)
        assert getattr(scores, key) == pytest.approx(expected, abs=1e-12), field

    tf1 = [
        None if r["target"] is None else (0.0 if p is None else _independent_char_f1(p["target"], r["target"]))
        for p, r in zip(truth, refs, strict=True)
    ]
    expected_tf1 = _mean_or_none([t for t in tf1 if t is not None])
    assert scores.target_char_f1 == (None if expected_tf1 is None else pytest.approx(expected_tf1, abs=1e-12))

    def ok(p, r, f, t):
        if r[f] is None:
            return None
        return p is not None and (t >= 0.5 if f == "target" else p[f] == r[f])

    correct = [{f: ok(p, r, f, t) for f in FIELDS} for p, r, t in zip(truth, refs, tf1, strict=True)]
    scored = [any(c[f] is not None for f in FIELDS) for c in correct]
    parsed = [p is not None for p in truth]
    j = [
        int(s and p and all(v is not False for v in c.values()))
        for s, p, c in zip(scored, parsed, correct, strict=True)
    ]
    assert scores.parse_rate == pytest.approx(sum(parsed) / len(refs))
    expected_jrem = _mean_or_none([jj for jj, s in zip(j, scored, strict=True) if s])
    assert scores.jrem == (None if expected_jrem is None else pytest.approx(expected_jrem))
    assert [item.j for item in items] == j
    for field, name in [("category", "her_c"), ("label", "her_l")]:
        m = [c[field] is True for c in correct]
        expected = None if not any(m) else sum(mi * (1 - ji) for mi, ji in zip(m, j, strict=True)) / sum(m)
        assert getattr(scores, name) == (expected if expected is None else pytest.approx(expected))
    for field in FIELDS:
        key = "explicitness" if field == "target_explicitness" else field
        expected = _mean_or_none([c[field] is False for c in correct if c[field] is not None])
        assert scores.mismatch[key] == (None if expected is None else pytest.approx(expected))
        assert scores.fields_scored[field] == len(present(field))

    groups = {
        "referent": ("target", "target_type", "target_explicitness"),
        "stance": ("stance",),
        "decision": ("label", "category"),
    }
    n_scored = max(sum(scored), 1)

    def v(coalition):
        return Fraction(
            sum(
                1
                for c, p, s in zip(correct, parsed, scored, strict=True)
                if s and p and all(c[f] is not False for g in coalition for f in groups[g])
            ),
            n_scored,
        )

    expected_phi = _permutation_shapley(v)
    assert scores.shapley == pytest.approx({g: float(x) for g, x in expected_phi.items()}, abs=1e-12)
    parsed_scored = sum(1 for p, s in zip(parsed, scored, strict=True) if p and s)
    assert sum(expected_phi.values()) == Fraction(parsed_scored - sum(j), n_scored)


def test_scores_are_bit_identical_on_rescoring():
    rng = random.Random(3)
    references, outputs, _ = _random_case(rng)
    first, _ = score_predictions(references, outputs)
    second, _ = score_predictions(references, dict(reversed(list(outputs.items()))))
    assert first.model_dump_json() == second.model_dump_json()


def test_an_unparsed_output_cut_at_the_token_limit_is_its_own_error_class():
    from verimod.report.tables import varm_scores_table
    from verimod.tasks.varm.errors import EXCERPT, analyse_errors
    from verimod.tasks.varm.uncertainty import scorer_of

    reference = VarmReference.model_validate(
        {"id": "r", "text": "t", "target": "小县城公务员", "target_type": "group", "target_explicitness": "explicit",
         "stance": "attack_or_endorse", "label": "harmful", "category": "status_occupation"}
    )  # fmt: skip
    full = rationale()
    cut = "铺垫" * EXCERPT + full[: full.index("[S:")]  # ends before the stance anchor
    scorer = VarmScorer()
    items = [
        scorer.add("a", reference, cut, finish_reason="length"),  # cut, unparsed: truncated
        scorer.add("b", reference, cut, finish_reason="stop"),  # same text, ended on its own: parser's class
        scorer.add("c", reference, full, finish_reason="length"),  # cut but complete: scored as usual
        scorer.add("d", reference, None),
    ]
    assert [i.error_class for i in items] == ["truncated", "missing_anchor", None, "missing_prediction"]
    assert "token limit" in items[0].detail and "missing" in items[0].detail  # the parser's detail is kept
    assert items[2].status == "ok" and items[2].j == 1 and items[0].truncated and items[2].truncated
    assert items[0].to_dict()["finish_reason"] == "length"
    scores = scorer.scores()
    assert scores.n_parsed == 1 and scores.n_truncated == 2
    assert scores.error_classes == {"missing_anchor": 1, "missing_prediction": 1, "truncated": 1}
    # re-scoring the stored items keeps the class; the example shows where the output was cut
    references = [reference] * 4
    analysis = analyse_errors(references, items, scorer_of(references, items))
    truncated = next(p for p in analysis.parse_errors if p.error_class == "truncated")
    assert truncated.count == 1 and truncated.examples[0].output == "…" + cut[-EXCERPT:]
    missing = next(p for p in analysis.parse_errors if p.error_class == "missing_anchor")
    assert missing.examples[0].output == cut[:EXCERPT]
    rows = [str(cell) for column in varm_scores_table(scores).columns for cell in column._cells]
    assert "unparsed: truncated" in rows and "cut at --max-tokens (parsed or not)" in rows
