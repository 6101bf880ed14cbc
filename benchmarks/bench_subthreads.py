"""Time of ToxiREX sub-thread extraction beside the time to build the comment trees.

Synthetic, seeded forests of 100,000 comments as Reddit-dump records (``t1_``/``t3_`` prefixes,
``link_id``, ``created_utc``):

- ``reddit-like``: 1,000 posts; each new comment is top-level with probability 0.25, else a
  reply to an earlier comment of its post, a recent one (the tail of the conversation) with
  probability 0.6 and any one otherwise — bushy near the top, chains of replies below, depths
  up to a few dozen;
- ``caterpillar``: one post, one reply chain of 50,000 comments with a leaf reply on every link
  of the chain — the worst case for updating cut candidates one by one (quadratic there);
- ``bare chain``: one post, one chain of 100,000 replies.

"Build" is :func:`forest_from_records` (parsing the records, resolving parents, ordering replies);
"extract" is :func:`extract_subthreads` on the built forest. Median of ``--repeat`` runs.

    python benchmarks/bench_subthreads.py [--n 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from verimod.tasks.toxirex.subthreads import extract_subthreads
from verimod.tasks.toxirex.threads import forest_from_records


def reddit_like(n: int, seed: int = 0, posts: int = 1_000) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    per_post: list[list[int]] = [[] for _ in range(posts)]
    records = [{"id": f"p{p}", "title": f"post {p}", "selftext": ""} for p in range(posts)]
    for i in range(n):
        post = rng.randrange(posts)
        earlier = per_post[post]
        if not earlier or rng.random() < 0.25:
            parent = f"t3_p{post}"
        elif rng.random() < 0.6:
            parent = f"t1_c{earlier[-1 - min(len(earlier) - 1, int(rng.expovariate(0.7)))]}"
        else:
            parent = f"t1_c{rng.choice(earlier)}"
        earlier.append(i)
        records.append(
            {
                "id": f"c{i}",
                "parent_id": parent,
                "link_id": f"t3_p{post}",
                "body": f"comment {i}",
                "author": f"u{rng.randrange(n // 4)}",
                "created_utc": 1_600_000_000 + i,
            }
        )
    return records


def caterpillar(n: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [{"id": "p0", "title": "chain"}]
    spine = "t3_p0"
    for i in range(n // 2):
        records.append({"id": f"s{i}", "parent_id": spine, "link_id": "t3_p0", "body": "s", "created_utc": 2 * i})
        records.append(
            {"id": f"l{i}", "parent_id": f"t1_s{i}", "link_id": "t3_p0", "body": "l", "created_utc": 2 * i + 1}
        )
        spine = f"t1_s{i}"
    return records


def bare_chain(n: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [{"id": "p0", "title": "chain"}]
    parent = "t3_p0"
    for i in range(n):
        records.append({"id": f"c{i}", "parent_id": parent, "link_id": "t3_p0", "body": "c", "created_utc": i})
        parent = f"t1_c{i}"
    return records


def median_time(work: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for name, make in (("reddit-like", reddit_like), ("caterpillar", caterpillar), ("bare chain", bare_chain)):
        records = make(args.n)
        build, forest = median_time(lambda records=records: forest_from_records(records), args.repeat)
        extract, result = median_time(lambda forest=forest: extract_subthreads(forest), args.repeat)  # type: ignore[arg-type]
        counts = result.counts()  # type: ignore[attr-defined]
        depth = max((len(s) for s in result.subthreads), default=0)  # type: ignore[attr-defined]
        print(
            f"{name:12} {forest.n_comments:,} comments in {len(forest.trees):,} trees: "  # type: ignore[attr-defined]
            f"build {build:.3f} s, extract {extract:.3f} s = {extract / build:.2f}× the build; "
            f"{counts['subthreads']:,} sub-threads covering {counts['comments']:,} comments "
            f"({counts['uncovered']:,} uncovered; longest {depth})"
        )


if __name__ == "__main__":
    main()
