"""Character classes and the character-level rules of text normalisation: HTML, invisible and
control characters, NFKC with Chinese punctuation kept, punctuation modes, emoji, whitespace.

Every rule is a pure function ``rule(text, counts) -> text`` (options bound by
:func:`verimod.data.normalize_rules.build_rules`) that adds the number of items it removed or
replaced to ``counts[rule name]``. Their contracts are in their docstrings; the pipeline order
and the reasons for each choice are in :mod:`verimod.data.normalize`.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

# --- character classes (regular-expression class bodies) ----------------------------------------

#: Han ideographs: extension A, unified, compatibility, extensions B–F and supplement, plus 〇.
HAN = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"

#: Chinese full-width punctuation that plain NFKC would fold to ASCII (，→, …→...), kept by default.
PROTECTED = "，！？：；（）～…"
PROTECTED_ASCII = (",", "!", "?", ":", ";", "(", ")", "~", "...")

#: Spacing accents that NFKC turns into a space plus a combining mark (´ → " ́", ￣ → " ̄"):
#: common in kaomoji such as (´・ω・`) and (￣▽￣), kept as typed so NFKC never inserts a space.
SPACING_MARKS = (
    "\u00a8\u00af\u00b4\u00b8\u02d8-\u02dd\u037a\u0384\u0385\u1fbd\u1fbf-\u1fc1\u1fcd-\u1fcf"
    "\u1fdd-\u1fdf\u1fed\u1fee\u1ffd\u1ffe\u2017\u203e\u309b\u309c\ufc5e-\ufc63\ufe49-\ufe4c"
    "\ufe70\ufe72\ufe74\ufe76\ufe78\ufe7a\ufe7c\ufe7e\uffe3"
)

#: Vertical and small presentation forms of the protected marks (NFKC would make them ASCII).
PUNCT_VARIANTS = {
    "\ufe10": "，",
    "\ufe50": "，",
    "\ufe15": "！",
    "\ufe57": "！",
    "\ufe16": "？",
    "\ufe56": "？",
    "\ufe13": "：",
    "\ufe55": "：",
    "\ufe14": "；",
    "\ufe54": "；",
    "\ufe35": "（",
    "\ufe59": "（",
    "\ufe36": "）",
    "\ufe5a": "）",
    "\ufe19": "…",
}

#: Wide Chinese punctuation: a space beside one of these carries no meaning and is dropped.
CJK_MARKS = "，。、；：？！（）「」『』【】《》〈〉〔〕〖〗～"

#: Emoji shown as emoji by default (Emoji_Presentation): always removed by the emoji option.
EMOJI_ALWAYS = (
    "\u231a\u231b\u23e9-\u23ec\u23f0\u23f3\u25fd\u25fe\u2614\u2615\u2648-\u2653\u267f\u2693\u26a1"
    "\u26aa\u26ab\u26bd\u26be\u26c4\u26c5\u26ce\u26d4\u26ea\u26f2\u26f3\u26f5\u26fa\u26fd\u2705\u270a"
    "\u270b\u2728\u274c\u274e\u2753-\u2755\u2757\u2795-\u2797\u27b0\u27bf\u2b1b\u2b1c\u2b50\u2b55"
    "\U0001f000-\U0001f0ff\U0001f18e\U0001f191-\U0001f19a\U0001f300-\U0001f6ff\U0001f7e0-\U0001f7eb"
    "\U0001f90c-\U0001f9ff\U0001fa70-\U0001faff"
)
#: Pictographs shown as text by default (★ ♀ ❤ ✔ ©…): removed only as emoji (with U+FE0F or in a ZWJ sequence).
EMOJI_TEXT = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u2199\u21a9\u21aa\u2328\u23cf\u23ed-\u23ef\u23f1\u23f2"
    "\u23f8-\u23fa\u24c2\u25aa\u25ab\u25b6\u25c0\u25fb\u25fc\u2600-\u27bf\u2934\u2935\u2b05-\u2b07\u3030"
    "\u303d\u3297\u3299\U0001f170\U0001f171\U0001f17e\U0001f17f"
)
EMOJI_MOD = "\U0001f3fb-\U0001f3ff"  # skin tones
EMOJI_TAG = "\U000e0020-\U000e007f"  # tag characters of subdivision flags

#: Invisible format characters (zero-width, bidi controls, BOM, soft hyphen, fillers…). U+200D
#: (ZWJ) is handled apart: it is kept inside emoji ZWJ sequences.
INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u200c\u200e\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufeff\ufff9-\ufffb\uffa0"
)
#: C0 and C1 controls other than the line and tab characters (those become spaces).
CONTROLS = "\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f"

# --- compiled patterns --------------------------------------------------------------------------

_LITERAL_ESCAPE_RE = re.compile(r"(?<!\\)\\(?:u(?P<code>[0-9a-fA-F]{4})|(?P<char>[rnt\"']))")
_ESCAPES = {"r": "\r", "n": "\n", "t": "\t", '"': '"', "'": "'"}
_ENTITY_RE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_MAX_UNESCAPE = 5
_BLOCK_TAGS = frozenset(
    ("article", "blockquote", "body", "br", "dd", "div", "dl", "dt", "figcaption", "figure", "footer", "h1", "h2",
     "h3", "h4", "h5", "h6", "head", "header", "hr", "html", "li", "nav", "ol", "p", "pre", "section", "table",
     "tbody", "td", "th", "thead", "title", "tr", "ul")
)  # fmt: skip
_INVISIBLE_RE = re.compile(
    rf"[{INVISIBLE}{CONTROLS}\ud800-\udfff]"
    rf"|(?<![{EMOJI_ALWAYS}{EMOJI_TEXT}{EMOJI_MOD}{EMOJI_TAG}\ufe0f])\u200d"
    rf"|\u200d(?![{EMOJI_ALWAYS}{EMOJI_TEXT}])"
)
_MAYBE_INVISIBLE_RE = re.compile(rf"[{INVISIBLE}{CONTROLS}\ud800-\udfff\u200d]")  # cheap pre-check
_BREAKS_TO_SPACE = str.maketrans(dict.fromkeys("\t\n\v\f\r\x85\u2028\u2029", " "))
_BREAKS_TO_NEWLINE = str.maketrans({"\t": " ", **dict.fromkeys("\v\f\r\x85\u2028\u2029", "\n")})
_HAS_BREAK_RE = re.compile("[\t\n\v\f\r\x85\u2028\u2029]")


def _expand(ranges: str) -> str:
    """The characters of a character-class body made of single characters and ``a-b`` ranges."""
    out, i = [], 0
    while i < len(ranges):
        if i + 2 < len(ranges) and ranges[i + 1] == "-":
            out += [chr(c) for c in range(ord(ranges[i]), ord(ranges[i + 2]) + 1)]
            i += 3
        else:
            out.append(ranges[i])
            i += 1
    return "".join(out)


_KEPT_FROM_NFKC = PROTECTED + _expand(SPACING_MARKS)
_SENTINEL = 0xF0000  # Supplementary Private Use Area-A: where kept characters hide from NFKC
_VARIANTS = str.maketrans(PUNCT_VARIANTS)
_VARIANT_RE = re.compile(f"[{''.join(PUNCT_VARIANTS)}]")
_KEPT_RE = re.compile(f"[{PROTECTED}{SPACING_MARKS}]")
_PROTECT = str.maketrans({ch: chr(_SENTINEL + i) for i, ch in enumerate(_KEPT_FROM_NFKC)})
_UNPROTECT = str.maketrans({chr(_SENTINEL + i): ch for i, ch in enumerate(_KEPT_FROM_NFKC)})
_PROTECTED_SPLIT_RE = re.compile(f"([{PROTECTED}{SPACING_MARKS}])")
#: Half-width (semi-)voiced marks not after half-width katakana (kaomoji: (ﾟ∀ﾟ)) → spacing ゛ ゜.
_LONE_HALFWIDTH_VOICING_RE = re.compile("(?<![\uff66-\uff9d])[\uff9e\uff9f]")
_VOICING_TO_SPACING = str.maketrans({"\uff9e": "\u309b", "\uff9f": "\u309c"})
_ASCII_OF = dict(zip(PROTECTED, PROTECTED_ASCII, strict=True))
_TO_ASCII = str.maketrans({**_ASCII_OF, **{v: _ASCII_OF[mark] for v, mark in PUNCT_VARIANTS.items()}})
_ASCII_MARKS_AFTER_HAN_RE = re.compile(rf"(?<=[{HAN}])[,!?;:~]+")
_ASCII_TO_WIDE = str.maketrans(dict(zip(",!?;:~", "，！？；：～", strict=True)))
_PAREN_OPEN_RE = re.compile(rf"\((?=[{HAN}])")
_PAREN_CLOSE_RE = re.compile(rf"(?<=[{HAN}])\)")

_EMOJI_TAIL = rf"\ufe0f?[{EMOJI_MOD}]?[{EMOJI_TAG}]*"
_EMOJI_RE = re.compile(
    rf"[0-9#*]\ufe0f?\u20e3"  # keycaps
    rf"|[\U0001f1e6-\U0001f1ff]{{1,2}}"  # flags (regional-indicator pairs)
    rf"|(?:[{EMOJI_ALWAYS}]{_EMOJI_TAIL}|[{EMOJI_TEXT}](?:\ufe0f[{EMOJI_MOD}]?[{EMOJI_TAG}]*|(?=\u200d)))"
    rf"(?:\u200d[{EMOJI_ALWAYS}{EMOJI_TEXT}]{_EMOJI_TAIL})*"
    r"|\ufe0f"  # a stray emoji variation selector
)
_MAYBE_EMOJI_RE = re.compile(f"[{EMOJI_ALWAYS}{EMOJI_TEXT}\U0001f1e6-\U0001f1ff\ufe0f\u20e3]")  # cheap pre-check
_EMOTICON_RE = re.compile(r"\[[A-Za-z\u4e00-\u9fff]{1,8}\]")

_ALL_SPACE_RE = re.compile(r"\s+")
_HSPACE_RE = re.compile(r"[^\S\n]+")
_NEWLINE_RUN_RE = re.compile(r" ?\n\s*")
_MARK_SPACE_RE = re.compile(rf" ?([{CJK_MARKS}]) ?")
_OTHER_SPACE_RE = re.compile(r"[^\S ]")  # whitespace other than the ASCII space
_HAN_SPACE_RE = re.compile(rf"(?P<mention>@[\w\-]+ )|(?<=[{HAN}]) (?=[{HAN}])")


# --- rules --------------------------------------------------------------------------------------


def decode_literal_escapes(text: str, counts: Counter[str]) -> str:
    """Backslash escapes left in the text by a double JSON/CSV encoding — ``\\r\\n`` ``\\n`` ``\\r``
    ``\\t`` ``\\"`` ``\\'`` and ``\\uXXXX`` written out as characters — decoded (line breaks and tabs
    then become spaces in ``controls``). A backslash preceded by a backslash is left alone, as
    are other sequences (``D:\\下载``) and ``\\u`` escapes of a backslash or a surrogate."""
    if "\\" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        code = match.group("code")
        value = chr(int(code, 16)) if code else _ESCAPES[match.group("char")]
        if value == "\\" or "\ud800" <= value <= "\udfff":
            return match.group()
        counts["escapes"] += 1
        return value

    return _LITERAL_ESCAPE_RE.sub(one, text)


def unescape_entities(text: str, counts: Counter[str]) -> str:
    """HTML entities that end in ``;`` (named, decimal, hex) → their characters, repeated until
    none is left (``&amp;lt;`` → ``<``, at most 5 rounds). Entities without ``;`` (``&copy``,
    ``&not``) are left alone: in plain text they are far more often words than markup."""
    if "&" not in text:
        return text
    for _ in range(_MAX_UNESCAPE):
        hits = 0

        def one(match: re.Match[str]) -> str:
            nonlocal hits
            value = html.unescape(match.group())
            hits += value != match.group()
            return value

        text = _ENTITY_RE.sub(one, text)
        counts["html"] += hits
        if not hits or "&" not in text:
            break
    return text


def remove_tags(text: str, counts: Counter[str], tag_re: re.Pattern[str], tail_re: re.Pattern[str]) -> str:
    """HTML tags of known elements (``normalize_patterns.json: html_tags``), comments, and
    ``<script>``/``<style>`` elements with their content, removed; block-level tags (``<br>``,
    ``<p>``, ``<div>``…) become a space so words on either side stay apart. A ``<`` that does not
    open a known tag (``<3``, ``a<b``) is text and stays; so does a truncated closing tag
    (``</p``) unless it ends the text (``tail_re``)."""
    if "<" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        counts["html"] += 1
        name = (match.group("name") or "").lower()
        return " " if name in _BLOCK_TAGS else ""

    text = tag_re.sub(one, text)
    if "</" in text:
        text, n = tail_re.subn("", text)
        counts["html"] += n
    return text


def remove_invisible(text: str, counts: Counter[str], keep_newlines: bool) -> str:
    """Zero-width characters (U+200B–U+200F), word joiner and invisible operators
    (U+2060–U+2064), BOM (U+FEFF), bidi controls (U+202A–U+202E, U+2066–U+2069), soft hyphen,
    Hangul fillers, C0/C1 controls and lone surrogates are removed; ZWJ (U+200D) is kept only
    between two emoji (it is part of a ZWJ sequence such as 🤦‍♂️). Tab, CR, LF, VT, FF, NEL,
    U+2028 and U+2029 become spaces — or, with ``keep_newlines``, line breaks become ``\\n``
    (CRLF counts as one) and tabs spaces."""
    if _MAYBE_INVISIBLE_RE.search(text):
        text, removed = _INVISIBLE_RE.subn("", text)
        counts["controls"] += removed
    if _HAS_BREAK_RE.search(text):
        if keep_newlines:
            text = text.replace("\r\n", "\n").translate(_BREAKS_TO_NEWLINE)
        else:
            text = text.translate(_BREAKS_TO_SPACE)
    return text


def nfkc_keeping_chinese_marks(text: str, counts: Counter[str]) -> str:
    """Unicode NFKC (full-width letters/digits/ASCII symbols → ASCII, U+3000 → space,
    half-width katakana → full-width, ① → 1, ﬁ → fi…) except that the Chinese marks
    ``，！？：；（）～…`` stay as typed; their vertical and small presentation forms (︐ ﹐ ︕ ﹗…)
    become those marks. NFKC leaves 。、「」『』【】《》“” alone by itself. Spacing accents that
    NFKC would turn into a space plus a combining mark (´ ¨ ˜ ￣ ‾, see ``SPACING_MARKS``) also stay
    as typed, and a half-width ﾟ/ﾞ that does not follow half-width katakana becomes ゜/゛ rather
    than a combining mark on the previous character: kaomoji (´・ω・`) (￣▽￣) (ﾟ∀ﾟ) keep their
    shape."""
    if _VARIANT_RE.search(text):
        text = text.translate(_VARIANTS)
    if "\uff9e" in text or "\uff9f" in text:
        text = _LONE_HALFWIDTH_VOICING_RE.sub(lambda m: m.group().translate(_VOICING_TO_SPACING), text)
    if max(text, default="") >= chr(_SENTINEL):  # the text itself uses the sentinel plane
        parts = _PROTECTED_SPLIT_RE.split(text)
        return "".join(p if i % 2 else unicodedata.normalize("NFKC", p) for i, p in enumerate(parts))
    if unicodedata.is_normalized("NFKC", _KEPT_RE.sub("", text)):
        return text  # the common case: normalised apart from the kept characters
    return unicodedata.normalize("NFKC", text.translate(_PROTECT)).translate(_UNPROTECT)


def punctuation_to_ascii(text: str, counts: Counter[str]) -> str:
    """``punctuation="ascii"``: ``，！？：；（）～`` → ``,!?:;()~`` and ``…`` → ``...`` (what plain
    NFKC does). 。、「」《》 and the other CJK marks, which have no ASCII form with the same use,
    stay."""
    return text.translate(_TO_ASCII)


def punctuation_to_chinese(text: str, counts: Counter[str]) -> str:
    """``punctuation="cjk"``: a run of ASCII ``,!?;:~`` right after a Han character becomes
    full-width (``你好,世界!`` → ``你好，世界！``); ``(`` before and ``)`` after a Han character
    become ``（`` ``）``. Marks after Latin letters or digits (``1,000``, ``12:30``) stay; ``.``
    never changes (``3.5``, ``...``)."""
    if not any(ch in text for ch in ",!?;:~()"):
        return text
    text = _ASCII_MARKS_AFTER_HAN_RE.sub(lambda m: m.group().translate(_ASCII_TO_WIDE), text)
    text = _PAREN_OPEN_RE.sub("（", text)
    return _PAREN_CLOSE_RE.sub("）", text)


def remove_emoji(text: str, counts: Counter[str]) -> str:
    """Emoji removed whole: ZWJ sequences (🤦‍♂️, 👨‍👩‍👧), skin-tone modifiers, keycaps (1️⃣),
    flags (🇨🇳, subdivision tag flags) and a stray U+FE0F. Pictographs with a text default
    (★ ☆ ♀ ♂ ♪ ❤ ✔ ©) are removed only in emoji presentation (followed by U+FE0F, or inside a
    ZWJ sequence): written bare they are ordinary symbols of Chinese text."""
    if not _MAYBE_EMOJI_RE.search(text):
        return text
    text, n = _EMOJI_RE.subn("", text)
    counts["emoji"] += n
    return text


def remove_emoticons(text: str, counts: Counter[str]) -> str:
    """Weibo bracket emoticons ``[哈哈]`` ``[doge]`` ``[笑cry]`` (1–8 Chinese characters or Latin
    letters between ASCII brackets) removed. ``[1]``, ``[/cp]`` and ``【…】`` stay."""
    if "[" not in text:
        return text
    text, n = _EMOTICON_RE.subn("", text)
    counts["emoticons"] += n
    return text


def collapse_whitespace(text: str, counts: Counter[str], keep_newlines: bool, remove_han_spaces: bool) -> str:
    """Every whitespace run → one space (with ``keep_newlines``, a run containing a line break →
    one ``\\n``); spaces beside wide Chinese punctuation (``，。！？【】《》``…) dropped; leading and
    trailing whitespace trimmed. A space between two Chinese characters stays (it often separates
    phrases: ``小明 白`` ≠ ``小明白``) unless ``remove_han_spaces`` — and even then the space that
    ends an ``@handle`` stays, or the next words would join the handle."""
    if " " not in text and not _OTHER_SPACE_RE.search(text):
        return text  # the common case for Chinese text: nothing to do
    if keep_newlines:  # noqa: SIM108 (two rewrites, two lines)
        text = _NEWLINE_RUN_RE.sub("\n", _HSPACE_RE.sub(" ", text))
    else:
        text = _ALL_SPACE_RE.sub(" ", text)
    if " " in text:
        text = _MARK_SPACE_RE.sub(r"\1", text)
        if remove_han_spaces:
            text = _HAN_SPACE_RE.sub(lambda m: m.group("mention") or "", text)
    return text.strip()


def tag_patterns(names: Iterable[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The tag-removal patterns for these element names (see :func:`remove_tags`): whole tags,
    and truncated closing tags (one or more) that end the text."""
    alt = "|".join(sorted({re.escape(n.lower()) for n in names}, key=len, reverse=True))
    tags = re.compile(
        rf"<!--.*?-->|<(script|style)\b[^>]*>.*?</\1\s*>|</?(?P<name>{alt})(?![A-Za-z0-9])(?:\s[^<>]*)?/?>",
        re.IGNORECASE | re.DOTALL,
    )
    return tags, re.compile(rf"(?:</(?:{alt})\s*)+$", re.IGNORECASE)


def emoticon_pattern() -> re.Pattern[str]:
    """The bracket-emoticon pattern (used to count an emoticon as one character of length)."""
    return _EMOTICON_RE
