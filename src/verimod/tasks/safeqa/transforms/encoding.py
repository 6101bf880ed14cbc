"""Representation / encoding: encoded text, reversed text, emoji.

``encoding`` and ``reversed_text`` hide the whole seed in a payload that the model must decode
first, behind a Chinese decoding instruction (``resources/safeqa/instructions.json``); both are
declarative-only, as in C-SafeQA (Encoding/Decoding applies to declarative seeds). ``emoji``
replaces key words by pictographs in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from verimod.tasks.safeqa.transforms import codecs
from verimod.tasks.safeqa.transforms.base import (
    Context,
    DecodeError,
    Draft,
    EditBuilder,
    NotApplicableError,
    choose_some,
    decode_edits,
    load_table,
    payload,
    register,
    substitution_meta,
    wrap,
)
from verimod.tasks.safeqa.transforms.keys import find_keys

SCHEMES = ("base64", "hex", "morse", "caesar")
REVERSALS = ("chars", "clauses")
#: Share of the eligible emoji matches replaced.
EMOJI_RATIO = 0.6


def _encode(scheme: str, text: str, shift: int) -> str:
    if scheme == "base64":
        return codecs.encode_base64(text)
    if scheme == "hex":
        return codecs.encode_hex(text)
    if scheme == "morse":
        return codecs.encode_morse(text)
    return codecs.caesar(text, shift)


def decode_encoding(text: str, meta: Mapping[str, Any]) -> str:
    """The seed text of an ``encoding`` query: its payload decoded with ``meta["scheme"]``."""
    data, scheme = payload(text, meta), meta.get("scheme")
    try:
        if scheme == "base64":
            return codecs.decode_base64(data)
        if scheme == "hex":
            return codecs.decode_hex(data)
        if scheme == "morse":
            return codecs.decode_morse(data)
        if scheme == "caesar":
            return codecs.caesar(data, -int(meta["shift"]))
    except codecs.CodecError as exc:
        raise DecodeError(str(exc)) from None
    raise DecodeError(f"unknown encoding scheme {scheme!r} in meta")


@register(
    10,
    "encoding",
    channel="programmatic",
    family="representation/encoding",
    target="encoded-risk recognition (decode-then-answer)",
    declarative_only=True,
    variants=SCHEMES,
    decoder=decode_encoding,
)
def encoding(ctx: Context) -> Draft:
    """The whole seed encoded (Base64 / hex / Morse / Caesar) behind a Chinese decoding instruction.

    Schemes (variants): ``base64`` and ``hex`` of the UTF-8 bytes; ``morse`` of the decimal code
    points; ``caesar`` shifts Han characters in U+4E00–U+9FFF, letters and digits by a seeded
    ``shift`` in 1–25 (see :mod:`.codecs`). The instruction names the scheme (and the shift), so
    the request is fully recoverable. Meta: ``scheme``, ``shift`` (caesar), ``payload_span``,
    ``instructions`` (their version).
    """
    scheme = ctx.pick(SCHEMES)
    shift = ctx.rng.randint(1, 25)
    table = load_table("instructions")
    text, span = wrap(table["encoding"][scheme], _encode(scheme, ctx.query.text, shift), shift=str(shift))
    meta: dict[str, Any] = {"scheme": scheme, "payload_span": span, "instructions": table["version"]}
    if scheme == "caesar":
        meta["shift"] = shift
    return Draft(text, meta)


def decode_reversed(text: str, meta: Mapping[str, Any]) -> str:
    """The seed text of a ``reversed_text`` query: its payload reversed back."""
    order = meta.get("order")
    if order == "chars":
        return codecs.reverse_chars(payload(text, meta))
    if order == "clauses":
        return codecs.reverse_clauses(payload(text, meta))
    raise DecodeError(f"unknown reversal order {order!r} in meta")


@register(
    11,
    "reversed_text",
    channel="programmatic",
    family="representation/encoding",
    target="reversed-text recognition (read-backwards-then-answer)",
    declarative_only=True,
    variants=REVERSALS,
    decoder=decode_reversed,
)
def reversed_text(ctx: Context) -> Draft:
    """The seed written backwards (whole text, or each clause in place) behind a reading instruction.

    Variants: ``chars`` (the whole text reversed) and ``clauses`` (each run between punctuation
    reversed, punctuation in place). Meta: ``order``, ``payload_span``, ``instructions``.
    """
    order = ctx.pick(REVERSALS)
    reverse = codecs.reverse_chars if order == "chars" else codecs.reverse_clauses
    reversed_seed = reverse(ctx.query.text)
    if reversed_seed == ctx.query.text:
        raise NotApplicableError(f"{ctx.method}: query {ctx.query.id!r} reads the same backwards ({order})")
    table = load_table("instructions")
    text, span = wrap(table["reversed_text"][order], reversed_seed)
    return Draft(text, {"order": order, "payload_span": span, "instructions": table["version"]})


@lru_cache(maxsize=1)
def _emoji_table() -> tuple[dict[str, str], int]:
    data = load_table("emoji")
    table = {**data["chars"], **data["words"]}
    return table, max(map(len, table))


@register(
    9,
    "emoji",
    channel="programmatic",
    family="representation/encoding",
    target="pictographic substitution recognition (emoji for words)",
    decoder=decode_edits,
)
def emoji(ctx: Context) -> Draft:
    """Key words and characters replaced by emoji of the same meaning (炸弹 → 💣, 钱 → 💰).

    Matches are found left to right, longest entry of ``resources/safeqa/emoji.json`` first, and
    must lie entirely on key characters; a seeded :data:`EMOJI_RATIO` of them is replaced.
    Meta: ``ratio``, ``eligible`` (matches), ``positions``, ``edits``, ``table``.
    """
    table, longest = _emoji_table()
    text = ctx.query.text
    keys = set(find_keys(ctx.query).positions)
    matches: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        for size in range(min(longest, len(text) - i), 0, -1):
            if text[i : i + size] in table and all(j in keys for j in range(i, i + size)):
                matches.append((i, i + size))
                i += size
                break
        else:
            i += 1
    if not matches:
        raise NotApplicableError(f"{ctx.method}: no key word of query {ctx.query.id!r} is in the emoji table")
    builder = EditBuilder(text)
    for start, end in choose_some(ctx.rng, matches, EMOJI_RATIO):
        builder.replace(start, end, table[text[start:end]])
    new, edits = builder.finish()
    return Draft(new, substitution_meta(edits, len(matches), ratio=EMOJI_RATIO, table=load_table("emoji")["version"]))
