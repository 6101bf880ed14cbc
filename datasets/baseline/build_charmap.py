"""Build ``src/verimod/resources/baseline/charmap.json``: the character tables of the baseline
model's obfuscation-robust views (see :mod:`verimod.models.baseline.charmap`).

Reproducible: ``python datasets/baseline/build_charmap.py --pycorrector-wheel PATH`` where PATH is
``pycorrector-1.1.4-py3-none-any.whl`` (``pip download pycorrector==1.1.4 --no-deps``; only its
``data/same_stroke.txt`` is read). Needs, at build time only, ``pypinyin`` (MIT), ``opencc``
(Apache-2.0) and ``emoji`` (BSD-3-Clause) — the model reads the JSON and needs none of them.

Tables:

- ``t2s``: Traditional → Simplified, one character to one character: every Han character of the
  BMP unified and compatibility blocks and extension A that OpenCC's ``t2s``, ``tw2s`` or
  ``hk2s`` converts to a different single character (first of the three that does);
- ``pinyin``: toneless syllable → the characters whose first reading in pypinyin (NORMAL style,
  heteronyms off) is that syllable, for the same characters (after t2s);
- ``glyph_groups``: the similar-shape groups of pycorrector's ``same_stroke.txt`` (Apache-2.0),
  as written there (one string per group);
- ``emoji``: emoji (single code point from U+2300 on, variation selectors dropped) → its CLDR
  Chinese short name as the ``emoji`` package gives it (``language="zh"``).

These sources are independent of the tables of verimod's SafeQA transformations
(``resources/safeqa``), with which the model's robustness is measured.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import unicodedata
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src/verimod/resources/baseline/charmap.json"
VERSION = "baseline-charmap/1"
BLOCKS = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))


def _han() -> list[str]:
    return [chr(c) for lo, hi in BLOCKS for c in range(lo, hi + 1) if unicodedata.category(chr(c)) == "Lo"]


def _t2s(chars: list[str]) -> dict[str, str]:
    import opencc

    converters = [opencc.OpenCC(name) for name in ("t2s", "tw2s", "hk2s")]
    table: dict[str, str] = {}
    for ch in chars:
        for converter in converters:
            out = converter.convert(ch)
            if len(out) == 1 and out != ch:
                table[ch] = out
                break
    return table


def _pinyin(chars: list[str], t2s: dict[str, str]) -> dict[str, str]:
    from pypinyin import Style, lazy_pinyin

    groups: dict[str, list[str]] = {}
    for ch in chars:
        if ch in t2s:
            continue  # read through its Simplified form
        reading = lazy_pinyin(ch, style=Style.NORMAL, errors="ignore", v_to_u=False)
        if len(reading) == 1 and reading[0].isascii() and reading[0].isalpha():
            groups.setdefault(reading[0], []).append(ch)
    return {syllable: "".join(chars) for syllable, chars in sorted(groups.items())}


def _glyph_groups(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read("pycorrector/data/same_stroke.txt").decode("utf-8")
    groups = []
    for line in text.splitlines():
        members = [c for c in line.split() if len(c) == 1]
        if len(members) >= 2:
            groups.append("".join(dict.fromkeys(members)))
    return groups


def _emoji() -> dict[str, str]:
    import emoji
    from emoji.unicode_codes import load_from_json

    load_from_json("zh")  # the language data is loaded on demand
    table: dict[str, str] = {}
    for symbol, data in emoji.EMOJI_DATA.items():
        core = symbol.replace("\ufe0f", "").replace("\ufe0e", "")
        name = data.get("zh")
        if len(core) != 1 or ord(core) < 0x2300 or not name:
            continue  # one pictograph; ©, ®, ™ and arrows below U+2300 are not emoji here
        table[core] = name.strip(":").replace("_", "")
    return dict(sorted(table.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pycorrector-wheel", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    import emoji
    import opencc
    import pypinyin

    chars = _han()
    t2s = _t2s(chars)
    data = {
        "_about": (
            "Character tables of the baseline model's robust views, built by datasets/baseline/build_charmap.py: "
            "t2s from OpenCC (Apache-2.0), pinyin from pypinyin (MIT), glyph_groups from pycorrector's "
            "same_stroke.txt (Apache-2.0), emoji names from the emoji package's CLDR Chinese names (BSD-3-Clause). "
            "Changing this file must bump 'version'."
        ),
        "version": VERSION,
        "sources": {
            "opencc": getattr(opencc, "__version__", "unknown"),
            "pypinyin": pypinyin.__version__,
            "pycorrector_same_stroke_sha256": hashlib.sha256(
                zipfile.ZipFile(args.pycorrector_wheel).read("pycorrector/data/same_stroke.txt")
            ).hexdigest(),
            "emoji": emoji.__version__,
        },
        "t2s": dict(sorted(t2s.items())),
        "pinyin": _pinyin(chars, t2s),
        "glyph_groups": _glyph_groups(args.pycorrector_wheel),
        "emoji": _emoji(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(
        f"{args.out}: t2s {len(data['t2s'])}, pinyin {len(data['pinyin'])} syllables, "
        f"glyph groups {len(data['glyph_groups'])}, emoji {len(data['emoji'])}; {args.out.stat().st_size:,} bytes"
    )


if __name__ == "__main__":
    main()
