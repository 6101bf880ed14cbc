"""Check one annotation file against its batch: ``python check_pass.py BATCH.jsonl ANNOTATIONS.jsonl``.

Prints one line per problem (``file:line: field: problem``) and exits 1 when there is any, 0
when every item of the batch is annotated once and every annotation is admissible:

- the same ids as the batch, each once; JSON objects with exactly the keys of ``KEYS``;
- closed fields admissible; the gold fields of the batch line unchanged (``label`` is taken
  from the gold and must not be restated differently);
- the record satisfies the codebook constraints (``verimod.tasks.varm.codebook``);
- an ``explicit`` target occurs in the comment (after NFKC, case-insensitive; coordinated spans
  joined by ``、`` each occur), an ``implicit`` one is a non-empty referent; no brackets in it;
- the rationale ``cot`` parses (verimod's anchor parser) to exactly this record, with the
  canonical format, is 60–260 characters long, and quotes the comment: at least one “…” / 「…」
  / "…" passage of ≥ 2 characters that occurs in the comment or its context;
- tags from the codebook's list; ``disputed`` is null or {"reading": {field: value …}, "reason": text}
  whose reading differs from the record on at least one field and is itself admissible.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

from verimod.tasks.varm.codebook import FIELDS, NO_CLEAR_TARGET, VOCABULARY, codebook_violations_of
from verimod.tasks.varm.parser import parse_rationale

KEYS = {"id", "target", "target_type", "target_explicitness", "stance", "category", "tags", "cot", "disputed"}
TAGS = {
    "direct_insult", "stereotype", "dehumanization", "threat", "implicit_target", "homophone", "sarcasm",
    "quotation", "opposition", "neutral_identity", "behaviour_criticism", "personal_account", "no_target",
    "other_identity", "context_needed",
}  # fmt: skip
QUOTE_RE = re.compile(r"[“\"「『]([^”\"」』]{2,})[”\"」』]")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def problems_of(item: dict[str, Any], note: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, problem) pairs for one annotation ``note`` of the batch line ``item``."""
    found: list[tuple[str, str]] = []
    if set(note) != KEYS:
        return [("keys", f"expected exactly {sorted(KEYS)}, got {sorted(note)}")]
    gold = item["gold"]
    record = {f: note.get(f) for f in FIELDS if f != "label"} | {"label": gold["label"]}
    for field, values in VOCABULARY.items():
        if record[field] not in values:
            found.append((field, f"{record[field]!r} is not one of {', '.join(values)}"))
    for field, value in gold.items():
        if record.get(field) != value:
            found.append((field, f"gold value is {value!r}, annotation says {record.get(field)!r}"))
    target = record["target"]
    if not isinstance(target, str) or not target.strip():
        found.append(("target", "missing"))
        return found
    if any(b in target for b in "[]【】［］"):
        found.append(("target", "brackets are not allowed in a target"))
    spans = [_fold(part) for part in target.split("、")]
    if record["target_explicitness"] == "explicit" and not all(part and part in _fold(item["text"]) for part in spans):
        found.append(("target", f"explicit target {target!r} does not occur in the comment (spans joined by 、 may)"))
    values = [record[f] for f in FIELDS]
    for name in codebook_violations_of(values):
        found.append(("record", f"breaks the codebook constraint {name}"))
    cot = note["cot"]
    if not isinstance(cot, str):
        return [*found, ("cot", "missing")]
    parsed = parse_rationale(cot)
    if not parsed.ok:
        found.append(("cot", f"does not parse: {parsed.error_class} ({parsed.detail})"))
    else:
        if list(parsed.values or ()) != values:
            found.append(("cot", f"anchors {list(parsed.values or ())} differ from the record {values}"))
        if not parsed.format_ok:
            found.append(("cot", "anchors not in canonical format [TAG: value] or record inconsistent"))
    if not 60 <= len(cot) <= 260:
        found.append(("cot", f"length {len(cot)} outside 60–260 characters"))
    sources = _fold(item["text"] + "\n" + (item.get("context") or ""))
    quotes = [q for q in QUOTE_RE.findall(cot) if _fold(q) in sources]
    if not quotes:
        found.append(("cot", "quotes nothing from the comment (put a passage of it in “…”)"))
    tags = note["tags"]
    if not isinstance(tags, list) or any(t not in TAGS for t in tags) or len(set(tags)) != len(tags):
        found.append(("tags", f"must be a list of distinct tags from {sorted(TAGS)}"))
    disputed = note["disputed"]
    if disputed is not None:
        if not isinstance(disputed, dict) or set(disputed) != {"reading", "reason"}:
            found.append(("disputed", 'must be null or {"reading": {...}, "reason": "..."}'))
        else:
            reading = disputed["reading"]
            if not isinstance(reading, dict) or not reading or not set(reading) <= set(FIELDS):
                found.append(("disputed", "reading must map record fields to values"))
            elif all(record.get(f) == v for f, v in reading.items()):
                found.append(("disputed", "reading does not differ from the record"))
            else:
                for f, v in reading.items():
                    if f in VOCABULARY and v not in VOCABULARY[f]:
                        found.append(("disputed", f"reading {f}={v!r} is not admissible"))
            if not isinstance(disputed["reason"], str) or len(disputed["reason"].strip()) < 4:
                found.append(("disputed", "reason missing"))
    if target == NO_CLEAR_TARGET and "no_target" not in (tags or []):
        found.append(("tags", "a no_clear_target record carries the no_target tag"))
    return found


def check(batch_path: Path, notes_path: Path) -> list[str]:
    """All problems of ``notes_path`` against ``batch_path``, as printable lines."""
    items = {}
    for line in batch_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            items[item["id"]] = item
    lines: list[str] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(notes_path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{notes_path}:{number}"
        try:
            note = json.loads(raw)
        except json.JSONDecodeError as exc:
            lines.append(f"{where}: json: {exc}")
            continue
        if not isinstance(note, dict) or note.get("id") not in items:
            lines.append(f"{where}: id: {note.get('id') if isinstance(note, dict) else note!r} is not in the batch")
            continue
        if note["id"] in seen:
            lines.append(f"{where}: id: {note['id']} annotated twice (first on line {seen[note['id']]})")
            continue
        seen[note["id"]] = number
        lines.extend(
            f"{where}: {field}: {problem} [{note['id']}]" for field, problem in problems_of(items[note["id"]], note)
        )
    for item_id in items:
        if item_id not in seen:
            lines.append(f"{notes_path}: id: {item_id} of the batch is not annotated")
    return lines


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit("usage: check_pass.py BATCH.jsonl ANNOTATIONS.jsonl")
    problems = check(Path(sys.argv[1]), Path(sys.argv[2]))
    for line in problems:
        print(line)
    print(f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
