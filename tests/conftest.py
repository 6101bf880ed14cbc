"""Shared fixtures: canonical rationales, reference files, the shared real-data folder.

llama.cpp and torch each bring an OpenMP runtime whose idle threads spin by default; in one
test process on a small machine (CI: 2 cores) the two pools starve each other and the tests
with real models take several times as long. Passive waiting avoids that. It is set here, in
the first file pytest loads, so that it holds before any test imports torch or llama_cpp
(whatever runs first); a value the caller set is kept. glibc is told not to keep freed memory
(:func:`tests.helpers.memory.keep_heap_small`), so that the model tests fit in a few GB.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.memory import keep_heap_small

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
keep_heap_small()

# No test may reach the Hugging Face hub: datasets, inspect_ai and lm-eval read these at import.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

#: The keys ``verimod score --json`` must write (issue #2's contract).
REQUIRED_SCORE_KEYS = frozenset(
    {
        "n",
        "label_macro_f1",
        "category_macro_f1",
        "target_char_f1",
        "target_type_macro_f1",
        "explicitness_macro_f1",
        "stance_macro_f1",
        "parse_rate",
        "format_rate",
        "jrem",
        "her_c",
        "her_l",
        "mismatch",
        "shapley",
    }
)

CANONICAL = (
    "这条评论明确指向[T: 小县城公务员]，说他们离开编制“啥也不是”。这是一个职业群体[TY: group]，"
    "被直接点名[T: explicit]。作者否定该群体的能力和价值，属于[S: attack_or_endorse]。"
    "这种概括性贬低是[L: harmful]，依据是职业身份而非地域，归入[C: status_occupation]。"
)
CANONICAL_RECORD = {
    "target": "小县城公务员",
    "target_type": "group",
    "target_explicitness": "explicit",
    "stance": "attack_or_endorse",
    "label": "harmful",
    "category": "status_occupation",
}


def rationale(
    target: str = "小县城公务员",
    target_type: str = "group",
    explicitness: str = "explicit",
    stance: str = "attack_or_endorse",
    label: str = "harmful",
    category: str = "status_occupation",
) -> str:
    """A canonical rationale carrying the given six values."""
    return (
        f"评论指向[T: {target}]，对象是[TY: {target_type}]，呈现方式[T: {explicitness}]。"
        f"作者立场[S: {stance}]，判断[L: {label}]，类别[C: {category}]。"
    )


def reference_row(item_id: str, **fields: str) -> dict[str, str]:
    """A valid reference JSON object; keyword arguments override the canonical record."""
    row = {"id": item_id, "text": "小县城公务员也就靠个编制，离了编制啥也不是。", **CANONICAL_RECORD}
    row.update(fields)
    return row


def write_lines(path: Path, rows: list[dict] | list[str]) -> Path:
    """Write JSON objects (or raw lines) as a UTF-8 JSONL file."""
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def shared_data() -> Path:
    """The real public data sets next to the repository; skipped in a user's fresh clone."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (only present in the development workspace)")
    return SHARED_DATA
