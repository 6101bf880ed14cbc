import json
import math
import random

import krippendorff
import numpy as np
import pytest
from rich.console import Console
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from tests.conftest import write_lines
from verimod.core.errors import InputError
from verimod.stats import char_f1
from verimod.tasks.varm.agreement import (
    AgreementReport,
    agreement_report,
    agreement_rows,
    agreement_table,
    pairwise_table,
    read_annotations,
)
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, VOCABULARY

ANNOTATORS = ("ann1", "ann2", "ann3")
TARGETS = ("小县城公务员", "县城公务员们", "老师", "no_clear_target", "河南人")


def _annotations(n_items: int, seed: int, drop: float = 0.1) -> list[dict]:
    """Long-layout rows: correlated annotations, some fields left out, some items single-rated."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_items):
        truth = {f: rng.choice(VOCABULARY[f]) for f in DISCRETE_FIELDS}
        target = rng.choice(TARGETS)
        annotators = ANNOTATORS if i % 7 else ANNOTATORS[:1]
        for a in annotators:
            row: dict = {"id": f"item{i:04d}", "annotator": a, "text": f"文本{i}"}
            if rng.random() > drop:
                row["target"] = target if rng.random() < 0.7 else rng.choice(TARGETS)
            for f in DISCRETE_FIELDS:
                if rng.random() > drop:
                    row[f] = truth[f] if rng.random() < 0.7 else rng.choice(VOCABULARY[f])
            rows.append(row)
    return rows


def _nested(rows: list[dict]) -> list[dict]:
    items: dict[str, dict] = {}
    for row in rows:
        item = items.setdefault(row["id"], {"id": row["id"], "text": row["text"], "annotations": []})
        item["annotations"].append({k: v for k, v in row.items() if k not in ("id", "text")})
    return list(items.values())


def _matrix(rows: list[dict], field: str) -> np.ndarray:
    """Items × annotators codes (NaN missing), items sorted by id."""
    ids = sorted({r["id"] for r in rows})
    matrix = np.full((len(ids), len(ANNOTATORS)), np.nan)
    for r in rows:
        if field in r:
            matrix[ids.index(r["id"]), ANNOTATORS.index(r["annotator"])] = VOCABULARY[field].index(r[field])
    return matrix


def test_long_and_nested_layouts_and_line_order_give_identical_reports(tmp_path):
    rows = _annotations(60, seed=1)
    long_report = agreement_report(write_lines(tmp_path / "long.jsonl", rows), bootstrap=200, seed=4)
    nested_report = agreement_report(write_lines(tmp_path / "nested.jsonl", _nested(rows)), bootstrap=200, seed=4)
    shuffled = rows[:]
    random.Random(0).shuffle(shuffled)
    shuffled_report = agreement_report(write_lines(tmp_path / "shuffled.jsonl", shuffled), bootstrap=200, seed=4)
    assert long_report == nested_report == shuffled_report
    assert long_report.model_dump_json() == nested_report.model_dump_json()
    assert read_annotations(tmp_path / "long.jsonl")[0] == "long"
    assert read_annotations(tmp_path / "nested.jsonl")[0] == "nested"


def test_report_matches_independent_implementations(tmp_path):
    rows = _annotations(80, seed=2)
    report = agreement_report(write_lines(tmp_path / "a.jsonl", rows), bootstrap=300, seed=0)
    assert (report.n_items, report.n_annotators, report.n_annotations) == (80, 3, len(rows))
    assert report.annotators == list(ANNOTATORS)
    for field_report in report.fields:
        matrix = _matrix(rows, field_report.field)
        rated = (~np.isnan(matrix)).sum(axis=1)
        assert field_report.n_annotations == int(rated.sum())
        assert field_report.n_items == int((rated >= 2).sum())
        assert field_report.n_ratings == int(rated[rated >= 2].sum())
        expected_alpha = krippendorff.alpha(matrix.T, level_of_measurement="nominal")
        assert field_report.alpha.value == pytest.approx(expected_alpha, abs=1e-12)
        for estimate in (field_report.alpha, field_report.fleiss_kappa, field_report.raw_agreement):
            assert estimate.low <= estimate.value <= estimate.high
        # Fleiss κ equals statsmodels on the items every annotator rated
        full = matrix[rated == len(ANNOTATORS)].astype(np.int64)
        full_report = agreement_report(
            write_lines(
                tmp_path / f"{field_report.field}.jsonl",
                [
                    {"id": r["id"], "annotator": r["annotator"], field_report.field: r[field_report.field]}
                    for r in rows
                    if field_report.field in r
                    and sum(field_report.field in s for s in rows if s["id"] == r["id"]) == len(ANNOTATORS)
                ],
            ),
            bootstrap=0,
        )
        expected_kappa = sm_fleiss_kappa(aggregate_raters(full, n_cat=len(VOCABULARY[field_report.field]))[0])
        got = next(f for f in full_report.fields if f.field == field_report.field)
        assert got.fleiss_kappa.value == pytest.approx(expected_kappa, abs=1e-12)
    # Cohen's κ of every pair, on the items both annotated
    for pair in report.pairs:
        matrix = _matrix(rows, pair.field)
        a = matrix[:, ANNOTATORS.index(pair.annotator_a)]
        b = matrix[:, ANNOTATORS.index(pair.annotator_b)]
        both = ~np.isnan(a) & ~np.isnan(b)
        assert pair.n_items == int(both.sum())
        assert pair.cohen_kappa == pytest.approx(cohen_kappa_score(a[both], b[both]), abs=1e-12)
        assert pair.raw_agreement == pytest.approx(float(np.mean(a[both] == b[both])))
    assert len(report.pairs) == 3 * len(DISCRETE_FIELDS)


def test_target_agreement_uses_the_no_clear_target_rule(tmp_path):
    rows = [
        {"id": 1, "annotator": "a", "target": "no_clear_target"},
        {"id": 1, "annotator": "b", "target": "no_clear_target"},  # both: 1
        {"id": 2, "annotator": "a", "target": "老师"},
        {"id": 2, "annotator": "b", "target": "no_clear_target"},  # one side: 0
        {"id": 3, "annotator": "a", "target": "小县城公务员"},
        {"id": 3, "annotator": "b", "target": "县城公务员们"},  # char F1 5/6
        {"id": 3, "annotator": "c", "target": "小县城公务员"},  # pairs: 5/6, 1, 5/6
        {"id": 4, "annotator": "a", "label": "harmful"},  # no target pair
    ]
    report = agreement_report(write_lines(tmp_path / "t.jsonl", rows), bootstrap=100)
    f1 = char_f1("小县城公务员", "县城公务员们")
    assert report.target.n_items == 3 and report.target.n_annotations == 7
    assert report.target.mean_pairwise_char_f1.value == pytest.approx((1 + 0 + (2 * f1 + 1) / 3) / 3)
    assert report.n_items == 4 and report.n_annotations == 8
    label = next(f for f in report.fields if f.field == "label")
    assert label.n_items == 0 and label.n_annotations == 1
    assert label.alpha.value is None and label.fleiss_kappa.value is None and label.alpha.low is None
    assert report.pairs == []


def test_perfect_agreement_and_a_single_category(tmp_path):
    rows = []
    for i, (label, category) in enumerate([("harmful", "gender"), ("non_harmful", "non_attack")] * 5):
        for a in ANNOTATORS:
            rows.append({"id": i, "annotator": a, "label": label, "category": category, "stance": "neutral_mention"})
    report = agreement_report(write_lines(tmp_path / "p.jsonl", rows), bootstrap=50)
    by_field = {f.field: f for f in report.fields}
    assert by_field["label"].alpha.value == 1.0 and by_field["label"].fleiss_kappa.value == 1.0
    assert by_field["label"].alpha.low == 1.0 and by_field["label"].alpha.high == 1.0
    stance = by_field["stance"]  # everyone always chose the same value: α and κ undefined
    assert stance.alpha.value is None and stance.fleiss_kappa.value is None
    assert stance.raw_agreement.value == 1.0
    assert by_field["target_type"].n_annotations == 0
    assert {p.cohen_kappa for p in report.pairs if p.field == "stance"} == {None}


def test_report_is_deterministic_per_seed_and_bootstrap_can_be_off(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", _annotations(40, seed=3))
    first = agreement_report(path, bootstrap=100, seed=7)
    assert agreement_report(path, bootstrap=100, seed=7) == first
    other = agreement_report(path, bootstrap=100, seed=8)
    assert other.fields[0].alpha.value == first.fields[0].alpha.value
    assert other.fields[0].alpha.low != first.fields[0].alpha.low
    off = agreement_report(path, bootstrap=0)
    assert off.fields[0].alpha.value == first.fields[0].alpha.value and off.fields[0].alpha.low is None
    assert AgreementReport.model_validate_json(first.model_dump_json()) == first
    with pytest.raises(ValueError, match="bootstrap"):
        agreement_report(path, bootstrap=-1)


def test_tables_render(tmp_path):
    report = agreement_report(write_lines(tmp_path / "a.jsonl", _annotations(30, seed=4)), bootstrap=50)
    console = Console(record=True, width=200)
    console.print(agreement_table(report))
    console.print(pairwise_table(report))
    text = console.export_text()
    for name in (*DISCRETE_FIELDS, "Krippendorff α", "Fleiss κ", "mean pairwise char-F1", "ann1", "ann3", "95% CI"):
        assert name in text
    rows = agreement_rows(report)
    assert [r["field"] for r in rows[:-1]] == list(DISCRETE_FIELDS)
    assert rows[0]["alpha"].count("[") == 1


def test_gb18030_file_with_encoding(tmp_path):
    path = tmp_path / "gbk.jsonl"
    rows = [{"id": 1, "annotator": a, "text": "文本", "target": "老师", "label": "harmful"} for a in "ab"]
    path.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("gb18030"))
    assert agreement_report(path, bootstrap=0, encoding="gb18030").target.mean_pairwise_char_f1.value == 1.0
    with pytest.raises(InputError, match="gb18030"):
        agreement_report(path)


LONG_OK = {"id": "x", "annotator": "a", "label": "harmful"}
NESTED_OK = {"id": "x", "annotations": [{"annotator": "a", "label": "harmful"}]}


@pytest.mark.parametrize(
    ("rows", "line", "field", "message"),
    [
        ([LONG_OK, {"id": "y", "annotator": "a", "label": "harmfull"}], 2, "label", "did you mean 'harmful'"),
        ([LONG_OK, {"id": "y", "annotator": "a", "category": "occupation"}], 2, "category", "is not one of"),
        (
            [
                NESTED_OK,
                {"id": "y", "annotations": [{"annotator": "a", "label": "harmful"}, {"annotator": "b", "stance": "x"}]},
            ],
            2,
            "annotations.1.stance",
            "is not one of",
        ),
        ([LONG_OK, {"annotator": "b", "label": "harmful"}], 2, "id", "missing required field"),
        ([LONG_OK, {"id": "x", "label": "harmful"}], 2, "annotator", "missing required field"),
        ([NESTED_OK, {"id": "y", "annotations": [{"label": "harmful"}]}], 2, "annotations.0.annotator", "missing"),
        ([NESTED_OK, {"annotations": [{"annotator": "a", "label": "harmful"}]}], 2, "id", "missing"),
        ([LONG_OK, {"id": "x", "annotator": "a", "label": "non_harmful"}], 2, "annotator", "already annotated"),
        (
            [{"id": "x", "annotations": [{"annotator": "a", "label": "harmful"}, {"annotator": "a", "stance": "x"}]}],
            1,
            "annotations.1.stance",
            "is not one of",
        ),
        (
            [
                {
                    "id": "x",
                    "annotations": [{"annotator": "a", "label": "harmful"}, {"annotator": "a", "label": "harmful"}],
                }
            ],
            1,
            "annotations.1.annotator",
            "annotator 'a' already annotated item 'x' on line 1",
        ),
        ([NESTED_OK, NESTED_OK], 2, "id", "duplicate id 'x' (first on line 1)"),
        ([LONG_OK, NESTED_OK], 2, "annotations", "do not mix layouts"),
        ([NESTED_OK, LONG_OK], 2, "annotations", "do not mix layouts"),
        ([LONG_OK, {"id": "y", "annotator": "a", "lable": "harmful"}], 2, "lable", "did you mean 'label'"),
        (
            [NESTED_OK, {"id": "y", "annotations": [{"annotator": "a", "lable": "x"}]}],
            2,
            "annotations.0.lable",
            "label",
        ),
        ([NESTED_OK, {"id": "y", "annotations": []}], 2, "annotations", "should have at least 1 item"),
        ([NESTED_OK, {"id": "y", "annotations": ["harmful"]}], 2, "annotations.0", "must be an object"),
        ([LONG_OK, {"id": "y", "annotator": "b"}], 2, None, "none of the fields"),
        ([NESTED_OK, {"id": "y", "annotations": [{"annotator": "b"}]}], 2, "annotations.0", "none of the fields"),
        ([LONG_OK, {"id": "y", "annotator": "b", "target": "  "}], 2, "target", "blank"),
        ([LONG_OK, {"id": "y", "annotator": True, "label": "harmful"}], 2, "annotator", "must be a string"),
        (
            [{**LONG_OK, "text": "一"}, {"id": "x", "annotator": "b", "text": "二", "label": "harmful"}],
            2,
            "text",
            "different text on line 1",
        ),
        ([LONG_OK, "{broken"], 2, None, "invalid JSON"),
    ],
)
def test_bad_files_raise_one_line_errors_naming_line_and_field(tmp_path, rows, line, field, message):
    path = write_lines(tmp_path / "bad.jsonl", rows)
    with pytest.raises(InputError) as err:
        agreement_report(path, bootstrap=0)
    problem = err.value.problem
    assert (problem.path, problem.line, problem.field) == (str(path), line, field)
    assert message in problem.message
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_empty_file_is_an_error(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="empty"):
        agreement_report(path)


def test_optional_keys_and_null_fields_are_accepted(tmp_path):
    rows = [
        {
            "id": 1,
            "text": "t",
            "context": ["上文"],
            "tags": ["x"],
            "split": "test",
            "meta": {"k": 1},
            "annotations": [
                {"annotator": 7, "label": "harmful", "category": None, "cot": "…", "meta": {"t": 3}},
                {"annotator": "8", "label": "harmful", "category": "gender"},
            ],
        },
    ]
    report = agreement_report(write_lines(tmp_path / "n.jsonl", rows), bootstrap=0)
    assert report.annotators == ["7", "8"]
    category = next(f for f in report.fields if f.field == "category")
    assert category.n_annotations == 1


def test_two_thousand_items_with_a_thousand_resamples(tmp_path):
    """A realistic size (its speed is measured in benchmarks, not asserted here)."""
    path = write_lines(tmp_path / "big.jsonl", _annotations(2000, seed=5, drop=0.05))
    report = agreement_report(path, bootstrap=1000, seed=0)
    assert report.n_items == 2000
    alpha = report.fields[0].alpha
    assert not math.isnan(alpha.low or math.nan) and alpha.low <= alpha.value <= alpha.high
