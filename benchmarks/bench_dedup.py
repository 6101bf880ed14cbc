"""Exact near-duplicate join (``verimod.data.neardup``) against brute-force RapidFuzz.

    python benchmarks/bench_dedup.py                   # both parts
    python benchmarks/bench_dedup.py --part cold       # COLD vs brute force only
    python benchmarks/bench_dedup.py --part large --n 1000000 --check-rows 200

Part 1 (``cold``): all 37,480 COLD texts (../shared/data/cold/{train,dev,test}.csv, UTF-8 with
BOM, column TEXT, NFKC-normalised). Brute force is one ``process.cdist(texts, texts,
scorer=fuzz.ratio, score_cutoff=t, workers=-1)`` call (a 37,480² float32 matrix: 5.6 GB); its
upper triangle (the entries RapidFuzz accepts: non-zero) is compared with
``near_duplicate_pairs`` — pairs, and scores at cdist's float32 — and the time ratio printed.
``near_duplicate_pairs`` runs with ``workers=1`` (one thread), brute force on all cores.

Part 2 (``large``): COLD plus seeded synthetic variants of COLD texts up to ``--n`` texts. A
variant applies random substitutions, insertions and deletions to a random COLD text; inserted
and substituted characters are drawn with COLD's own character frequencies (so variants keep
the common characters that make candidate generation hard). A ``--close`` fraction of variants
get 1–2 edits (mostly near-duplicates of their source and of each other at t = 95), the rest
8–30 % of their length (not near-duplicates). Generation is not timed; peak RSS
(``resource.getrusage``) covers the whole process (each part runs in its own process).
``--check-rows R`` verifies exactness on R random rows: ``process.cdist`` of those rows against
all texts must give exactly the pairs involving them.
"""

from __future__ import annotations

import argparse
import csv
import random
import resource
import statistics
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz, process

from verimod.data.neardup import deduplicate, near_duplicate_pairs

COLD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cold"


def load_cold(folder: Path = COLD) -> list[str]:
    texts: list[str] = []
    for split in ("train", "dev", "test"):
        with (folder / f"{split}.csv").open(encoding="utf-8-sig", newline="") as handle:
            texts.extend(unicodedata.normalize("NFKC", row["TEXT"]) for row in csv.DictReader(handle))
    return texts


def accepted(block: np.ndarray, threshold: float) -> np.ndarray:
    """RapidFuzz's cutoff decision in a cdist block: a non-zero score (every entry when t = 0)."""
    return block > 0 if threshold > 0 else np.ones(block.shape, dtype=bool)


def brute_force(texts: list[str], threshold: float) -> list[tuple[int, int, float]]:
    """The upper triangle of one ``process.cdist(texts, texts, ...)`` call (float32 scores, the
    default; RapidFuzz computes a symmetric matrix once per pair)."""
    matrix = process.cdist(texts, texts, scorer=fuzz.ratio, score_cutoff=threshold, workers=-1)
    rows, cols = np.nonzero(accepted(matrix, threshold))
    upper = rows < cols
    rows, cols = rows[upper], cols[upper]
    return list(zip(rows.tolist(), cols.tolist(), matrix[rows, cols].tolist(), strict=True))


def part_cold(threshold: float, repeat: int) -> None:
    texts = load_cold()
    print(f"COLD: {len(texts):,} texts, {len(set(texts)):,} distinct, threshold {threshold:g}")
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        ours = near_duplicate_pairs(texts, threshold)
        times.append(time.perf_counter() - started)
    report = deduplicate(texts, threshold).report
    started = time.perf_counter()
    brute = brute_force(texts, threshold)
    brute_seconds = time.perf_counter() - started
    median = statistics.median(times)
    print(f"  near_duplicate_pairs (workers=1): {len(ours)} pairs, median {median:.3f} s of {repeat}", end="")
    print(f" (best {min(times):.3f} s)")
    print(f"    candidates {report.candidates:,}, compared by RapidFuzz {report.compared:,}")
    print(f"  brute-force cdist (workers=-1):    {len(brute)} pairs, {brute_seconds:.1f} s")
    same_pairs = [(i, j) for i, j, _ in ours] == [(i, j) for i, j, _ in brute]
    same_scores = np.array_equal(np.float32([s for *_, s in ours]), np.float32([s for *_, s in brute]))
    print(f"  identical pairs: {same_pairs}; identical scores (cdist's float32): {same_scores}")
    print(f"  speed-up: {brute_seconds / median:.0f}x (brute / median)")


