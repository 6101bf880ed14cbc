import dataclasses
import json
import math
import random

import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from tests.tasks.toxirex.helpers import FIXTURES, annotation, full, no_implication, not_toxic
from verimod.core.errors import InputError
from verimod.tasks.toxirex.agreement import (
    AGREEMENT_VARIABLES,
    DisagreementRow,
    disagreement_counts,
    disagreement_rows,
    ratings_matrix,
    read_sheet,
    variable_agreement,
    write_sheet,
)
from verimod.tasks.toxirex.io import load_annotations

ANNOTATORS = ("a1", "a2", "a3")


def _random_annotations(n_comments: int, seed: int):
    """Correlated annotations: each annotator copies a per-comment 'truth' or deviates."""
    rng = random.Random(seed)
    out = []
    for i in range(n_comments):
        truth = {
            "kind": rng.choice(["none", "noimpl", "full", "full", "full"]),
            "category": rng.choice(["Situation", "Quality", "Behavior"]),
            "polarity": rng.choice(["Negative", "Positive"]),
            "time": rng.choice([("past",), ("present",), ("present", "future")]),
            "belief": rng.choice(["Low", "High", "Very high", "Not applicable"]),
        }
        for annotator in ANNOTATORS:
            t = {k: (v if rng.random() < 0.7 else None) for k, v in truth.items()}
            kind = t["kind"] or rng.choice(["none", "noimpl", "full"])
            if kind == "none":
                data = not_toxic()
            elif kind == "noimpl":
                data = no_implication()
            else:
                data = full(
                    category=t["category"] or rng.choice(["Situation", "Quality", "Behavior"]),
                    polarity=t["polarity"] or rng.choice(["Negative", "Positive"]),
                    temporality=t["time"] or rng.choice([("past",), ("future",)]),
                    attitudes=(t["belief"] or rng.choice(["Medium", "Very low"]), "Low", "Low", "Low", "Low"),
                )
            out.append(annotation(f"c{i:03d}", annotator, data))
    return out


def _statsmodels(matrix):
    table, _ = aggregate_raters([[str(v) for v in row] for row in matrix])
    return sm_fleiss_kappa(table, method="fleiss")


@pytest.mark.parametrize("missing", ["category", "complete"])
def test_fleiss_kappa_per_variable_matches_statsmodels(missing):
    annotations = _random_annotations(80, seed=1)
    rows = {r.variable: r for r in variable_agreement(annotations, missing=missing, n_resamples=200)}
    checked = 0
    for variable in ("toxicity", "hasImplication", "implCategory", "implPolarity", "authorBelief"):
        matrix = ratings_matrix(annotations, variable, missing)
        assert all(len(r) == 3 and None not in r for r in matrix)
        assert rows[variable].n_items == len(matrix)
        assert rows[variable].kappa == pytest.approx(_statsmodels(matrix))
        assert rows[variable].low <= rows[variable].kappa <= rows[variable].high
        checked += 1
    for label in ("past", "present", "future"):
        name = f"implTemporality:{label}"
        matrix = ratings_matrix(annotations, "implTemporality", missing, member=label)
        assert rows[name].kappa == pytest.approx(_statsmodels(matrix))
    assert checked == 5


def test_missing_modes_choose_different_comments():
    annotations = _random_annotations(40, seed=2)
    complete = {r.variable: r.n_items for r in variable_agreement(annotations, ["implCategory"], "complete", 10)}
    pairable = {r.variable: r.n_items for r in variable_agreement(annotations, ["implCategory"], "pairable", 10)}
    category = {r.variable: r.n_items for r in variable_agreement(annotations, ["implCategory"], "category", 10)}
    assert complete["implCategory"] <= pairable["implCategory"] <= category["implCategory"] == 40
    with pytest.raises(ValueError, match="no κ"):
        variable_agreement(annotations, ["implTokens"])
    with pytest.raises(ValueError, match="missing must be"):
        variable_agreement(annotations, missing="drop")  # type: ignore[arg-type]


def test_fixture_agreement():
    annotations = load_annotations(FIXTURES / "annotations.jsonl")
    rows = {r.variable: r for r in variable_agreement(annotations, n_resamples=100)}
    assert set(rows) >= set(AGREEMENT_VARIABLES) - {"implTemporality"}
    matrix = ratings_matrix(annotations, "toxicity")
    assert rows["toxicity"].n_items == 11 and rows["toxicity"].kappa == pytest.approx(_statsmodels(matrix))
    # implCategory: the comments all three annotators annotated in full (zh-01-c2, zh-01-c4, en-01-c2, nl-01-c2)
    assert rows["implCategory"].n_items == 4
    assert rows["other"].n_items == 0 and math.isnan(rows["other"].kappa)


# ---------------------------------------------------------------- disagreement sheet


