"""Speed of the embedded baseline model: training, prediction and loading.

Training data: 25,000 *real* records — SWSR train (verimod's split, 6,278: label, category,
target type) and the first 18,722 records of COLD train (label, topic-derived category), read
from ``--data-root`` (``../shared/data``) with verimod's adapters; partial records, as the
default recipe uses them. Without the data folder the script says so and trains on the starter
train split plus seeded character-level perturbations instead (the earlier benchmark).
Prediction: 1,600 COLD test texts (or starter texts), with the model just trained. Loading:
the shipped default model (``resources/baseline/default``), median of ``--repeat``; jieba's
dictionary, loaded once per process at the first prediction, is timed separately.

Times are wall clock and CPU (this process plus its worker processes): on the shared 2-core
development machine the wall clock depends on what else runs; the CPU time does not.

    python benchmarks/bench_baseline.py [--data-root ../shared/data] [--n-train 25000]

Targets (issue #16, 2 cores): training 25,000 records ≤ 60 s, prediction of 1,600 texts ≤ 2 s,
load ≤ 1 s.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from verimod.models.baseline import BaselineModel, train_baseline
from verimod.models.baseline.default import prebuilt_dir
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.starter import load_starter

FILLERS = ("啊", "呢", "～", "!", "…", " ")


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def real_records(root: Path, n: int) -> tuple[list[VarmReference], list[str]]:
    from verimod.data.adapters import convert

    swsr = [
        r for r in convert("swsr", root / "swsr" / "SexComment.csv", split="verimod").references if r.split == "train"
    ]
    cold = convert("cold", root / "cold" / "train.csv").references
    records = (swsr + cold)[:n]
    test = [r.text for r in convert("cold", root / "cold" / "test.csv").references]
    return records, test


def synthetic_records(n: int, seed: int = 0) -> list[VarmReference]:
    """The starter train split once, then copies with one to three character edits."""
    base = load_starter("train")
    rng = random.Random(seed)
    records = list(base)
    k = 0
    while len(records) < n:
        ref = base[k % len(base)]
        chars = list(ref.text)
        for _ in range(rng.randint(1, 3)):
            chars.insert(rng.randrange(len(chars) + 1), rng.choice(FILLERS))
        records.append(ref.model_copy(update={"id": f"aug-{k}", "text": "".join(chars), "cot": None}))
        k += 1
    return records[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--n-train", type=int, default=25_000)
    parser.add_argument("--n-predict", type=int, default=1_600)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    if (args.data_root / "cold" / "train.csv").is_file():
        records, pool = real_records(args.data_root, args.n_train)
        print(f"training data: {len(records):,} real records (SWSR train + COLD train, partial)")
    else:
        records, pool = synthetic_records(args.n_train), [r.text for r in load_starter()]
        print(f"NOTE: {args.data_root} is absent: {len(records):,} synthetic starter-based records instead")
    wall, cpu = time.perf_counter(), cpu_seconds()
    model = train_baseline(records)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    print(f"training: {len(records):,} records in {wall:.1f} s wall, {cpu:.1f} s CPU (≤ 60 s)")
    print(f"  {model.summary.augmented:,} obfuscated copies; vocabulary {model.vectorizer.n_features:,} features")

    texts = [pool[i % len(pool)] for i in range(args.n_predict)]
    model.predict(texts[:10])  # jieba's dictionary is loaded once per process
    walls, cpus = [], []
    for _ in range(args.repeat):
        wall, cpu = time.perf_counter(), cpu_seconds()
        model.predict(texts)
        walls.append(time.perf_counter() - wall)
        cpus.append(cpu_seconds() - cpu)
    print(
        f"prediction: {len(texts):,} texts in {statistics.median(walls):.2f} s wall, "
        f"{statistics.median(cpus):.2f} s CPU, median of {args.repeat} (≤ 2 s)"
    )

    loads = []
    for _ in range(args.repeat):
        wall = time.perf_counter()
        BaselineModel.load(prebuilt_dir())
        loads.append(time.perf_counter() - wall)
    print(
        f"load of the shipped default model: {statistics.median(loads) * 1000:.0f} ms median of {args.repeat} (≤ 1 s)"
    )
    probe = "import time; t = time.perf_counter(); from verimod.models.baseline.views import words; words('测试'); "
    probe += "print(f'{time.perf_counter() - t:.2f}')"
    fresh = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    print(f"jieba's dictionary in a fresh process (first prediction only): {fresh} s")


if __name__ == "__main__":
    main()