def variant(source: str, edits: int, alphabet: str, rng: random.Random) -> str:
    chars = list(source)
    for _ in range(edits):
        kind = rng.random()
        if kind < 0.5 and chars:
            chars[rng.randrange(len(chars))] = alphabet[rng.randrange(len(alphabet))]
        elif kind < 0.75 or not chars:
            chars.insert(rng.randint(0, len(chars)), alphabet[rng.randrange(len(alphabet))])
        else:
            del chars[rng.randrange(len(chars))]
    return "".join(chars)


def synthetic(n: int, close: float, seed: int) -> list[str]:
    cold = load_cold()
    alphabet = "".join(cold)  # drawing a random position = drawing with COLD's character frequencies
    rng = random.Random(seed)
    texts = list(cold)
    while len(texts) < n:
        source = cold[rng.randrange(len(cold))]
        light = rng.random() < close
        edits = rng.randint(1, 2) if light else max(1, round(len(source) * rng.uniform(0.08, 0.30)))
        texts.append(variant(source, edits, alphabet, rng))
    rng.shuffle(texts)
    return texts[:n]


def check_rows(texts: list[str], pairs: list[tuple[int, int, float]], threshold: float, rows: int, seed: int) -> bool:
    rng = random.Random(seed + 1)
    sample = sorted(rng.sample(range(len(texts)), rows))
    chosen = set(sample)
    expected = set()
    block = process.cdist(
        [texts[i] for i in sample], texts, scorer=fuzz.ratio, score_cutoff=threshold, dtype=np.float64, workers=-1
    )
    for r, c in zip(*np.nonzero(accepted(block, threshold)), strict=True):
        i, j = sample[int(r)], int(c)
        if i != j:
            expected.add((min(i, j), max(i, j), float(block[r, c])))
    got = {p for p in pairs if p[0] in chosen or p[1] in chosen}
    return got == expected


def part_large(n: int, threshold: float, close: float, seed: int, workers: int, rows: int) -> None:
    started = time.perf_counter()
    texts = synthetic(n, close, seed)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    print(
        f"synthetic: {len(texts):,} texts ({len(set(texts)):,} distinct, mean length {lengths.mean():.1f}, "
        f"max {lengths.max()}), close fraction {close}, seed {seed}; generated in {time.perf_counter() - started:.1f} s"
    )
    started = time.perf_counter()
    pairs = near_duplicate_pairs(texts, threshold, workers=workers)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"  near_duplicate_pairs (threshold {threshold:g}, workers={workers}): {len(pairs):,} pairs in {seconds:.1f} s"
    )
    print(f"  peak RSS {peak:,.0f} MiB (whole process, generation included)")
    if rows:
        started = time.perf_counter()
        ok = check_rows(texts, pairs, threshold, rows, seed)
        print(f"  exact on {rows} random rows vs cdist(rows, all): {ok} ({time.perf_counter() - started:.1f} s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["cold", "large", "both"], default="both")
    parser.add_argument("--threshold", type=float, default=95.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--close", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=-1)
    parser.add_argument("--check-rows", type=int, default=0)
    args = parser.parse_args(argv)
    if not COLD.is_dir():
        sys.exit(f"COLD data folder {COLD} is absent")
    if args.part == "both":  # one process per part, so that each peak RSS is its own
        rest = [arg for arg in (argv if argv is not None else sys.argv[1:]) if not arg.startswith("--part")]
        for part in ("cold", "large"):
            subprocess.run([sys.executable, __file__, "--part", part, *rest], check=True)
    elif args.part == "cold":
        part_cold(args.threshold, args.repeat)
    else:
        part_large(args.n, args.threshold, args.close, args.seed, args.workers, args.check_rows)


if __name__ == "__main__":
    main()