def test_disagreement_rows_on_the_fixture():
    annotations = load_annotations(FIXTURES / "annotations.jsonl")
    rows = disagreement_rows(annotations)
    keys = {(r.comment_id, r.variable) for r in rows}
    assert ("zh-01-c2", "implCategory") in keys
    row = next(r for r in rows if (r.comment_id, r.variable) == ("zh-01-c2", "implTemporality"))
    assert row.annotations == {"a1": "present", "a2": "present", "a3": "present|future"}
    other = next(r for r in rows if (r.comment_id, r.variable) == ("zh-01-c2", "other"))
    assert other.annotations == {"a1": "<not reached>", "a2": "<not reached>", "a3": "author"}
    assert all(r.category is None for r in rows)
    assert not any(r.comment_id in ("zh-01-c3", "en-01-c1", "en-01-c3") for r in rows)  # gates differ
    assert ("zh-01-c2", "implPolarity") not in keys  # all agree
    assert not any(r.variable.endswith("Tokens") for r in rows)
    everything = disagreement_rows(annotations, require_gate_agreement=False)
    assert ("zh-01-c3", "implCategory") in {(r.comment_id, r.variable) for r in everything}


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_sheet_round_trip(tmp_path, suffix):
    rows = disagreement_rows(load_annotations(FIXTURES / "annotations.jsonl"))
    rows.append(DisagreementRow("x-1", "implTopic", {"a1": 'say "hi"; a=b, c', "a2": "素质低"}))
    path = tmp_path / f"sheet{suffix}"
    write_sheet(rows, path)
    first_line = 2 if suffix == ".csv" else 1  # the CSV header is line 1
    with pytest.raises(InputError, match=rf"sheet\{suffix}:{first_line}: field 'category': missing"):
        read_sheet(path)
    assert read_sheet(path, require_category=False) == rows
    filled = [dataclasses.replace(r, category="subjective", note="两种理解都成立") for r in rows]
    write_sheet(filled, path)
    assert read_sheet(path) == filled


def _write(path, lines):
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ('"c1","implCategory","{""a1"": ""Quality""}","subjectiv",""\n', "category", "did you mean 'subjective'"),
        ('"c1","implCatgory","{""a1"": ""Quality""}","error",""\n', "variable", "did you mean 'implCategory'"),
        ('"c1","implCategory","a1=Quality","error",""\n', "annotations", "JSON object"),
        ('"c1","implCategory","{}","error",""\n', "annotations", "object of annotator"),
        ('"","implCategory","{""a1"": ""Q""}","error",""\n', "comment_id", "missing"),
    ],
)
def test_bad_sheet_lines_are_one_line_errors(tmp_path, line, field, message):
    path = _write(tmp_path / "s.csv", ["comment_id,variable,annotations,category,note\n", line])
    with pytest.raises(InputError) as info:
        read_sheet(path)
    assert info.value.problem.line == 2 and info.value.problem.field == field
    assert message in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith(f"{path}:2: field '{field}'")


def test_duplicate_rows_and_unknown_columns(tmp_path):
    row = {"comment_id": "c1", "variable": "subject", "annotations": {"a1": "author"}, "category": "error"}
    path = _write(tmp_path / "s.jsonl", [json.dumps(row) + "\n", json.dumps(row) + "\n"])
    with pytest.raises(InputError, match=r"s\.jsonl:2: field 'variable': .*already on line 1"):
        read_sheet(path)
    path = _write(tmp_path / "t.jsonl", [json.dumps({**row, "catgory": "x"}) + "\n"])
    with pytest.raises(InputError, match="unknown column"):
        read_sheet(path)


def test_disagreement_counts():
    rows = [
        DisagreementRow("c1", "implCategory", {}, "orthogonal"),
        DisagreementRow("c1", "subject", {}, "subjective"),
        DisagreementRow("c2", "implCategory", {}, "conditional"),
        DisagreementRow("c2", "implCategory", {}, "subjective"),
        DisagreementRow("c3", "implCategory", {}, "error"),
        DisagreementRow("c3", "subject", {}, None),
    ]
    counts = disagreement_counts(rows)
    assert counts.by_variable["implCategory"] == {
        "error": 1,
        "orthogonal": 1,
        "conditional": 1,
        "subjective": 1,
        "disjunct": 0,
    }
    assert counts.total["subjective"] == 2 and counts.uncategorised == 1
    assert counts.shares == {"error": 0.25, "orthogonal": 0.25, "subjective": 0.5, "disjunct": 0.0}
    assert counts.to_dict()["shares_excluding_conditional"]["subjective"] == 0.5


def test_bootstrap_resamples_with_undefined_kappa_are_counted_and_mark_the_interval():
    """Nine comments all three annotators call not toxic, one they split on: a resample without
    that comment has one category only, where κ is undefined. Those resamples are counted — the
    number is the share of resamples drawing none of its copies, recounted here from the same
    seeded draws — and the interval is marked."""
    import numpy as np

    annotations = [annotation(f"c{i}", a, not_toxic()) for i in range(9) for a in ANNOTATORS]
    annotations += [annotation("c9", "a1", no_implication()), annotation("c9", "a2", no_implication()),
                    annotation("c9", "a3", not_toxic())]  # fmt: skip
    (row,) = variable_agreement(annotations, ["toxicity"], n_resamples=1000, seed=7)
    draws = np.random.default_rng(7).integers(0, 10, size=(1000, 10))
    expected = int((~(draws == 9).any(axis=1)).sum())  # c9 is the last comment in id order
    assert 250 < expected < 450  # ≈ (9/10)^10 of 1000
    assert (row.n_undefined, row.n_resamples) == (expected, 1000) and row.interval_marked
    assert row.kappa == pytest.approx(_statsmodels(ratings_matrix(annotations, "toxicity")))
    assert row.low < row.high
    (clean,) = variable_agreement(_random_annotations(80, seed=1), ["toxicity"], n_resamples=200)
    assert clean.n_undefined == 0 and not clean.interval_marked
