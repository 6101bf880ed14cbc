import csv
import random
from collections import Counter

import pytest

from verimod.data.neardup import components, near_duplicate_pairs
from verimod.data.split import resolve_sizes, split_records, strata_of

LABELS = ["harmful", "non_harmful"]
CATEGORIES = ["gender", "region_ethnicity", "sogi", "non_attack"]


def distinct(n, seed=0):
    rng = random.Random(seed)
    return ["".join(chr(0x4E00 + rng.randrange(6000)) for _ in range(20)) for _ in range(n)]


def corpus(n, seed=0, duplicates=40):
    """``n`` distinct random texts with strata, plus near-duplicate variants of some of them."""
    rng = random.Random(seed)
    alphabet = [chr(0x4E00 + k) for k in range(0, 6000, 3)]
    texts, strata = [], []
    for i in range(n):
        label = rng.choices(LABELS, [55, 45])[0]
        category = rng.choice(CATEGORIES[:3]) if label == "harmful" else "non_attack"
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(15, 40))) + str(i))
        strata.append((label, category))
    for _ in range(duplicates):
        k = rng.randrange(n)
        texts.append(texts[k] + "！")  # fuzz.ratio ≥ 95 for these lengths
        strata.append(strata[k])
    return texts, strata


def test_resolve_sizes():
    assert resolve_sizes([5600, 800, 1600], 8000) == [5600, 800, 1600]
    assert resolve_sizes([0.7, 0.1, 0.2], 11) == [8, 1, 2]
    assert sum(resolve_sizes([1 / 3, 1 / 3, 1 / 3], 10)) == 10
    with pytest.raises(ValueError, match="sum to"):
        resolve_sizes([10, 10], 30)
    with pytest.raises(ValueError, match="fractions"):
        resolve_sizes([0.5, 0.4], 30)


def test_components_stay_together_and_strata_balance():
    texts, strata = corpus(2000)
    names, report = split_records(texts, strata, [0.7, 0.1, 0.2], ["train", "dev", "test"], seed=3)
    assert Counter(names) == {"train": 1428, "dev": 204, "test": 408}
    assert report.sizes == report.requested
    for group in components(len(texts), near_duplicate_pairs(texts, 95)):
        assert len({names[i] for i in group}) == 1
    assert report.components >= 30 and report.unbalanced == []
    for split in ("train", "dev", "test"):
        for stratum, share in report.shares_pp[split].items():
            assert abs(share - report.overall_pp[stratum]) <= 1.0


def test_groups_stay_together_with_near_duplicates():
    texts, strata = corpus(600, seed=5)
    rng = random.Random(9)
    groups = [f"post-{rng.randrange(120)}" if rng.random() < 0.8 else None for _ in texts]
    names, report = split_records(texts, strata, [0.7, 0.1, 0.2], ["train", "dev", "test"], seed=2, groups=groups)
    by_group: dict[str, set[str]] = {}
    for key, name in zip(groups, names, strict=True):
        if key is not None:
            by_group.setdefault(key, set()).add(name)
    assert by_group and all(len(splits) == 1 for splits in by_group.values())
    for group in components(len(texts), near_duplicate_pairs(texts, 95)):
        assert len({names[i] for i in group}) == 1
    assert sum(report.sizes.values()) == len(texts)
    with pytest.raises(ValueError, match="group key"):
        split_records(texts, strata, [0.5, 0.5], ["a", "b"], groups=groups[:-1])


def test_deterministic_per_seed():
    texts, strata = corpus(500, seed=1)
    first = split_records(texts, strata, [400, 100, 40], ["a", "b", "c"], seed=7)[0]
    assert first == split_records(texts, strata, [400, 100, 40], ["a", "b", "c"], seed=7)[0]
    assert first != split_records(texts, strata, [400, 100, 40], ["a", "b", "c"], seed=8)[0]


def test_strata_that_cannot_be_balanced_are_reported():
    texts = distinct(20)
    strata = [("rare",)] + [("common",)] * 19
    names, report = split_records(texts, strata, [10, 10], ["x", "y"], seed=0, tolerance_pp=1.0)
    assert Counter(names) == {"x": 10, "y": 10}
    rare_split = names[0]
    drifts = {(d.split, d.stratum): d.drift_pp for d in report.unbalanced}
    assert drifts[(rare_split, "rare")] == pytest.approx(5.0)  # 10 % of the split vs 5 % overall


def test_a_big_component_goes_whole():
    texts = ["完全一样的重复评论文本内容" for _ in range(15)] + distinct(85, seed=2)
    strata = [("a",)] * 100
    names, report = split_records(texts, strata, [80, 20], ["train", "test"], seed=0)
    assert len({names[i] for i in range(15)}) == 1 and report.largest_component == 15
    assert report.sizes == {"train": 80, "test": 20}


def test_strata_of_handles_missing_values():
    assert strata_of([{"label": "harmful"}, {}], ["label", "category"]) == [("harmful", "∅"), ("∅", "∅")]


def test_real_cold_split(shared_data):
    with open(shared_data / "cold" / "test.csv", encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    texts = [r["TEXT"] for r in rows]
    strata = [(r["label"], r["topic"]) for r in rows]
    names, report = split_records(texts, strata, [0.7, 0.1, 0.2], ["train", "dev", "test"], seed=0)
    assert sum(report.sizes.values()) == len(rows) and report.sizes == report.requested
    for group in components(len(texts), near_duplicate_pairs(texts, 95)):
        assert len({names[i] for i in group}) == 1
    assert report.unbalanced == []
