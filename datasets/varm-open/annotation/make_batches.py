"""Cut ``sample.jsonl`` into annotation batches of 50 (step 2; see ../README.md).

Each batch line shows an annotator what the annotation needs and nothing else: the id, the
normalised text, the parent post (``context``) where the source has one, the source name, the
topic the source collected the comment under (COLD), and the **gold fields** fixed by the
source's human labels (always ``label``; ``target_type``, ``stance`` or ``category`` where the
source's definition fixes them). The split is not shown. Batches mix splits and sources in a
seeded order.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "sample.jsonl"
BATCHES = HERE / "batches"
SIZE = 50
SEED = 20261201
GOLD_FIELDS = ("label", "target_type", "stance", "category")


def gold_of(row: dict[str, Any]) -> dict[str, str]:
    """The fields the source annotates (``meta.derived`` lists the ones it does not)."""
    derived = set(row["meta"].get("derived", []))
    return {f: row[f] for f in GOLD_FIELDS if row.get(f) is not None and f not in derived}


def batch_line(row: dict[str, Any]) -> dict[str, Any]:
    line: dict[str, Any] = {"id": row["id"], "text": row["text"]}
    if row.get("context"):
        line["context"] = row["context"]
    line["source"] = row["meta"]["source"]
    topic = row["meta"]["original"].get("topic")
    if topic:
        line["collected_under_topic"] = topic
    line["gold"] = gold_of(row)
    return line


def main() -> None:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line]
    random.Random(SEED).shuffle(rows)
    BATCHES.mkdir(exist_ok=True)
    for k in range(0, len(rows), SIZE):
        path = BATCHES / f"b{k // SIZE + 1:03d}.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for row in rows[k : k + SIZE]:
                handle.write(json.dumps(batch_line(row), ensure_ascii=False) + "\n")
    print(f"{len(rows)} items → {(len(rows) + SIZE - 1) // SIZE} batches in {BATCHES}")


if __name__ == "__main__":
    main()
