import json

import pytest

from verimod.tasks.varm.bundled import BUNDLED, bundled_path, load_bundled
from verimod.tasks.varm.io import load_references, reference_problems
from verimod.tasks.varm.starter import load_starter, starter_path


def test_starter_by_name_equals_the_starter_loader():
    assert bundled_path("starter") == starter_path()
    assert [r.id for r in load_bundled("starter", "test")] == [r.id for r in load_starter("test")]
    assert len(load_references("starter")) == len(load_starter())


def test_an_existing_path_of_that_name_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    record = {"id": "x", "text": "一条评论", "label": "non_harmful"}
    (tmp_path / "starter").write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    assert bundled_path("starter") is None
    assert [r.id for r in load_references("starter")] == ["x"]


def test_unknown_names_and_splits_are_refused():
    assert bundled_path("varm-closed") is None
    with pytest.raises(ValueError, match="unknown bundled set"):
        load_bundled("varm-closed")
    with pytest.raises(ValueError, match="unknown split"):
        load_bundled("starter", "validation")


def test_every_bundled_set_validates_with_split_checks():
    from verimod.tasks.varm.dataset_checks import SplitChecks

    for name in BUNDLED:
        count, problems = reference_problems(name, splits=SplitChecks(threshold=95.0, max_drift_pp=5.0))
        assert count > 0 and problems == [], (name, problems[:3])


def test_drift_p_value_equals_statsmodels():
    from statsmodels.stats.proportion import proportions_ztest

    from verimod.tasks.varm.dataset_checks import two_proportion_p_value

    for a, n_a, b, n_b in [(36, 415, 187, 2685), (80, 200, 20, 200), (5, 9, 1, 30), (0, 10, 3, 40)]:
        expected = proportions_ztest([a, b], [n_a, n_b])[1]
        assert abs(two_proportion_p_value(a, n_a, b, n_b) - expected) < 1e-12
    assert two_proportion_p_value(0, 10, 0, 20) == 1.0 and two_proportion_p_value(3, 0, 1, 5) == 1.0
