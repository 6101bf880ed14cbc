"""Exact near-duplicate join (``verimod.data.neardup``): brute-force check, and how it grows.

    python benchmarks/bench_dedup.py --part cold                      # COLD vs brute force
    python benchmarks/bench_dedup.py --part growth --sizes 100000,300000,1000000,3000000 --thresholds 95,80
    python benchmarks/bench_dedup.py --part growth --model cold-variants --sizes 100000,300000
    python benchmarks/bench_dedup.py --part run --n 1000000 --threshold 80 --check-rows 100

Part ``cold``: all 37,480 COLD texts (``--cold``, default ../shared/data/cold: train, dev and
test, UTF-8 with BOM, column TEXT, NFKC-normalised). Brute force is one ``process.cdist(texts,
texts, scorer=fuzz.ratio, score_cutoff=t, workers=-1)`` call (a 37,480² float32 matrix: 5.6 GB);
its upper triangle (the entries RapidFuzz accepts: non-zero) is compared with
``near_duplicate_pairs`` — pairs, and scores at cdist's float32 — and the time ratio printed.

Part ``growth``: for each threshold and size, one ``deduplicate`` call in its own process (so
the peak RSS is that run's), printing texts, distinct texts, pairs, candidates (pairs the prefix
index produces after its length, position and offset tests), pairs compared by RapidFuzz,
wall and CPU seconds (the process's own: the fair figure on a shared machine; RapidFuzz runs
in one thread with the default ``--workers 1``) and peak RSS, and the growth exponent
log(c₂/c₁)/log(n₂/n₁) of candidates and pairs between consecutive sizes. Generation is not
timed. Corpus models (``--model``):

- ``fresh`` (default): a corpus whose near-duplicates per text do not grow with its size, as in
  a real one. Each *source* is a COLD text whose characters are relabelled within bands of 64
  characters of similar COLD frequency (a relabelling drawn per source): it keeps the text's
  length, repetitions and character-frequency profile — common characters stay common — but is
  new content with new bigrams, as the next thousand comments of a platform would be. Each
  source then gets k copies, P(k) = 2^−(k+1) (mean 1), each a *variant*: with probability 1/2
  1–2 edits (a near-duplicate at t = 95 for most lengths), else edits on 8–30 % of its length;
  inserted and substituted characters are drawn with COLD's character frequencies.
- ``cold-variants`` (the model of the first benchmark): COLD itself plus variants of random COLD
  texts (10 % with 1–2 edits, 90 % with 8–30 %). Every text beyond 37,480 is a copy of one of
  37,480 sources, so the copies per source grow linearly with n: the qualifying pairs grow as
  n^1.4 (t = 95) to n^1.8 (t = 80), and the same-source near misses — copies just past the
  threshold that share their rarest grams — as n², which no prefix filter can tell apart from
  pairs. At 1M it is one data set copied 27 times over, not a growing corpus.

Part ``run``: one ``near_duplicate_pairs`` call on a ``--model`` corpus of ``--n`` texts with
``--check-rows R``: exactness on R random rows (``process.cdist`` of those rows against all
texts must give exactly the pairs involving them).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
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
BAND = 64


def load_cold(folder: Path) -> list[str]:
    texts: list[str] = []
    for split in ("train", "dev", "test"):
        with (folder / f"{split}.csv").open(encoding="utf-8-sig", newline="") as handle:
            texts.extend(unicodedata.normalize("NFKC", row["TEXT"]) for row in csv.DictReader(handle))
    return texts


def accepted(block: np.ndarray, threshold: float) -> np.ndarray:
    """RapidFuzz's cutoff decision in a cdist block: a non-zero score (every entry when t = 0)."""
    return block > 0 if threshold > 0 else np.ones(block.shape, dtype=bool)


def brute_force(texts: list[str], threshold: float) -> list[tuple[int, int, float]]:
    """The upper triangle of one ``process.cdist(texts, texts, ...)`` call (float32 scores)."""
    matrix = process.cdist(texts, texts, scorer=fuzz.ratio, score_cutoff=threshold, workers=-1)
    rows, cols = np.nonzero(accepted(matrix, threshold))
    upper = rows < cols
    rows, cols = rows[upper], cols[upper]
    return list(zip(rows.tolist(), cols.tolist(), matrix[rows, cols].tolist(), strict=True))


def part_cold(cold: Path, threshold: float, repeat: int) -> None:
    texts = load_cold(cold)
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


def _edits(source: str, light: bool, rng: random.Random) -> int:
    return rng.randint(1, 2) if light else max(1, round(len(source) * rng.uniform(0.08, 0.30)))


def cold_variants(cold: list[str], n: int, seed: int) -> list[str]:
    alphabet = "".join(cold)  # drawing a random position = drawing with COLD's character frequencies
    rng = random.Random(seed)
    texts = list(cold)
    while len(texts) < n:
        source = cold[rng.randrange(len(cold))]
        texts.append(variant(source, _edits(source, rng.random() < 0.1, rng), alphabet, rng))
    rng.shuffle(texts)
    return texts[:n]


