"""Throughput of text normalisation on the 37,480 COLD comments (train + dev + test).

Times :func:`verimod.data.normalize.normalize_records` (text rules, filters, report, duplicate
keys; records are ``{"text": ..., "i": n}`` dicts built before timing) with

* the default configuration, and
* every option on: emoji and bracket-emoticon removal, ``punctuation="cjk"``,
  ``remove_cjk_spaces``, ``keep_original``, and OpenCC ``t2s`` when the ``opencc`` package is
  installed (the line says whether it was);

and beside them, in the same run, bare ``unicodedata.normalize("NFKC", t)`` over the same texts:
the ratio says how many NFKC passes one normalisation costs. Each figure is the median of
``--repeat`` runs (best in brackets). ``--rules`` adds the cost of each text rule alone.

    python benchmarks/bench_normalize.py
    python benchmarks/bench_normalize.py --repeat 5 --rules

Needs ../shared/data/cold/{train,dev,test}.csv (CSV with BOM, column TEXT).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import statistics
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from verimod.data.normalize import NormalizeConfig, normalize_records
from verimod.data.normalize_rules import build_rules

COLD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cold"


def load_texts() -> list[str]:
    texts: list[str] = []
    for split in ("train", "dev", "test"):
        with (COLD / f"{split}.csv").open(encoding="utf-8-sig", newline="") as f:
            texts += [row["TEXT"] for row in csv.DictReader(f)]
    return texts


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, best) wall time of ``fn`` over ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def run_pipeline(records: list[dict[str, object]], config: NormalizeConfig) -> tuple[int, int]:
    kept, report = normalize_records(iter(records), config=config)
    n = sum(1 for _ in kept)
    return n, report.records_in


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rules", action="store_true", help="also time each text rule alone")
    args = parser.parse_args()
    if not COLD.is_dir():
        sys.exit(f"{COLD} is absent: this benchmark needs the COLD CSV files")
    texts = load_texts()
    records: list[dict[str, object]] = [{"text": t, "i": i} for i, t in enumerate(texts)]
    has_opencc = importlib.util.find_spec("opencc") is not None
    configs = {
        "default": NormalizeConfig(),
        "every option on": NormalizeConfig(
            emoji=True,
            emoticons=True,
            punctuation="cjk",
            remove_cjk_spaces=True,
            keep_original="raw",
            t2s=has_opencc,
        ),
    }
    n = len(texts)
    chars = sum(len(t) for t in texts)
    print(f"COLD: {n:,} texts, {chars:,} characters (mean {chars / n:.1f}); Python {sys.version.split()[0]}")
    nfkc_median, nfkc_best = timed(lambda: [unicodedata.normalize("NFKC", t) for t in texts], args.repeat)
    ms = f"{nfkc_median * 1e3:7.1f} ms, best {nfkc_best * 1e3:.1f}"
    print(f"{'bare NFKC':<20} {n / nfkc_median:>10,.0f} texts/s  ({ms})")
    for name, config in configs.items():
        kept, _ = run_pipeline(records, config)  # warm caches (patterns, OpenCC) outside the timing
        median, best = timed(lambda config=config: run_pipeline(records, config), args.repeat)
        extra = f"; t2s {'on' if config.t2s else 'off (opencc not installed)'}" if name != "default" else ""
        print(
            f"{name:<20} {n / median:>10,.0f} texts/s  ({median * 1e3:7.1f} ms, best {best * 1e3:.1f}) "
            f"= {median / nfkc_median:.1f}x bare NFKC; kept {kept:,}{extra}"
        )
    if args.rules:
        for name, config in configs.items():
            print(f"-- each rule alone, {name} (x bare NFKC):")
            for rule_name, rule in build_rules(config):
                median, _ = timed(lambda rule=rule: [rule(t, Counter()) for t in texts], args.repeat)
                print(f"   {rule_name:<12} {median / nfkc_median:6.2f}x")


if __name__ == "__main__":
    main()
