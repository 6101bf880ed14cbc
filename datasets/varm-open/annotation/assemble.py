"""Assemble the varm-open release from the sample, both passes and the adjudication (step 4).

``python assemble.py [--annot /work/annot] [--out src/verimod/resources/varm_open/varm_open.jsonl]``

For every sampled item (all batches must be annotated by both passes, and every queued item
adjudicated):

- the **gold** fields are the source's (``label`` always; ``target_type`` / ``stance`` /
  ``category`` where the source fixes them) — never changed;
- the other fields are the passes' common value when they agree (targets equal after NFKC, lower
  case and trimming: pass A's spelling is kept), else the adjudicator's;
- ``cot``: when the passes agree, the rationale of one pass chosen by a seeded coin per item (so
  the set mixes both writers); when adjudicated, the adjudicator's (``cot_from`` A, B or new);
- ``tags``: the union of both passes' tags when they agree, else the adjudicator's;
- ``meta``: ``source``, ``source_file``, ``source_row`` (the adapter's id), the source's
  ``original`` labels, ``gold_fields``, ``normalisation`` (the rules that changed the text),
  ``annotation`` (both passes' fields, tags and disputes, the adjudication with its note, how the
  record was resolved, where the rationale came from) and ``disputed`` (the kept reading and
  reason) when the final record disputes the source.

The pass and adjudication files are copied next to this script (``pass_A/``, ``pass_B/``,
``adjudication/``) so the release's provenance is in the repository. Checks before writing:
every line is a valid ``VarmReference``, codebook-consistent, its rationale parses to its record
in canonical format; no sentence of a rationale with at least 12 characters of prose (anchors
left out) occurs verbatim in more than 3 rationales.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from verimod.tasks.varm.codebook import FIELDS, codebook_violations
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.schema import VarmReference

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SAMPLE = HERE.parent / "sample.jsonl"
BATCHES = HERE / "batches"
FREE = ("target", "target_type", "target_explicitness", "stance", "category")
SEED = 20261201
SOURCE_FILES = {"cold": "cold/{split}.csv", "swsr": "swsr/SexComment.csv"}
MAX_SHARED_SENTENCE = 3
#: An anchor ``[TAG: value]``; a sentence's prose is what remains without its anchors.
ANCHOR = re.compile(r"\[[A-Za-z]+: [^\[\]]*\]")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _fields(note: dict[str, Any]) -> dict[str, Any]:
    return {f: note[f] for f in FREE} | {"tags": note["tags"], "disputed": note["disputed"]}


def resolve(
    item: dict[str, Any], a: dict[str, Any], b: dict[str, Any], decided: dict[str, Any] | None, rng: random.Random
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(record fields + cot + tags + disputed, annotation provenance) of one item."""
    annotation: dict[str, Any] = {"A": _fields(a), "B": _fields(b)}
    if decided is None:
        origin = rng.choice("AB")
        chosen = a if origin == "A" else b
        final = {f: a[f] for f in FREE} | {
            "cot": chosen["cot"],
            "tags": sorted(set(a["tags"]) | set(b["tags"])),
            "disputed": a["disputed"] if a["disputed"] else None,
        }
        if a["disputed"] and b["disputed"]:
            final["disputed"] = {
                "reading": a["disputed"]["reading"],
                "reason": f"A: {a['disputed']['reason']} | B: {b['disputed']['reason']}",
            }
        annotation |= {"resolution": "agreed", "cot_from": origin, "adjudication": None}
    else:
        final = {f: decided[f] for f in FREE} | {k: decided[k] for k in ("cot", "tags", "disputed")}
        annotation |= {
            "resolution": "adjudicated",
            "cot_from": decided["cot_from"],
            "adjudication": {
                "differ_on": decided["differ_on"],
                **{f: decided[f] for f in FREE},
                "disputed": decided["disputed"],
                "note": decided["note"],
            },
        }
    return final, annotation


