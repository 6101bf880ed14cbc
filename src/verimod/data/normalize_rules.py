"""The identifier rules of text normalisation (URLs, e-mail, ID numbers, phones, QQ, WeChat,
@-mentions, #topics#), OpenCC conversion, and the assembly of all rules into the fixed pipeline
(:data:`RULE_ORDER`, :func:`build_rules`, :func:`apply_rules`).

A rule is ``rule(text, counts) -> text``; it adds the items it replaced to ``counts[name]`` and
look-alikes it deliberately left alone to ``counts["name.reason"]``.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from typing import Any

from verimod.core.errors import MissingExtraError, install_hint
from verimod.data import normalize_chars as chars
from verimod.data.normalize_config import NormalizeConfig, Placeholders
from verimod.resources import resource_path

PATTERNS_RESOURCE = "normalize_patterns.json"

#: The text rules, in the order they run. Removal rules come before the identifier rules (so
#: that removing an emoji or a tag cannot create a phone number the identifier rules have
#: already passed), and punctuation and whitespace come last.
RULE_ORDER: tuple[str, ...] = (
    "escapes",
    "html",
    "controls",
    "nfkc",
    "t2s",
    "urls",
    "emoticons",
    "emoji",
    "topics",
    "emails",
    "id_cards",
    "phones",
    "landlines",
    "qq",
    "wechat",
    "mentions",
    "punctuation",
    "whitespace",
)
#: Rules whose items are ways to contact someone (a spam signal).
CONTACT_RULES: tuple[str, ...] = ("urls", "emails", "phones", "landlines", "qq", "wechat")
#: The pipeline is re-applied to a changed text until it stops changing, at most this many passes.
MAX_PASSES = 3

Rule = Callable[[str, Counter[str]], str]

_URL_CHARS = r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]"
_URL_TRAIL = ".,;:!?'\"*"
_EMAIL_RE = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9\-])"
)
_ID_RE = re.compile(
    r"(?<![0-9])[1-9]\d{5}(?P<sep>[ -]?)(?P<date>(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))"
    r"(?P=sep)\d{3}[0-9Xx](?![0-9])"
)
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
_PHONE_RE = re.compile(r"(?<![0-9])(?:(?:\+|00)?86[ -]?)?1[3-9]\d(?P<sep>[ -]?)\d{4}(?P=sep)\d{4}(?![0-9])")
_LANDLINE_RE = re.compile(
    r"(?<![0-9])(?:\(0[1-9]\d{1,2}\)|（0[1-9]\d{1,2}）|0[1-9]\d{1,2}[ -])[ ]?[2-9]\d{6,7}(?:-\d{1,5})?(?![0-9])"
)
_CUE_SEP = r"(?P<sep>\s*(?:[:：是为]|号码?是)?\s*)"
_MENTION_RE = re.compile(r"(?<![A-Za-z0-9._%+\-])@(?=[\w\-]*[^\W_])[\w\-]{1,30}(?![\w\-])")
_TOPIC_RE = re.compile(r"(?<![A-Za-z0-9&])#+(?P<body>[^#\s]{1,40})#")
_HAS_DIGIT_RE = re.compile(r"[0-9]")
_HAS_ASCII_ALNUM_RE = re.compile(r"[A-Za-z0-9]")


@dataclass(frozen=True)
class Lexicon:
    """The bundled pattern lists (``resources/normalize_patterns.json``) compiled."""

    tags: re.Pattern[str]
    tag_tail: re.Pattern[str]
    urls: re.Pattern[str]
    qq: re.Pattern[str]
    wechat: re.Pattern[str]


def _alternation(words: Iterable[str]) -> str:
    return "|".join(sorted({re.escape(w.lower()) for w in words}, key=len, reverse=True))


@cache
def lexicon() -> Lexicon:
    """Compile the pattern lists once (they are bundled data, not user input)."""
    data = json.loads(resource_path(PATTERNS_RESOURCE).read_text(encoding="utf-8"))
    hosts = _alternation(data["short_link_hosts"])
    urls = re.compile(
        rf"(?<![A-Za-z0-9.@])(?:(?:https?|ftp)[:：]//|www\.){_URL_CHARS}+"
        rf"|(?<![A-Za-z0-9.@/])(?:{hosts})/[A-Za-z0-9_\-]+",
        re.IGNORECASE,
    )
    cue = r"(?<![A-Za-z])(?P<cue>(?:{})(?:号码|号)?)"
    qq = re.compile(cue.format(_alternation(data["qq_cues"])) + _CUE_SEP + r"(?P<id>[1-9]\d{4,10})(?![0-9])", re.I)
    wechat = re.compile(
        cue.format(_alternation(data["wechat_cues"]))
        + _CUE_SEP
        + r"(?P<id>[A-Za-z][-_A-Za-z0-9]{5,19}|[1-9]\d{4,10})(?![-_A-Za-z0-9])",
        re.IGNORECASE,
    )
    return Lexicon(*chars.tag_patterns(data["html_tags"]), urls, qq, wechat)


# --- identifier rules ---------------------------------------------------------------------------


def replace_urls(text: str, counts: Counter[str], url_re: re.Pattern[str], placeholder: str) -> str:
    """``http(s)://…``, ``ftp://…``, ``www.…`` and short links of known hosts (``t.cn/…``,
    ``b23.tv/…``; ``normalize_patterns.json: short_link_hosts``) → ``placeholder`` (default:
    removed). A URL stops at the first character that cannot be in a URL (a Chinese character, a
    space, full-width punctuation); trailing ``.,;:!?'"`` and unbalanced ``)`` ``]`` are not part
    of it. Bare domains (``知乎上quora.com的人``) are text and stay."""
    if "/" not in text and "ww" not in text and "WW" not in text:  # every URL form has one
        return text

    def one(match: re.Match[str]) -> str:
        url, tail = match.group(), ""
        while url and (
            url[-1] in _URL_TRAIL
            or (url[-1] == ")" and url.count("(") < url.count(")"))
            or (url[-1] == "]" and url.count("[") < url.count("]"))
        ):
            url, tail = url[:-1], url[-1] + tail
        counts["urls"] += 1
        return placeholder + tail

    return url_re.sub(one, text)


def replace_emails(text: str, counts: Counter[str], placeholder: str) -> str:
    """E-mail addresses (``name@host.tld``, ``123456@qq.com``) → ``placeholder``."""
    if "@" not in text:
        return text
    text, n = _EMAIL_RE.subn(placeholder, text)
    counts["emails"] += n
    return text


def id_checksum_ok(number: str) -> bool:
    """ISO 7064 MOD 11-2 check of an 18-character resident ID number (GB 11643-1999)."""
    total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == number[17].upper()


def _date_ok(yyyymmdd: str) -> bool:
    try:
        dt.date(int(yyyymmdd[:4]), int(yyyymmdd[4:6]), int(yyyymmdd[6:]))
    except ValueError:
        return False
    return True


def replace_id_cards(text: str, counts: Counter[str], placeholder: str) -> str:
    """Mainland resident ID numbers → ``placeholder``: 18 characters (6-digit region starting
    1–9, birth date 1800–2099, 3-digit sequence, check digit or X), optionally grouped 6-8-4 by
    spaces or dashes, not inside a longer digit run. Only numbers whose birth date exists and
    whose MOD 11-2 check digit is right are replaced; look-alikes stay and are counted as
    ``id_cards.bad_date`` or ``id_cards.bad_checksum``. 15-digit (pre-1999) numbers are not
    recognised: without a check digit they cannot be told from other numbers."""
    if not _HAS_DIGIT_RE.search(text):
        return text

    def one(match: re.Match[str]) -> str:
        if not _date_ok(match.group("date")):
            counts["id_cards.bad_date"] += 1
            return match.group()
        if not id_checksum_ok(match.group().replace(" ", "").replace("-", "")):
            counts["id_cards.bad_checksum"] += 1
            return match.group()
        counts["id_cards"] += 1
        return placeholder

    return _ID_RE.sub(one, text)


def replace_phones(text: str, counts: Counter[str], placeholder: str) -> str:
    """Mainland mobile numbers ``1[3-9]`` + 9 digits, optionally after ``+86``/``0086``/``86``,
    optionally grouped 3-4-4 by spaces or dashes, not inside a longer digit run → ``placeholder``."""
    if not _HAS_DIGIT_RE.search(text):
        return text
    text, n = _PHONE_RE.subn(placeholder, text)
    counts["phones"] += n
    return text


def replace_landlines(text: str, counts: Counter[str], placeholder: str) -> str:
    """Landline numbers with an area code → ``placeholder``: ``010-12345678``, ``0755 1234567``,
    ``(021)12345678``, ``（0571）8888888``, optional ``-ext``. The area code (0 + 2–3 digits) must be
    set off by a dash, a space or brackets, and the local number (7–8 digits) starts with 2–9: a
    bare run of 11 digits is not taken for a landline."""
    if not _HAS_DIGIT_RE.search(text):
        return text
    text, n = _LANDLINE_RE.subn(placeholder, text)
    counts["landlines"] += n
    return text


def replace_qq(text: str, counts: Counter[str], qq_re: re.Pattern[str], placeholder: str) -> str:
    """A QQ number (5–11 digits, not starting with 0) right after a cue (``QQ`` ``qq号`` ``扣扣``
    ``企鹅号`` ``QQ群`` ``群号``…, optionally followed by ``:`` ``：`` ``是`` ``为``) → the cue kept, the
    number replaced: ``加QQ：123456789`` → ``加QQ：<QQ号>``. Digits without a cue stay."""
    if not _HAS_DIGIT_RE.search(text):
        return text

    def one(match: re.Match[str]) -> str:
        counts["qq"] += 1
        return match.group("cue") + match.group("sep") + placeholder

    return qq_re.sub(one, text)


def replace_wechat(text: str, counts: Counter[str], wechat_re: re.Pattern[str], placeholder: str) -> str:
    """A WeChat id (a letter then 5–19 letters, digits, ``_`` or ``-``; or a QQ-style number)
    right after a cue (``微信`` ``微信号`` ``vx`` ``v信`` ``wx`` ``威信`` ``绿泡泡``…) → the cue kept, the
    id replaced. An id of letters only is replaced only when a separator (``:`` ``：`` ``是`` ``为``)
    or ``号`` marks it as an id, so ``微信 account`` stays; so do ``微信拉黑`` and ``微信公众号``."""
    if not _HAS_ASCII_ALNUM_RE.search(text):
        return text

    def one(match: re.Match[str]) -> str:
        ident, sep, cue = match.group("id"), match.group("sep"), match.group("cue")
        if ident.isalpha() and not (sep.strip() or cue.endswith("号")):
            return match.group()
        counts["wechat"] += 1
        return cue + sep + placeholder

    return wechat_re.sub(one, text)


def replace_mentions(text: str, counts: Counter[str], placeholder: str) -> str:
    """``@handle`` → ``placeholder`` (default ``@用户``). A handle is 1–30 Chinese characters,
    letters, digits, ``_`` or ``-``, at least one of them not ``_``/``-`` (so the kaomoji ``@_@``
    stays), and ends at the first other character (space, punctuation,
    ``:`` of ``//@name:``); a longer run is left alone. Since handles may be Chinese, text written
    straight after a handle (``@张三你好``) is taken as part of it. ``a@b`` (no boundary) stays."""
    if "@" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        if match.group() == placeholder:
            return placeholder
        counts["mentions"] += 1
        return placeholder

    return _MENTION_RE.sub(one, text)


def rewrite_topics(text: str, counts: Counter[str], remove: bool) -> str:
    """Weibo topics ``#话题#`` (1–40 characters without ``#`` or whitespace, at least one letter or
    Chinese character; the opening ``#`` not preceded by a letter, digit or ``&``, so ``C#`` and
    ``#1#`` stay) → their text (``unwrap``) or nothing (``remove``). A doubled opening ``##`` is
    taken with the topic; back-to-back topics ``#甲##乙#`` are two topics."""
    if "#" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        body = match.group("body")
        if not any(ch.isalpha() for ch in body):
            return match.group()
        counts["topics"] += 1
        return "" if remove else body

    return _TOPIC_RE.sub(one, text)


# --- OpenCC -------------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def opencc_converter(config: str) -> Any:
    """An OpenCC converter for ``config`` (``t2s``…), imported lazily; a one-line
    :class:`MissingExtraError` names the extra when the package is absent."""
    try:
        opencc = importlib.import_module("opencc")
    except ImportError:
        raise MissingExtraError(
            "Traditional → Simplified conversion (t2s) needs OpenCC, which is not installed: " + install_hint("data")
        ) from None
    return opencc.OpenCC(f"{config}.json")


def convert_t2s(text: str, counts: Counter[str], converter: Any) -> str:
    """Traditional → Simplified Chinese with OpenCC (phrase-aware: 乾淨 → 干净, 頭髮 → 头发)."""
    result: str = converter.convert(text)
    return result


# --- assembly -----------------------------------------------------------------------------------


@lru_cache(maxsize=32)
def build_rules(config: NormalizeConfig) -> tuple[tuple[str, Rule], ...]:
    """The enabled rules of ``config`` in :data:`RULE_ORDER`, options bound. Raises
    :class:`MissingExtraError` when ``t2s`` is on and OpenCC is missing, and ``ValueError`` when a
    placeholder would itself be rewritten by a rule."""
    rules = tuple((name, rule) for name in RULE_ORDER if (rule := _rule(name, config)) is not None)
    _check_placeholders(config.placeholders, rules)
    return rules


def _html(text: str, counts: Counter[str], lex: Lexicon) -> str:
    return chars.remove_tags(chars.unescape_entities(text, counts), counts, lex.tags, lex.tag_tail)


def _rule(name: str, c: NormalizeConfig) -> Rule | None:
    ph, lex = c.placeholders, lexicon()
    table: dict[str, tuple[bool, Callable[[], Rule]]] = {
        "escapes": (c.literal_escapes, lambda: chars.decode_literal_escapes),
        "html": (c.html, lambda: partial(_html, lex=lex)),
        "controls": (c.controls, lambda: partial(chars.remove_invisible, keep_newlines=c.keep_newlines)),
        "nfkc": (c.nfkc, lambda: chars.nfkc_keeping_chinese_marks),
        "t2s": (c.t2s, lambda: partial(convert_t2s, converter=opencc_converter(c.opencc_config))),
        "urls": (c.urls, lambda: partial(replace_urls, url_re=lex.urls, placeholder=ph.url)),
        "emoticons": (c.emoticons, lambda: chars.remove_emoticons),
        "emoji": (c.emoji, lambda: chars.remove_emoji),
        "topics": (c.topics != "keep", lambda: partial(rewrite_topics, remove=c.topics == "remove")),
        "emails": (c.emails, lambda: partial(replace_emails, placeholder=ph.email)),
        "id_cards": (c.id_cards, lambda: partial(replace_id_cards, placeholder=ph.id_card)),
        "phones": (c.phones, lambda: partial(replace_phones, placeholder=ph.phone)),
        "landlines": (c.landlines, lambda: partial(replace_landlines, placeholder=ph.landline)),
        "qq": (c.qq, lambda: partial(replace_qq, qq_re=lex.qq, placeholder=ph.qq)),
        "wechat": (c.wechat, lambda: partial(replace_wechat, wechat_re=lex.wechat, placeholder=ph.wechat)),
        "mentions": (c.mentions, lambda: partial(replace_mentions, placeholder=ph.mention)),
        "punctuation": (
            c.punctuation != "keep",
            lambda: chars.punctuation_to_ascii if c.punctuation == "ascii" else chars.punctuation_to_chinese,
        ),
        "whitespace": (
            c.whitespace,
            lambda: partial(
                chars.collapse_whitespace, keep_newlines=c.keep_newlines, remove_han_spaces=c.remove_cjk_spaces
            ),
        ),
    }
    enabled, make = table[name]
    return make() if enabled else None


def _check_placeholders(placeholders: Placeholders, rules: tuple[tuple[str, Rule], ...]) -> None:
    for field, value in placeholders.model_dump().items():
        if value and apply_rules(value, rules, Counter())[0] != value:
            raise ValueError(f"placeholder {field}={value!r} would itself be rewritten by the pipeline")


def apply_rules(text: str, rules: tuple[tuple[str, Rule], ...], counts: Counter[str]) -> tuple[str, list[str]]:
    """Run ``rules`` over ``text``; return the result and the names of the rules that changed
    it, in pipeline order. A changed text is run again until it stops changing (at most
    :data:`MAX_PASSES` passes), so that normalising a normalised text changes nothing. Items
    replaced in a later pass add to ``counts``; look-alikes left alone (``"rule.reason"`` keys)
    are seen again in every pass and count once."""
    changed: set[str] = set()
    for number in range(MAX_PASSES):
        before = text
        tally: Counter[str] = counts if number == 0 else Counter()
        for name, rule in rules:
            result = rule(text, tally)
            if result != text:
                changed.add(name)
                text = result
        if number:
            for key, n in tally.items():
                counts[key] = max(counts[key], n) if "." in key else counts[key] + n
        if text == before:
            break
    return text, [name for name in RULE_ORDER if name in changed]
