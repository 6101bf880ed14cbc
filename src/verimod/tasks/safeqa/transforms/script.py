"""Script and language, programmatic: Traditional script, pinyin, pinyin initials, mixed script.

All four are edit-based (the substituted seed positions and the original text are in
``meta["edits"]``) and reversed exactly by :func:`~.base.decode_edits`. Latin text written next
to other Latin text is separated by one space (which the edit records), never next to Han.
"""

from __future__ import annotations

import difflib
from typing import Any

from verimod.tasks.safeqa.transforms.base import (
    Context,
    Draft,
    EditBuilder,
    NotApplicableError,
    choose_risk_first,
    decode_edits,
    load_table,
    pad_latin,
    register,
    substitution_meta,
)
from verimod.tasks.safeqa.transforms.deps import PinyinStyle, library_version, opencc_converter, pinyin_per_char
from verimod.tasks.safeqa.transforms.keys import find_keys

#: Share of the eligible key words (pinyin methods) or units (mixed script) rewritten.
RATIO = 0.5
OPENCC_CONFIGS = ("s2t", "s2tw", "s2hk")


@register(
    3,
    "traditional",
    channel="programmatic",
    family="script/language",
    target="script-invariant recognition (简 → 繁)",
    variants=OPENCC_CONFIGS,
    decoder=decode_edits,
)
def traditional(ctx: Context) -> Draft:
    """The whole seed in Traditional script with OpenCC (s2t, s2tw or s2hk: 谣言 → 謠言).

    Every character that changed is an edit (a character diff of the seed and OpenCC's output), so
    the Simplified seed comes back exactly, which converting back with t2s does not guarantee.
    Meta: ``config``, ``opencc`` (its version), ``positions``, ``edits``. A seed with nothing to
    convert is not applicable.
    """
    config = ctx.pick(OPENCC_CONFIGS)
    text = ctx.query.text
    converted = str(opencc_converter(config).convert(text))
    if converted == text:
        raise NotApplicableError(f"{ctx.method}: query {ctx.query.id!r} is the same in Traditional script")
    builder = EditBuilder(text)
    matcher = difflib.SequenceMatcher(None, text, converted, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            builder.replace(i1, i2, converted[j1:j2])
    new, edits = builder.finish()
    meta = substitution_meta(edits, len(text), config=config, opencc=library_version("opencc"))
    meta.pop("eligible")  # every character is eligible
    return Draft(new, meta)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and merged[-1][1] == start:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _romanise_words(ctx: Context, style: PinyinStyle, join: str, case: str) -> Draft:
    text = ctx.query.text
    syllables = pinyin_per_char(text, style)
    keys = find_keys(ctx.query)
    words = [(s, e) for s, e in keys.words if all(syllables[i] for i in range(s, e))]
    if not words:
        raise NotApplicableError(f"{ctx.method}: query {ctx.query.id!r} has no key word with a pinyin reading")
    chosen = _merge(choose_risk_first(ctx.rng, words, lambda word: word, keys, RATIO))
    builder = EditBuilder(text)
    for start, end in chosen:
        latin = join.join(str(syllables[i]) for i in range(start, end))
        latin = latin.upper() if case == "upper" else latin
        builder.replace(start, end, pad_latin(builder, start, end, latin))
    new, edits = builder.finish()
    return Draft(new, substitution_meta(edits, len(words), ratio=RATIO, pypinyin=library_version("pypinyin")))


@register(
    4,
    "pinyin",
    channel="programmatic",
    family="script/language",
    target="romanised-risk recognition (全拼)",
    variants=("tone", "plain"),
    decoder=decode_edits,
)
def pinyin(ctx: Context) -> Draft:
    """Key words written in full pinyin, syllables separated by spaces (炸药 → zhà yào / zha yao).

    Readings in context (pypinyin); variant ``tone`` keeps tone marks, ``plain`` drops them.
    Risk terms first (:func:`~.base.choose_risk_first`); adjacent chosen words are written as one
    run. Meta: ``ratio``, ``eligible`` (key words with a
    reading), ``positions``, ``edits``, ``pypinyin``.
    """
    variant = ctx.pick(("tone", "plain"))
    return _romanise_words(ctx, "tone" if variant == "tone" else "plain", " ", "lower")


@register(
    5,
    "pinyin_initials",
    channel="programmatic",
    family="script/language",
    target="abbreviation recognition (拼音首字母)",
    variants=("upper", "lower"),
    decoder=decode_edits,
)
def pinyin_initials(ctx: Context) -> Draft:
    """Key words written as the initials of their pinyin (炸药 → ZY / zy).

    Meta: ``ratio``, ``eligible``, ``positions``, ``edits``, ``pypinyin``.
    """
    case = ctx.pick(("upper", "lower"))
    return _romanise_words(ctx, "initial", "", case)


@register(
    8,
    "mixed_script",
    channel="programmatic",
    family="script/language",
    target="code-mixed recognition (Chinese mixed with English, pinyin and digits)",
    decoder=decode_edits,
)
def mixed_script(ctx: Context) -> Draft:
    """Key words or characters replaced by English words, toneless pinyin or digits (制作炸药 → 制zuo explosives).

    Units, per key word: the whole word when ``resources/safeqa/mixed_script.json`` glosses it in
    English; otherwise each character — a numeral becomes its digits, a glossed character its
    English word, any other its toneless pinyin. The units on risk terms first, then others up to
    :data:`RATIO` of them (:func:`~.base.choose_risk_first`).
    Meta: ``ratio``, ``eligible`` (units), ``kinds`` (english | digits | pinyin per edit),
    ``positions``, ``edits``, ``table``, ``pypinyin``.
    """
    data = load_table("mixed_script")
    gloss: dict[str, str] = data["gloss"]
    digits: dict[str, str] = data["digits"]
    text = ctx.query.text
    syllables = pinyin_per_char(text, "plain")
    units: list[tuple[int, int, str, str]] = []
    keys = find_keys(ctx.query)
    for start, end in keys.words:
        word = text[start:end]
        if word in gloss:
            units.append((start, end, gloss[word], "english"))
            continue
        for i in range(start, end):
            if text[i] in digits:
                units.append((i, i + 1, digits[text[i]], "digits"))
            elif text[i] in gloss:
                units.append((i, i + 1, gloss[text[i]], "english"))
            elif syllables[i]:
                units.append((i, i + 1, str(syllables[i]), "pinyin"))
    if not units:
        raise NotApplicableError(f"{ctx.method}: query {ctx.query.id!r} has no key character to rewrite")
    builder = EditBuilder(text)
    kinds: list[str] = []
    for start, end, latin, kind in choose_risk_first(ctx.rng, units, lambda unit: (unit[0], unit[1]), keys, RATIO):
        builder.replace(start, end, pad_latin(builder, start, end, latin))
        kinds.append(kind)
    new, edits = builder.finish()
    meta: dict[str, Any] = substitution_meta(
        edits, len(units), ratio=RATIO, table=data["version"], pypinyin=library_version("pypinyin")
    )
    meta["kinds"] = kinds
    return Draft(new, meta)
