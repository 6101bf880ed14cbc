"""Parse + score throughput of the VARM scorer.

Generates N synthetic outputs — starter-set reference rationales with the seeded demonstration
corruptions (wrong and partial targets, flipped labels, lenient formatting, broken anchors,
missing outputs) — then times parsing and scoring in process. Generation is not timed.

    python benchmarks/bench_score.py                 # 1,600 items and 1,000,000 items
    python benchmarks/bench_score.py --n 1600 --repeat 20

Large runs are generated and scored in chunks, so peak memory reflects the scorer's per-item
columns plus one chunk of outputs, as it would when streaming a prediction file.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import time

from verimod.tasks.varm.corrupt import DEFAULT_MIX, corrupt_rationale
from verimod.tasks.varm.parser import _ANCHOR_RE
from verimod.tasks.varm.scorer import VarmScorer, score_predictions
from verimod.tasks.varm.starter import load_starter

POOL = load_starter()
ANCHOR_SCAN = _ANCHOR_RE.finditer  # the floor: the parser's own regular-expression scan, nothing else
KINDS = list(DEFAULT_MIX)
WEIGHTS = [DEFAULT_MIX[k] for k in KINDS]


def generate(start: int, count: int, rng: random.Random) -> list[tuple[str, object, str | None]]:
    """``count`` items ``(id, reference, output)``; partial targets draw fresh substrings of the
    text so that target strings vary as they do in real outputs."""
    items = []
    targets = [r.target for r in POOL]
    for i in range(start, start + count):
        ref = POOL[i % len(POOL)]
        kind = rng.choices(KINDS, WEIGHTS)[0]
        if kind == "partial_target":
            a = rng.randrange(len(ref.text) - 3)
            output = corrupt_rationale(ref, "wrong_target", rng, [ref.text[a : a + rng.randint(2, 6)]])
        else:
            output = corrupt_rationale(ref, kind, rng, targets)
        items.append((f"item-{i}", ref, output))
    return items


def bench_small(n: int, repeat: int) -> None:
    rng = random.Random(1)
    items = generate(0, n, rng)
    references = [_with_id(ref, item_id) for item_id, ref, _ in items]
    outputs = {item_id: out for item_id, _, out in items if out is not None}
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        scores, _ = score_predictions(references, outputs)
        times.append(time.perf_counter() - t0)
    floor = []
    texts = list(outputs.values())
    for _ in range(repeat):
        t0 = time.perf_counter()
        for text in texts:
            for _match in ANCHOR_SCAN(text):
                pass
        floor.append(time.perf_counter() - t0)
    median, scan = statistics.median(times), statistics.median(floor)
    print(
        f"n={n:,}: parse+score median {median * 1e3:.1f} ms, best {min(times) * 1e3:.1f} ms over {repeat} runs "
        f"(jrem {scores.jrem:.3f}, parse {scores.parse_rate:.3f}); "
        f"bare regex scan of the same outputs {scan * 1e3:.1f} ms: ratio {median / scan:.1f}x"
    )


def _with_id(ref: object, item_id: str) -> object:
    return ref.model_copy(update={"id": item_id})  # type: ignore[attr-defined]


def bench_large(n: int, chunk: int) -> None:
    rng = random.Random(2)
    scorer = VarmScorer()
    timed = 0.0
    done = 0
    while done < n:
        items = generate(done, min(chunk, n - done), rng)
        t0 = time.perf_counter()
        for item_id, ref, output in items:
            scorer.add(item_id, ref, output)  # type: ignore[arg-type]
        timed += time.perf_counter() - t0
        done += len(items)
        del items
    t0 = time.perf_counter()
    scores = scorer.scores()
    summary = time.perf_counter() - t0
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"n={n:,}: parse+score {timed + summary:.2f} s ({(timed + summary) / n * 1e6:.1f} µs/item; "
        f"summary {summary * 1e3:.0f} ms), peak RSS {peak_mib:.0f} MiB "
        f"(jrem {scores.jrem:.3f}, parse {scores.parse_rate:.3f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="*", default=[1_600, 1_000_000])
    parser.add_argument("--repeat", type=int, default=20, help="repeats of runs of under 100,000 items")
    parser.add_argument("--chunk", type=int, default=100_000)
    args = parser.parse_args()
    for n in args.n:
        if n < 100_000:
            bench_small(n, args.repeat)
        else:
            bench_large(n, args.chunk)


if __name__ == "__main__":
    main()