def build(annot: Path) -> tuple[list[dict[str, Any]], Counter[str]]:
    sample = {row["id"]: row for row in read_jsonl(SAMPLE)}
    rng = random.Random(SEED)
    counts: Counter[str] = Counter()
    out: list[dict[str, Any]] = []
    for batch in sorted(BATCHES.glob("b*.jsonl")):
        notes = {p: {n["id"]: n for n in read_jsonl(annot / f"pass_{p}" / batch.name)} for p in "AB"}
        queue = {q["id"]: q for q in read_jsonl(annot / "adjudication" / "queue" / batch.name)}
        decided = {d["id"]: d for d in read_jsonl(annot / "adjudication" / "decided" / batch.name)}
        for item in read_jsonl(batch):
            item_id = item["id"]
            if item_id not in notes["A"] or item_id not in notes["B"]:
                raise SystemExit(f"{batch.name}: {item_id} is not annotated by both passes")
            decision = None
            if item_id in queue:
                if item_id not in decided:
                    raise SystemExit(f"{batch.name}: {item_id} is queued but not adjudicated")
                decision = decided[item_id] | {"differ_on": queue[item_id]["differ_on"]}
            final, annotation = resolve(item, notes["A"][item_id], notes["B"][item_id], decision, rng)
            counts[annotation["resolution"]] += 1
            row = sample[item_id]
            gold = item["gold"]
            record = {**{f: final[f] for f in FREE}, **gold}
            meta = {
                "source": row["meta"]["source"],
                "source_file": SOURCE_FILES[row["meta"]["source"]].format(split=row["split"]),
                "source_row": row["id"],
                "original": row["meta"]["original"],
                "gold_fields": sorted(gold),
                "normalisation": row["meta"]["normalisation"],
                "annotation": annotation,
            }
            if final["disputed"]:
                meta["disputed"] = final["disputed"]
                counts["disputed"] += 1
            line = {
                "id": f"varm-open-{item_id}",
                "text": row["text"],
                **{f: record[f] for f in FIELDS},
                "cot": final["cot"],
                "split": row["split"],
                "tags": final["tags"],
            }
            if row.get("context"):
                line["context"] = row["context"]
            line["meta"] = meta
            out.append(line)
    order = {"train": 0, "dev": 1, "test": 2}
    out.sort(key=lambda r: (order[r["split"]], r["id"]))
    return out, counts


def check(rows: list[dict[str, Any]]) -> None:
    sentences: Counter[str] = Counter()
    for row in rows:
        ref = VarmReference.model_validate(row)
        if codebook_violations(ref):
            raise SystemExit(f"{ref.id}: breaks {codebook_violations(ref)}")
        parsed = parse_rationale(ref.cot or "")
        if not parsed.ok or not parsed.format_ok or list(parsed.values or ()) != [getattr(ref, f) for f in FIELDS]:
            raise SystemExit(f"{ref.id}: rationale does not parse to the record")
        for sentence in {s for s in re.split(r"[。！？；]", ref.cot or "") if len(ANCHOR.sub("", s)) >= 12}:
            sentences[sentence] += 1
    shared = {s: n for s, n in sentences.items() if n > MAX_SHARED_SENTENCE}
    if shared:
        raise SystemExit(
            f"{len(shared)} rationale sentences repeat more than {MAX_SHARED_SENTENCE}×: {list(shared)[:3]}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annot", type=Path, default=Path("/work/annot"))
    parser.add_argument(
        "--out", type=Path, default=ROOT / "src" / "verimod" / "resources" / "varm_open" / "varm_open.jsonl"
    )
    parser.add_argument("--no-copy", action="store_true", help="do not copy the annotation files into the repository")
    args = parser.parse_args()
    rows, counts = build(args.annot)
    check(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    if not args.no_copy:
        for name in ("pass_A", "pass_B", "adjudication/queue", "adjudication/decided"):
            target = HERE / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(args.annot / name, target)
        for name in ("agreement.json", "passes_long.jsonl"):
            shutil.copy(args.annot / name, HERE / name)
    print(f"{len(rows)} records → {args.out}; {dict(counts)}")
    print(dict(Counter(r["split"] for r in rows)))


if __name__ == "__main__":
    main()
