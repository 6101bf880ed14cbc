"""Speed of the embedded baseline model: training, prediction and loading.

Training data: 25,000 records built from the bundled starter set's train split (436 records)
by deterministic augmentation (``random.Random(seed)``): each copy applies one to three
character-level perturbations *outside* every occurrence of the record's target — delete a
character, duplicate one, swap two neighbours, insert a filler (啊, 呢, ～, !, …, a space) or
swap full-width and ASCII punctuation — so the target span and the six fields stay valid.
The originals are included once. Prediction is timed on 1,600 starter texts (all 630, cycled)
with the model trained on the 25,000 records; loading is timed on its saved folder.

    python benchmarks/bench_baseline.py                     # 25,000 training records
    python benchmarks/bench_baseline.py --n-train 5000 --repeat 5

Targets (2-core machine): training ≤ 60 s, prediction of 1,600 texts ≤ 2 s, load ≤ 1 s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

from verimod.models.baseline import BaselineModel, train_baseline
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.starter import load_starter

FILLERS = ("啊", "呢", "～", "!", "…", " ")
PUNCT_SWAP = {"，": ",", "。": ".", "！": "!", "？": "?", ",": "，", ".": "。", "!": "！", "?": "？"}


def _protected(text: str, target: str) -> set[int]:
    """Positions inside an occurrence of the target (never perturbed)."""
    keep: set[int] = set()
    start = text.find(target) if target else -1
    while start >= 0:
        keep.update(range(start, start + len(target)))
        start = text.find(target, start + 1)
    return keep


def perturb(text: str, target: str, rng: random.Random) -> str:
    """One to three character-level edits outside the target span(s)."""
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        keep = _protected("".join(chars), target)
        free = [i for i in range(len(chars)) if i not in keep]
        if not free:
            break
        i = rng.choice(free)
        op = rng.randrange(5)
        if op == 0 and len(chars) > 4:
            del chars[i]
        elif op == 1:
            chars.insert(i, chars[i])
        elif op == 2 and i + 1 < len(chars) and i + 1 not in keep:
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
        elif op == 3:
            chars.insert(i, rng.choice(FILLERS))
        else:
            chars[i] = PUNCT_SWAP.get(chars[i], chars[i])
    out = "".join(chars)
    return out if out.strip() else text


def augmented(n: int, seed: int = 0) -> list[VarmReference]:
    """``n`` records: the starter train split once, then perturbed copies, cycling through it."""
    base = load_starter("train")
    rng = random.Random(seed)
    records = list(base)
    k = 0
    while len(records) < n:
        ref = base[k % len(base)]
        target = "" if ref.target == "no_clear_target" else ref.target
        text = perturb(ref.text, target, rng)
        records.append(ref.model_copy(update={"id": f"aug-{k}", "text": text, "cot": None}))
        k += 1
    return records[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-train", type=int, default=25_000)
    parser.add_argument("--n-predict", type=int, default=1_600)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    records = augmented(args.n_train)
    t0 = time.perf_counter()
    model = train_baseline(records)
    train_s = time.perf_counter() - t0
    print(f"training: {len(records):,} records in {train_s:.1f} s (target ≤ 60 s)")
    print(f"  vocabulary {model.vectorizer.n_features:,} n-grams, {len(model.span_scorer.features):,} span features")

    pool = [r.text for r in load_starter()]
    texts = [pool[i % len(pool)] for i in range(args.n_predict)]
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        model.predict(texts)
        times.append(time.perf_counter() - t0)
    print(
        f"prediction: {len(texts):,} texts in {statistics.median(times):.2f} s median of {args.repeat} "
        f"(best {min(times):.2f} s; target ≤ 2 s)"
    )

    with tempfile.TemporaryDirectory() as folder:
        model.save(folder)
        loads = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            BaselineModel.load(folder)
            loads.append(time.perf_counter() - t0)
    print(f"load: {statistics.median(loads) * 1000:.0f} ms median of {args.repeat} (target ≤ 1 s)")


if __name__ == "__main__":
    main()
