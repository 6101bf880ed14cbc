"""The measured VARM rows: real local models on a fixed, seeded subset of varm-open test.

Three steps, each a sub-command:

``subset``  writes the evaluated items (``--n`` items of varm-open test drawn with
            ``random.Random(--seed)``, kept in file order) and the k-shot pool (varm-open train)
            as JSONL files under ``--work`` (the bundled set is the source: nothing is
            downloaded);
``run``     runs ``verimod eval`` once per configuration (``--model``, ``--settings``,
            ``--constrain``; plus ``--adapter`` for a LoRA adapter on an ``hf:`` model) into
            ``--work/runs``, each under ``nice -n 10`` with ``--threads``; a configuration
            whose run directory already completed is skipped, an interrupted one resumed;
``summary`` writes ``benchmarks/results/`` from the run directories: per run its manifest, scores
            and bootstrap intervals (``verimod diagnose intervals``, seeded), seconds per item,
            and one ``rows.md`` / ``rows.json`` table over all of them.

    python benchmarks/measured_rows.py subset --n 100 --seed 0
    python benchmarks/measured_rows.py run --model gguf:/path/model.gguf --label qwen0.5b \\
        --settings zero-shot taxonomy k-shot --constrain none anchors
    python benchmarks/measured_rows.py summary
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from verimod.data.jsonl import write_jsonl  # noqa: E402
from verimod.tasks.varm.bundled import load_bundled  # noqa: E402

DEFAULT_WORK = REPO / "runs" / "measured"
RESULTS = REPO / "benchmarks" / "results"


def seeded_subset(n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` items of varm-open test drawn with ``random.Random(seed)``, in file order."""
    test = load_bundled("varm-open", "test")
    chosen = sorted(random.Random(seed).sample(range(len(test)), n))
    return [test[i].model_dump(exclude_none=True) for i in chosen]


def subset_paths(work: Path, n: int, seed: int) -> tuple[Path, Path]:
    """The evaluated-items file and the k-shot pool file of a subset."""
    return work / f"varm-open-test-n{n}-seed{seed}.jsonl", work / "varm-open-train.jsonl"


def write_subset(work: Path, n: int, seed: int) -> tuple[Path, Path]:
    """Write the subset and the k-shot pool (varm-open train); return their paths."""
    work.mkdir(parents=True, exist_ok=True)
    data, train = subset_paths(work, n, seed)
    write_jsonl(data, seeded_subset(n, seed))
    write_jsonl(train, (r.model_dump(exclude_none=True) for r in load_bundled("varm-open", "train")))
    return data, train


def run_id(label: str, setting: str, constrain: str) -> str:
    """The run directory name of one configuration."""
    return f"{label}-{setting}-{constrain}"


def eval_command(args: argparse.Namespace, data: Path, train: Path, setting: str, constrain: str) -> list[str]:
    """The ``verimod eval`` command line of one configuration."""
    command = ["nice", "-n", "10", sys.executable, "-m", "verimod", "eval", "--model", args.model,
               "--data", str(data), "--train", str(train), "--setting", setting, "--constrain", constrain,
               "--max-tokens", str(args.max_tokens), "--no-cache", "--quiet"]  # fmt: skip
    if args.model.startswith("gguf:"):
        command += ["--threads", str(args.threads)]
    if args.adapter:
        command += ["--adapter", args.adapter]
    if args.batch_size:
        command += ["--batch-size", str(args.batch_size)]
    return command


def run(args: argparse.Namespace) -> None:
    """Run every configuration not yet completed."""
    work = Path(args.work)
    data, train = subset_paths(work, args.n, args.seed)
    if not data.is_file():
        write_subset(work, args.n, args.seed)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for setting in args.settings:
        for constrain in args.constrain:
            name = run_id(args.label, setting, constrain)
            folder = work / "runs" / name  # holds this configuration's one run directory
            existing = sorted(p.parent for p in folder.glob("*/manifest.json"))
            if existing:
                status = json.loads((existing[-1] / "manifest.json").read_text(encoding="utf-8"))["status"]
                if status in ("completed", "completed_with_errors"):
                    print(f"{name}: {status}, skipped", flush=True)
                    continue
                command = ["nice", "-n", "10", sys.executable, "-m", "verimod", "eval", "--resume",
                           str(existing[-1]), "--no-cache", "--quiet"]  # fmt: skip
            else:
                command = [*eval_command(args, data, train, setting, constrain), "--runs-dir", str(folder)]
            print(" ".join(command), flush=True)
            subprocess.run(command, check=False, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=str(DEFAULT_WORK), help="where subsets and run directories go")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("subset")
    runner = sub.add_parser("run")
    runner.add_argument("--model", required=True)
    runner.add_argument("--label", required=True, help="names the run directories")
    runner.add_argument("--settings", nargs="+", default=["zero-shot"])
    runner.add_argument("--constrain", nargs="+", default=["none", "anchors"])
    runner.add_argument("--adapter")
    runner.add_argument("--threads", type=int, default=2)
    runner.add_argument("--batch-size", type=int)
    runner.add_argument("--max-tokens", type=int, default=512)
    args = parser.parse_args()
    if args.command == "subset":
        for path in write_subset(Path(args.work), args.n, args.seed):
            print(path)
    elif args.command == "run":
        run(args)


if __name__ == "__main__":
    main()
