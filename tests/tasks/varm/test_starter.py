"""The bundled starter set meets its contract (size, balance, coverage, validity, no near-duplicates)."""

import re
from collections import Counter
from itertools import combinations

from rapidfuzz import fuzz

from verimod.tasks.varm.codebook import HARD_NEGATIVE_TAGS, VOCABULARY
from verimod.tasks.varm.io import reference_problems
from verimod.tasks.varm.starter import load_starter, starter_path

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
STARTER = load_starter()


def test_passes_validate():
    count, problems = reference_problems(starter_path())
    assert problems == [] and count == len(STARTER) >= 600


def test_splits_sizes_and_harmful_share():
    splits = Counter(r.split for r in STARTER)
    assert 400 <= splits["train"] <= 460 and 55 <= splits["dev"] <= 70 and 110 <= splits["test"] <= 135
    for split in ("train", "dev", "test"):
        items = [r for r in STARTER if r.split == split]
        share = sum(r.label == "harmful" for r in items) / len(items)
        assert 0.52 <= share <= 0.58, (split, share)


def test_coverage_of_categories_values_and_hard_negatives():
    categories = Counter(r.category for r in STARTER if r.label == "harmful")
    assert set(categories) == set(VOCABULARY["category"]) - {"non_attack"}
    assert min(categories.values()) >= 40
    for split in ("dev", "test"):
        assert {r.category for r in STARTER if r.split == split} == set(VOCABULARY["category"])
    for field in ("target_type", "target_explicitness", "stance"):
        assert {getattr(r, field) for r in STARTER} == set(VOCABULARY[field])
    non_harmful = [r for r in STARTER if r.label == "non_harmful"]
    hard = [r for r in non_harmful if HARD_NEGATIVE_TAGS & set(r.tags)]
    assert len(hard) / len(non_harmful) >= 0.30
    assert {t for r in hard for t in r.tags} >= HARD_NEGATIVE_TAGS


def test_texts_and_rationales_meet_the_length_rules():
    for r in STARTER:
        assert len(r.text) >= 15, r.id
        assert 80 <= len(HAN.findall(r.cot)) <= 180, r.id
        assert r.tags, r.id


def test_no_exact_or_near_duplicate_texts():
    texts = [r.text for r in STARTER]
    assert len(set(texts)) == len(texts)
    worst = max(fuzz.ratio(a, b) for a, b in combinations(texts, 2))
    assert worst < 95


def test_load_starter_rejects_unknown_split():
    import pytest

    with pytest.raises(ValueError, match="unknown split"):
        load_starter("validation")


def test_passes_the_split_checks():
    from verimod.tasks.varm.dataset_checks import SplitChecks

    _, problems = reference_problems(starter_path(), splits=SplitChecks())
    assert problems == []
