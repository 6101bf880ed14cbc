"""Exact, reversible text codecs used by the encoding and reversed-text transformations.

Every ``decode_*`` inverts its ``encode_*`` for every Python string without surrogates:
``decode_x(encode_x(t)) == t``. Chinese text goes through Morse and the Caesar shift exactly:

- **Morse** writes each character as its Unicode code point in decimal and each digit in Morse
  (like the Chinese telegraph code, which sends four-digit numbers, with code points for numbers):
  digits of one character separated by a space, characters by `` / ``. 如 (U+5982 = 22914) →
  ``..--- ..--- ----. .---- ....-``.
- **Caesar** shifts Han characters of the unified block U+4E00–U+9FFF by ``shift`` code points
  (wrapping inside the block), ASCII letters inside their alphabet, ASCII digits inside 0–9;
  everything else stays. Undoing it is the same shift negated.
- **Base64** and **hex** encode the UTF-8 bytes (hex as two-digit bytes separated by spaces).
- **Reversal** by characters, or inside each clause (runs between punctuation and whitespace,
  which stay in place): both are their own inverse.
"""

from __future__ import annotations

import base64
import binascii
import re

MORSE_DIGITS = {
    "0": "-----",
    "1": ".----",
    "2": "..---",
    "3": "...--",
    "4": "....-",
    "5": ".....",
    "6": "-....",
    "7": "--...",
    "8": "---..",
    "9": "----.",
}
_MORSE_BACK = {code: digit for digit, code in MORSE_DIGITS.items()}
HAN_FIRST, HAN_LAST = 0x4E00, 0x9FFF
_HAN_SPAN = HAN_LAST - HAN_FIRST + 1
_CLAUSE = re.compile(r"[^\s，。！？；：、,.!?;:…“”\"'‘’（）()《》〈〉【】\[\]「」『』—–-]+")


class CodecError(ValueError):
    """A payload that its codec cannot decode."""


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


def encode_morse(text: str) -> str:
    """Code points in decimal, each digit in Morse (see the module docstring)."""
    return " / ".join(" ".join(MORSE_DIGITS[d] for d in str(ord(ch))) for ch in text)


def decode_morse(payload: str) -> str:
    """Inverse of :func:`encode_morse`."""
    if not payload:
        return ""
    out = []
    for group in payload.split(" / "):
        try:
            digits = "".join(_MORSE_BACK[code] for code in group.split(" "))
            out.append(chr(int(digits)))
        except (KeyError, ValueError, OverflowError):
            raise CodecError(f"not a Morse-coded code point: {group[:40]!r}") from None
    return "".join(out)


def caesar(text: str, shift: int) -> str:
    """Shift Han characters (U+4E00–U+9FFF), ASCII letters and digits by ``shift`` (wrapping);
    ``caesar(caesar(t, k), -k) == t``."""
    out = []
    for ch in text:
        cp = ord(ch)
        if HAN_FIRST <= cp <= HAN_LAST:
            out.append(chr(HAN_FIRST + (cp - HAN_FIRST + shift) % _HAN_SPAN))
        elif "a" <= ch <= "z":
            out.append(chr(ord("a") + (cp - ord("a") + shift) % 26))
        elif "A" <= ch <= "Z":
            out.append(chr(ord("A") + (cp - ord("A") + shift) % 26))
        elif "0" <= ch <= "9":
            out.append(chr(ord("0") + (cp - ord("0") + shift) % 10))
        else:
            out.append(ch)
    return "".join(out)


def reverse_chars(text: str) -> str:
    """The text read backwards, character by character (its own inverse)."""
    return text[::-1]


def reverse_clauses(text: str) -> str:
    """Each clause reversed in place; punctuation and whitespace stay (its own inverse)."""
    return _CLAUSE.sub(lambda m: m.group()[::-1], text)
