"""Exact, reversible text codecs used by the encoding and reversed-text transformations.

Every ``decode_*`` inverts its ``encode_*``: ``decode_x(encode_x(t)) == t``.

- **Base64** and **hex** encode the UTF-8 bytes (hex as two-digit bytes separated by spaces):
  exact for any text, decodable with any standard tool.
- **Morse** is International (ITU-R M.1677-1) Morse code of a *Latin plaintext*: lower-case
  letters, digits and the punctuation of :data:`ITU_MORSE`; letters of one token are separated
  by a space, tokens by `` / ``. Chinese text is first romanised into toned pinyin (the encoding
  transformation does that, see :mod:`.encoding`), so what a model decodes is ordinary Morse, then
  ordinary pinyin — never code-point numbers.
- **Caesar** shifts the ASCII letters of a Latin plaintext (the toned pinyin) inside the
  alphabet; digits (the tones) and punctuation stay. Undoing it is the same shift negated.
- **Reversal** by characters, or inside each clause (runs between punctuation and whitespace,
  which stay in place): both are their own inverse.
"""

from __future__ import annotations

import base64
import binascii
import re

#: International Morse code (ITU-R M.1677-1): letters, digits and the punctuation it defines.
ITU_MORSE: dict[str, str] = {
    "a": ".-", "b": "-...", "c": "-.-.", "d": "-..", "e": ".", "f": "..-.", "g": "--.", "h": "....",
    "i": "..", "j": ".---", "k": "-.-", "l": ".-..", "m": "--", "n": "-.", "o": "---", "p": ".--.",
    "q": "--.-", "r": ".-.", "s": "...", "t": "-", "u": "..-", "v": "...-", "w": ".--", "x": "-..-",
    "y": "-.--", "z": "--..",
    "0": "-----", "1": ".----", "2": "..---", "3": "...--", "4": "....-", "5": ".....", "6": "-....",
    "7": "--...", "8": "---..", "9": "----.",
    ".": ".-.-.-", ",": "--..--", "?": "..--..", "'": ".----.", "!": "-.-.--", "/": "-..-.", "(": "-.--.",
    ")": "-.--.-", "&": ".-...", ":": "---...", ";": "-.-.-.", "=": "-...-", "+": ".-.-.", "-": "-....-",
    "_": "..--.-", '"': ".-..-.", "$": "...-..-", "@": ".--.-.",
}  # fmt: skip
_MORSE_BACK = {code: char for char, code in ITU_MORSE.items()}
_CLAUSE = re.compile(r"[^\s，。！？；：、,.!?;:…“”\"'‘’（）()《》〈〉【】\[\]「」『』—–-]+")


class CodecError(ValueError):
    """A payload that its codec cannot decode (or a plaintext it cannot encode)."""


def encode_base64(text: str) -> str:
    """Base64 of the UTF-8 bytes."""
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def decode_base64(payload: str) -> str:
    """Inverse of :func:`encode_base64`."""
    try:
        return base64.b64decode(payload.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise CodecError(f"not Base64 of UTF-8 text: {exc}") from None


def encode_hex(text: str) -> str:
    """The UTF-8 bytes as two-digit lower-case hex, separated by spaces."""
    return " ".join(f"{b:02x}" for b in text.encode("utf-8"))


def decode_hex(payload: str) -> str:
    """Inverse of :func:`encode_hex` (whitespace between bytes is ignored)."""
    try:
        return bytes.fromhex(payload).decode("utf-8")
    except (UnicodeError, ValueError) as exc:
        raise CodecError(f"not hex of UTF-8 text: {exc}") from None


def encode_morse(plaintext: str) -> str:
    """International Morse of a plaintext of space-separated tokens (see the module docstring).

    >>> encode_morse("zha4 yao4")
    '--.. .... .- ....- / -.-- .- --- ....-'
    """
    tokens = plaintext.split(" ")
    if any(not token for token in tokens):
        raise CodecError("the plaintext must be tokens separated by single spaces")
    out = []
    for token in tokens:
        missing = [ch for ch in token if ch not in ITU_MORSE]
        if missing:
            raise CodecError(f"{missing[0]!r} has no International Morse code")
        out.append(" ".join(ITU_MORSE[ch] for ch in token))
    return " / ".join(out)


def decode_morse(payload: str) -> str:
    """Inverse of :func:`encode_morse`: the plaintext, tokens separated by single spaces."""
    if not payload:
        return ""
    tokens = []
    for group in payload.split(" / "):
        try:
            tokens.append("".join(_MORSE_BACK[code] for code in group.split(" ")))
        except KeyError as exc:
            raise CodecError(f"not International Morse code: {exc.args[0][:20]!r} in {group[:40]!r}") from None
    return " ".join(tokens)


def caesar(text: str, shift: int) -> str:
    """Shift ASCII letters by ``shift`` inside the alphabet (case kept); everything else stays.
    ``caesar(caesar(t, k), -k) == t``.

    >>> caesar("zha4 yao4", 3)
    'ckd4 bdr4'
    """
    out = []
    for ch in text:
        if "a" <= ch <= "z":
            out.append(chr(ord("a") + (ord(ch) - ord("a") + shift) % 26))
        elif "A" <= ch <= "Z":
            out.append(chr(ord("A") + (ord(ch) - ord("A") + shift) % 26))
        else:
            out.append(ch)
    return "".join(out)


def reverse_chars(text: str) -> str:
    """The text read backwards, character by character (its own inverse)."""
    return text[::-1]


def reverse_clauses(text: str) -> str:
    """Each clause reversed in place; punctuation and whitespace stay (its own inverse)."""
    return _CLAUSE.sub(lambda m: m.group()[::-1], text)
