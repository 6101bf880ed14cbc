"""Representation / encoding: encoded text, reversed text, emoji.

``encoding`` and ``reversed_text`` hide the whole seed in a payload that the model must decode
first, behind a Chinese decoding instruction (``resources/safeqa/instructions.json``); both are
declarative-only, as in C-SafeQA (Encoding/Decoding applies to declarative seeds). ``emoji``
replaces whole key words by pictographs in place.

Morse and Caesar act on the seed's **toned pinyin** (:func:`romanise`), not on code points: a
model that knows Morse and pinyin can read the request back, which nobody can from Morse-coded
Unicode numbers or from Han characters shifted through the code table.
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
    choose_risk_first,
    decode_edits,
    load_table,
    payload,
    register,
    substitution_meta,
    wrap,
)
from verimod.tasks.safeqa.transforms.deps import library_version, pinyin_per_char
from verimod.tasks.safeqa.transforms.keys import find_keys

SCHEMES = ("base64", "hex", "morse", "caesar")
REVERSALS = ("chars", "clauses")
#: Share of the eligible emoji words replaced (risk terms first).
EMOJI_RATIO = 0.6
#: Chinese and ASCII punctuation → the ASCII mark written in the romanised plaintext (all have Morse codes).
PUNCTUATION = {
    "，": ",", "。": ".", "？": "?", "！": "!", "：": ":", "；": ";", "、": ",", "“": '"', "”": '"', "‘": "'",
    "’": "'", "（": "(", "）": ")", "—": "-", "–": "-", "《": '"', "》": '"', "·": "-", "/": "/", "+": "+",
    ",": ",", ".": ".", "?": "?", "!": "!", ":": ":", ";": ";", '"': '"', "'": "'", "(": "(", ")": ")",
    "-": "-", "=": "=", "@": "@", "&": "&", "_": "_", "$": "$",
}  # fmt: skip
ROMANISATION = "pinyin-tone3/v/5"


def romanise(text: str) -> list[tuple[str, str | None]]:
    """The seed cut into pieces ``(seed text, plaintext token)`` whose tokens, joined by single
    spaces, are the Latin plaintext that Morse and Caesar encode.

    - a Han character with a reading → its pinyin with the tone as a digit (pypinyin ``tone3``
      read in context; the neutral tone is ``5``, ü is written ``v``): 炸 → ``zha4``;
    - a run of ASCII letters and digits → the run in lower case (``QQ`` → ``qq``);
    - a punctuation mark of :data:`PUNCTUATION` → its ASCII mark (，→ ``,``);
    - whitespace → no token (its piece has token None);
    - anything else (a Han character without a reading, an emoji, é…) → ``u+`` and its code
      point in hex (``u+1f4a3``).

    Joining the pieces' seed texts gives the seed back, which is how :func:`decode_encoding`
    restores it exactly once the payload has been checked against the tokens.
    """
    readings = pinyin_per_char(text, "tone3")
    pieces: list[tuple[str, str | None]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isascii() and ch.isalnum():
            j = i
            while j < len(text) and text[j].isascii() and text[j].isalnum():
                j += 1
            pieces.append((text[i:j], text[i:j].lower()))
            i = j
            continue
        syllable = readings[i]
        if syllable:
            token = syllable if syllable[-1].isdigit() else syllable + "5"
            pieces.append((ch, token.replace("ü", "v")))
        elif ch.isspace():
            pieces.append((ch, None))
        elif ch in PUNCTUATION:
            pieces.append((ch, PUNCTUATION[ch]))
        else:
            pieces.append((ch, f"u+{ord(ch):04x}"))
        i += 1
    return pieces


def plaintext(pieces: list[tuple[str, str | None]] | list[list[Any]]) -> str:
    """The romanised plaintext: the pieces' tokens joined by single spaces."""
    return " ".join(str(token) for _old, token in pieces if token is not None)


def _encode(scheme: str, text: str, shift: int) -> tuple[str, dict[str, Any]]:
    if scheme == "base64":
        return codecs.encode_base64(text), {}
    if scheme == "hex":
        return codecs.encode_hex(text), {}
    pieces = romanise(text)
    latin = plaintext(pieces)
    if not latin:
        raise NotApplicableError(f"encoding ({scheme}): the seed has nothing to romanise")
    meta: dict[str, Any] = {
        "romanisation": ROMANISATION,
        "pypinyin": library_version("pypinyin"),
        "pieces": [list(piece) for piece in pieces],
    }
    if scheme == "morse":
        return codecs.encode_morse(latin), meta
    return codecs.caesar(latin, shift), meta