def fresh_sources(cold: list[str], count: int, seed: int, chunk: int = 100_000) -> list[str]:
    """``count`` COLD texts, each with its characters relabelled within frequency bands (one
    relabelling per source; see the module docstring); in chunks of sources, to keep the
    generation's memory below the join's."""
    rng = np.random.default_rng(seed)
    codes, frequency = np.unique(np.frombuffer("".join(cold).encode("utf-32-le"), dtype="<u4"), return_counts=True)
    by_frequency = codes[np.argsort(-frequency, kind="stable")]
    place = np.zeros(0x110000, dtype=np.int64)
    place[by_frequency] = np.arange(len(by_frequency))
    picks = rng.integers(0, len(cold), count).tolist()
    sources: list[str] = []
    for first in range(0, count, chunk):
        chosen = [cold[i] for i in picks[first : first + chunk]]
        lengths = np.fromiter(map(len, chosen), dtype=np.int64, count=len(chosen))
        where = place[np.frombuffer("".join(chosen).encode("utf-32-le"), dtype="<u4")]
        source = np.repeat(np.arange(first, first + len(chosen), dtype=np.uint64), lengths)
        band, index = where // BAND, where % BAND
        mixed = (source * np.uint64(0x9E3779B97F4A7C15)) ^ (band.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F))
        rotation = (mixed >> np.uint64(40)).astype(np.int64)
        size = np.minimum(BAND, len(by_frequency) - band * BAND)
        text = by_frequency[band * BAND + (index + rotation) % size].astype("<u4").tobytes().decode("utf-32-le")
        ends = np.cumsum(lengths).tolist()
        sources += [text[end - length : end] for end, length in zip(ends, lengths.tolist(), strict=True)]
    return sources


def fresh(cold: list[str], n: int, seed: int) -> list[str]:
    alphabet = "".join(cold)
    rng = random.Random(seed)
    texts: list[str] = []
    for source in fresh_sources(cold, n // 2 + 1, seed):
        texts.append(source)
        while rng.random() < 0.5:
            texts.append(variant(source, _edits(source, rng.random() < 0.5, rng), alphabet, rng))
    rng.shuffle(texts)
    return texts[:n]


def corpus(model: str, cold: Path, n: int, seed: int) -> list[str]:
    texts = load_cold(cold)
    return fresh(texts, n, seed) if model == "fresh" else cold_variants(texts, n, seed)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_growth_point(model: str, cold: Path, n: int, threshold: float, seed: int, workers: int) -> dict[str, float]:
    texts = corpus(model, cold, n, seed)
    started, cpu = time.perf_counter(), time.process_time()
    report = deduplicate(texts, threshold, workers=workers).report
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    return {
        "n": n,
        "threshold": threshold,
        "distinct": report.distinct,
        "pairs": report.pairs,
        "candidates": report.candidates,
        "compared": report.compared,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "peak_mib": peak_mib(),
    }


def part_growth(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    for threshold in (float(t) for t in args.thresholds.split(",")):
        print(f"model {args.model}, threshold {threshold:g}, seed {args.seed}, workers {args.workers}")
        print("        n   distinct      pairs   candidates  compared   seconds  CPU s  peak MiB  exp(cand) exp(pairs)")
        previous: dict[str, float] | None = None
        for n in sizes:
            command = [sys.executable, __file__, "--part", "point", "--model", args.model, "--cold", str(args.cold)]
            command += ["--n", str(n), "--threshold", str(threshold), "--seed", str(args.seed)]
            command += ["--workers", str(args.workers)]
            row = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
            growth = ""
            if previous is not None:
                step = math.log(n / previous["n"])
                growth = f"{math.log(row['candidates'] / previous['candidates']) / step:10.2f}"
                growth += f"  {math.log(row['pairs'] / previous['pairs']) / step:10.2f}"
            print(
                f"{n:>9,} {row['distinct']:>10,} {row['pairs']:>10,} {row['candidates']:>12,} {row['compared']:>9,}"
                f" {row['seconds']:>9.1f} {row['cpu_seconds']:>6.1f} {row['peak_mib']:>9,.0f} {growth}",
                flush=True,
            )
            previous = row


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


def part_run(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    texts = corpus(args.model, args.cold, args.n, args.seed)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    print(
        f"{args.model}: {len(texts):,} texts ({len(set(texts)):,} distinct, mean length {lengths.mean():.1f}, "
        f"max {lengths.max()}), seed {args.seed}; generated in {time.perf_counter() - started:.1f} s"
    )
    started = time.perf_counter()
    pairs = near_duplicate_pairs(texts, args.threshold, workers=args.workers)
    seconds = time.perf_counter() - started
    print(f"  near_duplicate_pairs (threshold {args.threshold:g}, workers={args.workers}): ", end="")
    print(f"{len(pairs):,} pairs in {seconds:.1f} s; peak RSS {peak_mib():,.0f} MiB (whole process)")
    if args.check_rows:
        started = time.perf_counter()
        ok = check_rows(texts, pairs, args.threshold, args.check_rows, args.seed)
        elapsed = time.perf_counter() - started
        print(f"  exact on {args.check_rows} random rows vs cdist(rows, all): {ok} ({elapsed:.1f} s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--part", choices=["cold", "growth", "run", "point"], default="growth")
    parser.add_argument("--cold", type=Path, default=COLD, help="the COLD folder (train/dev/test.csv)")
    parser.add_argument("--model", choices=["fresh", "cold-variants"], default="fresh")
    parser.add_argument("--threshold", type=float, default=95.0)
    parser.add_argument("--thresholds", default="95,80")
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--check-rows", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.cold.is_dir():
        sys.exit(f"COLD data folder {args.cold} is absent")
    if args.part == "cold":
        part_cold(args.cold, args.threshold, args.repeat)
    elif args.part == "growth":
        part_growth(args)
    elif args.part == "point":
        print(json.dumps(one_growth_point(args.model, args.cold, args.n, args.threshold, args.seed, args.workers)))
    else:
        part_run(args)


if __name__ == "__main__":
    main()
