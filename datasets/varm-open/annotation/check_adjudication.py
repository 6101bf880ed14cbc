"""Check adjudicated lines against their queue: ``python check_adjudication.py QUEUE.jsonl DECIDED.jsonl``.

Every queued item must be decided once. Each decision must pass the annotation checks of
:mod:`check_pass` (record, gold fields, rationale, tags, disputed) and also: ``cot_from`` is
``A``, ``B`` or ``new``; with ``A`` / ``B`` the rationale is that pass's, verbatim; ``note`` is a
non-empty sentence. Prints ``file:line: field: problem`` lines and ``N problem(s)``; exit 1 on any.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_pass import KEYS, problems_of

EXTRA = {"cot_from", "note"}


def decision_problems(item: dict[str, Any], decision: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, problem) pairs for one adjudicated line."""
    if set(decision) != KEYS | EXTRA:
        return [("keys", f"expected exactly {sorted(KEYS | EXTRA)}, got {sorted(decision)}")]
    found = problems_of(item, {k: decision[k] for k in KEYS})
    origin = decision["cot_from"]
    if origin not in ("A", "B", "new"):
        found.append(("cot_from", f"must be A, B or new, got {origin!r}"))
    elif origin in ("A", "B") and decision["cot"] != item[origin]["cot"]:
        found.append(("cot", f"cot_from is {origin} but the rationale is not pass {origin}'s verbatim"))
    if not isinstance(decision["note"], str) or len(decision["note"].strip()) < 4:
        found.append(("note", "say in one sentence what decided it"))
    return found


def check(queue_path: Path, decided_path: Path) -> list[str]:
    items = {}
    for raw in queue_path.read_text(encoding="utf-8").splitlines():
        if raw.strip():
            item = json.loads(raw)
            items[item["id"]] = item
    lines: list[str] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(decided_path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{decided_path}:{number}"
        try:
            decision = json.loads(raw)
        except json.JSONDecodeError as exc:
            lines.append(f"{where}: json: {exc}")
            continue
        if not isinstance(decision, dict) or decision.get("id") not in items:
            lines.append(f"{where}: id: not in the queue")
            continue
        if decision["id"] in seen:
            lines.append(f"{where}: id: {decision['id']} decided twice (first on line {seen[decision['id']]})")
            continue
        seen[decision["id"]] = number
        lines.extend(
            f"{where}: {f}: {p} [{decision['id']}]" for f, p in decision_problems(items[decision["id"]], decision)
        )
    lines.extend(f"{decided_path}: id: {i} of the queue is not decided" for i in items if i not in seen)
    return lines


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit("usage: check_adjudication.py QUEUE.jsonl DECIDED.jsonl")
    problems = check(Path(sys.argv[1]), Path(sys.argv[2]))
    for line in problems:
        print(line)
    print(f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
