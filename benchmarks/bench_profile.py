"""Time of ``verimod data profile`` on 40,000 real comments, total and per statistic.

The texts: all 37,480 COLD comments (train, dev, test) and the first 2,520 SWSR comments,
converted with verimod's adapters (labels, categories, COLD test's stance and target type; no
target spans, so the target statistics run over n = 0). Reading is not timed. The stages are
timed apart (one run each; wall and CPU time, the CPU time being steadier on a shared machine)
and the whole :func:`profile_report` once more (what the command costs beyond reading); the
Traditional test runs with OpenCC when installed and with the bundled table, side by side.

    python benchmarks/bench_profile.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from verimod.data.adapters import convert
from verimod.data.profile import Skeletons, length_profile, near_duplicates, profile_report
from verimod.data.profile_frames import repeated_frames
from verimod.data.profile_input import ProfileInput, profile_item
from verimod.data.profile_text import TraditionalScript, emoji_count, has_emoticon, has_latin, has_punctuation

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
N = 40_000


def load(data: Path) -> ProfileInput:
    references = []
    for split in ("train", "dev", "test"):
        references += convert("cold", data / "cold" / f"{split}.csv").references
    references += convert("swsr", data / "swsr" / "SexComment.csv").references[: N - len(references)]
    rows = [r.model_dump(mode="json", exclude_none=True) for r in references]
    items = [profile_item("bench", line, row, "text", False) for line, row in enumerate(rows, 1)]
    return ProfileInput("bench", items, [], "utf-8")


def timed(label: str, work: Callable[[], Any]) -> float:
    """Run ``work``; print its wall and CPU time (CPU is steadier on a shared machine); return the CPU."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"  {label:<38} wall {wall:6.2f} s   CPU {cpu:6.2f} s")
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    if not (args.data / "cold").is_dir():
        raise SystemExit(f"{args.data}/cold is absent: pass --data FOLDER (the shared real data sets)")
    data = load(args.data)
    texts = [item.text for item in data.items]
    print(f"{len(texts):,} texts ({sum(map(len, texts)):,} characters)")
    stages = {
        "length percentiles": lambda: length_profile(texts),
        "emoji + emoticons": lambda: [emoji_count(t) > 0 or has_emoticon(t) for t in texts],
        "punctuation + Latin": lambda: [has_punctuation(t) or has_latin(t) for t in texts],
        "skeletons + frames": lambda: repeated_frames(Skeletons.of(data.items).all, 10),
        "near-duplicates (t = 95)": lambda: near_duplicates(texts, 95.0),
    }
    for name, method in (("Traditional (OpenCC)", "auto"), ("Traditional (bundled table)", "table")):
        script = TraditionalScript(method)  # type: ignore[arg-type]
        stages[f"{name} [{script.method}]"] = lambda s=script: [s.has_traditional(t) for t in texts]
    total = sum(timed(name, work) for name, work in stages.items())
    print(f"  {'sum of the stages (CPU)':<38} {'':13}CPU {total:6.2f} s")
    timed("profile_report (whole, default)", lambda: profile_report([data]))


if __name__ == "__main__":
    main()
