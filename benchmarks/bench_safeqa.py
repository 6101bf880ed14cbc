"""C-SafeQA metrics on 100,000 query–response pairs × 3 judges (synthetic, seeded), with and
without the bootstrap, the risk-leakage / high-actionability diagnostics (the actionability
detector runs on every response) and the report tables; the construction of the pydantic
objects is timed separately.

    python benchmarks/bench_safeqa.py [--n 100000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.safeqa_synthetic import random_pairs

from verimod.tasks.safeqa.metrics import judge_metrics, target_metrics
from verimod.tasks.safeqa.metrics_diagnostics import diagnostic_metrics
from verimod.tasks.safeqa.refusal import is_refusal
from verimod.tasks.safeqa.report_tables import report_tables, to_markdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    t0 = time.perf_counter()
    pairs, outputs = random_pairs(np.random.default_rng(0), args.n)
    built = time.perf_counter() - t0
    timings = {}
    for resamples in (0, 1000):
        t0 = time.perf_counter()
        target_metrics(pairs, is_refusal=is_refusal, n_resamples=resamples)
        timings[f"target ({resamples} resamples)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        judge_metrics(pairs, outputs, n_resamples=resamples)
        timings[f"judges ({resamples} resamples)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    diagnostics = diagnostic_metrics(pairs)
    timings["diagnostics (RLI, HAVR)"] = time.perf_counter() - t0
    targets = target_metrics(pairs, is_refusal=is_refusal, n_resamples=0)
    judges = judge_metrics(pairs, outputs, n_resamples=0)
    t0 = time.perf_counter()
    to_markdown(report_tables(targets, diagnostics, judges))
    timings["report tables (markdown)"] = time.perf_counter() - t0
    print(f"{args.n:,} pairs, {len(outputs):,} judge outputs (objects built in {built:.1f} s):")
    for name, seconds in timings.items():
        print(f"  {name}: {seconds:.2f} s")


if __name__ == "__main__":
    main()
