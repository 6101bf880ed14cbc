"""Time of a leakage-free stratified split, beside the near-duplicate join it starts with.

On the 37,480 COLD texts (../shared/data/cold, all three files; strata: label × topic) when
present, else on 37,480 synthetic texts with duplicated variants. Sizes 70/10/20 %.

    python benchmarks/bench_split.py
"""

from __future__ import annotations

import csv
import random
import time
from pathlib import Path

from verimod.data.neardup import near_duplicate_pairs
from verimod.data.split import split_records

COLD = Path(__file__).resolve().parents[2] / "shared" / "data" / "cold"


def load() -> tuple[list[str], list[tuple[str, ...]], str]:
    if COLD.is_dir():
        texts, strata = [], []
        for name in ("train", "dev", "test"):
            with open(COLD / f"{name}.csv", encoding="utf-8-sig", newline="") as handle:
                for row in csv.DictReader(handle):
                    texts.append(row["TEXT"])
                    strata.append((row["label"], row["topic"]))
        return texts, strata, "COLD (37,480 texts)"
    rng = random.Random(0)
    texts = ["".join(chr(0x4E00 + rng.randrange(6000)) for _ in range(rng.randint(10, 60))) for _ in range(36_000)]
    texts += [t + "！" for t in rng.sample(texts, 1_480)]
    strata = [(rng.choice("01"), rng.choice(["race", "gender", "region"])) for _ in texts]
    return texts, strata, "synthetic (37,480 texts)"


def main() -> None:
    texts, strata, what = load()
    t0 = time.perf_counter()
    pairs = near_duplicate_pairs(texts, 95)
    join = time.perf_counter() - t0
    t0 = time.perf_counter()
    _, report = split_records(texts, strata, [0.7, 0.1, 0.2], ["train", "dev", "test"], seed=0)
    total = time.perf_counter() - t0
    print(
        f"{what}: split in {total:.2f} s ({len(pairs)} near-duplicate pairs, {report.components} components; "
        f"the join alone {join:.2f} s = {100 * join / total:.0f}% of it); sizes {report.sizes}; "
        f"{len(report.unbalanced)} stratum cell(s) outside ±{report.tolerance_pp:g} pp"
    )


if __name__ == "__main__":
    main()
