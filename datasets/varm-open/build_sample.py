"""Draw the varm-open sample from COLD and SWSR (step 1 of the build; see README.md here).

Reproducible: ``python datasets/varm-open/build_sample.py [--data ../shared/data]`` writes

- ``src/verimod/resources/splits/swsr.json``: verimod's train/dev/test split of SWSR (SWSR has
  none): stratified by (label, target), near-duplicate components (fuzz.ratio ≥ 95) and all
  comments under one parent post kept in one split, seed 20261201, 70/10/20;
- ``datasets/varm-open/sample.jsonl``: the drawn comments with their source gold fields;
- ``datasets/varm-open/sample_report.json``: pool sizes, exclusions by reason, shares.

Every step uses verimod's own tools: the ``cold`` / ``swsr`` adapters, ``normalize_text`` (NFKC,
URLs removed, @-mentions anonymised, whitespace collapsed; emoji, emoticon codes, slang and
missing punctuation kept), ``split_records`` (with post groups) and the exact near-duplicate
join (``near_duplicate_pairs`` / ``cross_pairs``).

Sampling (per split, seeded): the pool of a split is COLD's file of that split plus SWSR's split;
items that near-duplicate any text of an *earlier-trained* pool are excluded (test: anything in
COLD train/dev or SWSR train/dev; dev: anything in COLD train or SWSR train), and one item per
near-duplicate component of the pool is eligible. Quotas: sources in proportion to their pooled
sizes (all files), and within a source the harmful share of the whole source (all its files);
within (source, label) the strata (COLD: topic × fine-grained label where present; SWSR: target ×
category) in proportion to the pool. Items are drawn from each stratum in seeded order.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from verimod.data.adapters import convert
from verimod.data.neardup import components, cross_pairs, near_duplicate_pairs
from verimod.data.normalize import normalize_text
from verimod.data.normalize_config import NormalizeConfig
from verimod.data.split import split_records
from verimod.tasks.varm.schema import VarmReference

SEED = 20261201
THRESHOLD = 95.0
SIZES = {"test": 1650, "dev": 415, "train": 1035}  # a small reserve over 1,600 / 400 / 1,000
SWSR_SPLIT_SHARES = (0.7, 0.1, 0.2)
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
#: NFKC, URLs removed, @-mentions → @用户, identifiers → placeholders, whitespace collapsed;
#: emoji and [emoticon] codes kept; no length, spam or duplicate filter here (sampling decides).
NORMALIZATION = NormalizeConfig(min_length=0, drop_spam=False, drop_duplicates=False, drop_symbol_only=False)


def _normalised(ref: VarmReference) -> dict[str, Any]:
    text, rules = normalize_text(ref.text, NORMALIZATION)
    context = None
    if isinstance(ref.context, str):
        context = normalize_text(ref.context, NORMALIZATION)[0] or None
    row = ref.model_dump(exclude_none=True)
    row["text"] = text
    if context:
        row["context"] = context
    row.pop("tags", None)
    row["meta"] = {**(ref.meta or {}), "normalisation": rules}
    return row


def _load(data: Path) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    cold = {
        split: [_normalised(r) for r in convert("cold", data / "cold" / f"{split}.csv").references]
        for split in ("train", "dev", "test")
    }
    swsr = [_normalised(r) for r in convert("swsr", data / "swsr" / "SexComment.csv").references]
    return cold, swsr


def _swsr_split(swsr: list[dict[str, Any]]) -> dict[str, list[str]]:
    texts = [r["text"] for r in swsr]
    strata = [(r["label"], r["meta"]["original"].get("target") or "-") for r in swsr]
    groups = [r["meta"]["original"]["weibo_id"] for r in swsr]
    names, report = split_records(
        texts,
        strata,
        SWSR_SPLIT_SHARES,
        ["train", "dev", "test"],
        seed=SEED,
        threshold=THRESHOLD,
        stratify=["label", "target"],
        groups=groups,
    )
    by_split: dict[str, list[str]] = {"train": [], "dev": [], "test": []}
    for row, name in zip(swsr, names, strict=True):
        by_split[name].append(row["id"])
        row["split"] = name
    path = ROOT / "src" / "verimod" / "resources" / "splits" / "swsr.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "_about": "verimod's split of SWSR (Jiang et al. 2022), which has none: stratified by (label, target), "
        "every near-duplicate component (RapidFuzz fuzz.ratio >= 95 after normalisation) and every parent post "
        "(weibo_id) in one split; made by datasets/varm-open/build_sample.py. Ids are the swsr adapter's "
        "(swsr-<index>).",
        "seed": SEED,
        "threshold": THRESHOLD,
        "shares": dict(zip(("train", "dev", "test"), SWSR_SPLIT_SHARES, strict=True)),
        "sizes": report.sizes,
        "unbalanced": [d.model_dump() for d in report.unbalanced],
        **by_split,
    }
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return by_split


def _stratum(row: dict[str, Any]) -> tuple[str, ...]:
    original = row["meta"]["original"]
    if row["meta"]["source"] == "cold":
        return ("cold", row["label"], original["topic"], original.get("fine-grained-label") or "-")
    return ("swsr", row["label"], original.get("target") or "-", original.get("category") or "-")


def _eligible(
    pool: list[dict[str, Any]], earlier: list[str], rng: random.Random
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Pool items that near-duplicate no earlier-trained text, one per near-duplicate component."""
    excluded: Counter[str] = Counter()
    texts = [r["text"] for r in pool]
    leaking = {i for i, _, _ in cross_pairs(texts, earlier, THRESHOLD)} if earlier else set()
    excluded["near-duplicate of an earlier-trained text"] = len(leaking)
    dropped: set[int] = set(leaking)
    for group in components(len(pool), near_duplicate_pairs(texts, THRESHOLD)):
        alive = [i for i in group if i not in leaking]
        if len(alive) > 1:
            keep = rng.choice(alive)
            for i in alive:
                if i != keep:
                    dropped.add(i)
                    excluded["near-duplicate within the pool (one kept per component)"] += 1
    empty = {i for i, t in enumerate(texts) if len(t.strip()) < 2}
    excluded["text shorter than 2 characters after normalisation"] = len(empty - dropped)
    dropped |= empty
    return [r for i, r in enumerate(pool) if i not in dropped], excluded