def decode_encoding(text: str, meta: Mapping[str, Any]) -> str:
    """The seed text of an ``encoding`` query: its payload decoded with ``meta["scheme"]``.

    Morse and Caesar payloads decode to the romanised plaintext, which must equal the tokens of
    ``meta["pieces"]`` (else :class:`~.base.DecodeError`); the seed is then the pieces' seed texts.
    """
    data, scheme = payload(text, meta), meta.get("scheme")
    try:
        if scheme == "base64":
            return codecs.decode_base64(data)
        if scheme == "hex":
            return codecs.decode_hex(data)
        if scheme in ("morse", "caesar"):
            latin = codecs.decode_morse(data) if scheme == "morse" else codecs.caesar(data, -int(meta["shift"]))
            pieces = meta["pieces"]
            if latin != plaintext(pieces):
                raise DecodeError(f"the {scheme} payload does not decode to the romanised seed of the meta")
            return "".join(str(old) for old, _token in pieces)
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

    Schemes (variants): ``base64`` and ``hex`` of the UTF-8 bytes; ``morse`` — International
    Morse of the seed's toned pinyin (:func:`romanise`); ``caesar`` — the toned pinyin with its
    letters shifted by a seeded ``shift`` in 1–25 (tone digits and punctuation unchanged). The
    instruction names the scheme, the romanisation (tone digits, 5 = neutral tone, v = ü) and the
    shift, so a model can decode it step by step. Meta: ``scheme``, ``shift`` (caesar),
    ``payload_span``, ``instructions`` (their version); Morse and Caesar also ``pieces`` (seed text
    → token), ``romanisation`` and ``pypinyin``.
    """
    scheme = ctx.pick(SCHEMES)
    shift = ctx.rng.randint(1, 25)
    table = load_table("instructions")
    encoded, extra = _encode(scheme, ctx.query.text, shift)
    text, span = wrap(table["encoding"][scheme], encoded, shift=str(shift))
    meta: dict[str, Any] = {"scheme": scheme, "payload_span": span, "instructions": table["version"], **extra}
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


def emoji_for_word(word: str) -> str | None:
    """The emoji that write ``word`` as a whole, or None.

    The word is cut left to right into entries of ``resources/safeqa/emoji.json``, longest
    first (炸弹 → 💣; 毒钱 → ☠️💰); a word any part of which has no entry gets None, so a word
    is never half replaced (资源 stays 资源 rather than 💰源).
    """
    table, longest = _emoji_table()
    out: list[str] = []
    i = 0
    while i < len(word):
        for size in range(min(longest, len(word) - i), 0, -1):
            if word[i : i + size] in table:
                out.append(table[word[i : i + size]])
                i += size
                break
        else:
            return None
    return "".join(out)


@register(
    9,
    "emoji",
    channel="programmatic",
    family="representation/encoding",
    target="pictographic substitution recognition (emoji for words)",
    decoder=decode_edits,
)
def emoji(ctx: Context) -> Draft:
    """Whole key words replaced by emoji of the same meaning (炸弹 → 💣, 钱 → 💰).

    Word level: only a key word (:mod:`.keys`) that :func:`emoji_for_word` writes entirely is
    eligible, and it is replaced as a whole. Risk terms first, then other eligible words up to
    :data:`EMOJI_RATIO` of them (:func:`~.base.choose_risk_first`). Meta: ``ratio``, ``eligible``
    (words), ``positions``, ``edits``, ``table``, ``risk_coverage``.
    """
    text = ctx.query.text
    keys = find_keys(ctx.query)
    matches = [(s, e, pictographs) for s, e in keys.words if (pictographs := emoji_for_word(text[s:e]))]
    if not matches:
        raise NotApplicableError(f"{ctx.method}: no key word of query {ctx.query.id!r} is in the emoji table")
    builder = EditBuilder(text)
    for start, end, pictographs in choose_risk_first(ctx.rng, matches, lambda m: (m[0], m[1]), keys, EMOJI_RATIO):
        builder.replace(start, end, pictographs)
    new, edits = builder.finish()
    return Draft(new, substitution_meta(edits, len(matches), ratio=EMOJI_RATIO, table=load_table("emoji")["version"]))