def _largest_remainder(weights: dict[Any, float], total: int) -> dict[Any, int]:
    exact = {k: total * w / sum(weights.values()) for k, w in weights.items()}
    counts = {k: int(v) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: (-(exact[k] - counts[k]), str(k)))[: total - sum(counts.values())]:
        counts[k] += 1
    return counts


def _draw(
    eligible: list[dict[str, Any]],
    size: int,
    source_share: dict[str, float],
    harmful_share: dict[str, float],
    rng: random.Random,
) -> list[dict[str, Any]]:
    per_source = _largest_remainder(source_share, size)
    drawn: list[dict[str, Any]] = []
    for source, n_source in per_source.items():
        per_label = _largest_remainder(
            {"harmful": harmful_share[source], "non_harmful": 1 - harmful_share[source]}, n_source
        )
        for label, n_label in per_label.items():
            cell = [r for r in eligible if r["meta"]["source"] == source and r["label"] == label]
            by_stratum: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
            for r in cell:
                by_stratum[_stratum(r)].append(r)
            quotas = _largest_remainder({k: len(v) for k, v in by_stratum.items()}, n_label)
            for key in sorted(by_stratum):
                items = sorted(by_stratum[key], key=lambda r: r["id"])
                rng.shuffle(items)
                if quotas[key] > len(items):
                    raise SystemExit(f"stratum {key} has {len(items)} items, quota {quotas[key]}")
                drawn.extend(items[: quotas[key]])
    return drawn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    rng = random.Random(SEED)
    cold, swsr = _load(args.data)
    swsr_ids = _swsr_split(swsr)
    swsr_by_split = {name: [r for r in swsr if r["split"] == name] for name in swsr_ids}
    source_size = {"cold": sum(len(v) for v in cold.values()), "swsr": len(swsr)}
    source_share = {k: v / sum(source_size.values()) for k, v in source_size.items()}
    harmful_share = {
        "cold": sum(r["label"] == "harmful" for v in cold.values() for r in v) / source_size["cold"],
        "swsr": sum(r["label"] == "harmful" for r in swsr) / source_size["swsr"],
    }
    pools = {name: cold[name] + swsr_by_split[name] for name in ("train", "dev", "test")}
    earlier = {
        "train": [],
        "dev": [r["text"] for r in pools["train"]],
        "test": [r["text"] for r in pools["train"] + pools["dev"]],
    }
    report: dict[str, Any] = {
        "seed": SEED,
        "threshold": THRESHOLD,
        "sizes": SIZES,
        "source_size": source_size,
        "source_share": source_share,
        "harmful_share_by_source": harmful_share,
        "pooled_harmful_share": sum(harmful_share[s] * source_size[s] for s in source_size) / sum(source_size.values()),
        "splits": {},
    }
    sample: list[dict[str, Any]] = []
    for name in ("test", "dev", "train"):
        eligible, excluded = _eligible(pools[name], earlier[name], rng)
        drawn = _draw(eligible, SIZES[name], source_share, harmful_share, rng)
        for row in drawn:
            row["split"] = name
        sample.extend(drawn)
        report["splits"][name] = {
            "pool": len(pools[name]),
            "excluded": dict(excluded),
            "eligible": len(eligible),
            "drawn": len(drawn),
            "harmful_share": sum(r["label"] == "harmful" for r in drawn) / len(drawn),
            "by_source": dict(Counter(r["meta"]["source"] for r in drawn)),
            "strata": {"/".join(k): v for k, v in sorted(Counter(_stratum(r) for r in drawn).items())},
        }
    out = HERE / "sample.jsonl"
    with out.open("w", encoding="utf-8") as handle:
        for row in sample:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    report["sample_sha256"] = hashlib.sha256(out.read_bytes()).hexdigest()
    (HERE / "sample_report.json").write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("pooled_harmful_share", "harmful_share_by_source")}, indent=1))
    for name, split in report["splits"].items():
        print(name, {k: split[k] for k in ("pool", "excluded", "eligible", "drawn", "harmful_share", "by_source")})


if __name__ == "__main__":
    main()
