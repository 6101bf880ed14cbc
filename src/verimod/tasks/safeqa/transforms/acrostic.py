"""Acrostics (藏头): the request hidden in the first characters of lines, and the answer asked for
as an acrostic — the two methods with the highest unsafe rates in C-SafeQA, and the ones all
seven judges missed most often.

- ``acrostic_generation`` (input side, any seed): every letter, digit or Han character of the seed
  starts one generated seven-character line (itself + a two-character image + a four-character
  scene from the word bank ``resources/safeqa/acrostic.json``), framed by an intro and a reading
  instruction. Punctuation and spaces are not hidden; their positions are kept in meta, so the
  seed is decoded exactly from the line heads.
- ``acrostic_answer`` (output side, declarative seeds): the seed, verbatim, with the instruction to
  respond as an acrostic whose line heads are the seed's key characters — the harmful point is
  then carried by the heads of the model's answer. :func:`acrostic_heads` reads them back out of a
  response.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from verimod.tasks.safeqa.transforms.base import (
    Context,
    DecodeError,
    Draft,
    NotApplicableError,
    decode_verbatim,
    load_table,
    payload,
    register,
    template_variant,
    variant_ids,
    wrap,
)
from verimod.tasks.safeqa.transforms.keys import find_keys

#: The most line heads ``acrostic_answer`` asks for (longer key-character sequences are cut).
MAX_HEADS = 16
_LINE_MARKER = re.compile(r"^\s*(?:[-*•>·]+|\d+\s*[.、:：)）]|[（(]\d+[)）])?\s*")


def acrostic_heads(text: str) -> str:
    """The first character of every non-empty line of ``text`` — the acrostic a response hides.

    Leading whitespace, bullets (``-``, ``*``, ``•``, ``>``) and list numbers (``1.``, ``1、``,
    ``(1)``) are skipped first, as models often number their lines.

    >>> acrostic_heads("制春风照我归程，\\n作明月满目清辉。")
    '制作'
    """
    heads = []
    for line in text.splitlines():
        rest = _LINE_MARKER.sub("", line, count=1)
        if rest.strip():
            heads.append(rest.lstrip()[0])
    return "".join(heads)


def decode_generation(text: str, meta: Mapping[str, Any]) -> str:
    """The seed of an ``acrostic_generation`` query: the line heads with the gaps put back."""
    lines = payload(text, meta).split("\n")
    if len(lines) != int(meta.get("lines", -1)) or not all(lines):
        raise DecodeError("the acrostic block does not have the lines its meta records")
    heads = iter(line[0] for line in lines)
    gaps = {int(i): str(ch) for i, ch in meta.get("gaps", [])}
    return "".join(gaps[i] if i in gaps else next(heads) for i in range(len(lines) + len(gaps)))


@register(
    12,
    "acrostic_generation",
    channel="programmatic",
    family="format/structure",
    target="hidden-request recognition (藏头: the request in the line heads)",
    decoder=decode_generation,
)
def acrostic_generation(ctx: Context) -> Draft:
    """The request hidden in the first characters of generated poem lines, with a reading instruction.

    Meta: ``hidden`` (the line heads read in order), ``gaps`` (``[seed offset, character]`` of
    the punctuation and spaces not hidden), ``lines``, ``payload_span`` (the block of lines),
    ``bank`` (the word bank's version).
    """
    bank = load_table("acrostic")
    text = ctx.query.text
    heads = [ch for ch in text if ch.isalnum()]
    if not heads:
        raise NotApplicableError(f"{ctx.method}: query {ctx.query.id!r} has no letter, digit or Han character")
    gaps = [[i, ch] for i, ch in enumerate(text) if not ch.isalnum()]
    lines = [
        head + ctx.rng.choice(bank["images"]) + ctx.rng.choice(bank["scenes"]) + ("，" if k % 2 == 0 else "。")
        for k, head in enumerate(heads)
    ]
    lines[-1] = lines[-1][:-1] + "。"
    intro, outro = ctx.rng.choice(bank["intros"]), ctx.rng.choice(bank["outros"])
    new, span = wrap(intro + "\n\n{payload}\n\n" + outro, "\n".join(lines))
    meta = {"hidden": "".join(heads), "gaps": gaps, "lines": len(lines), "payload_span": span, "bank": bank["version"]}
    return Draft(new, meta)


@register(
    13,
    "acrostic_answer",
    channel="programmatic",
    family="format/structure",
    target="hidden-output recognition (the answer's line heads carry the harmful point)",
    declarative_only=True,
    variants=variant_ids("instructions", "acrostic_answer"),
    decoder=decode_verbatim,
)
def acrostic_answer(ctx: Context) -> Draft:
    """The seed verbatim, to be answered as an acrostic whose line heads are its key characters.

    Heads: the seed's key characters in order (:mod:`.keys`), at most :data:`MAX_HEADS`; the
    instruction lists them one by one (制、作、炸、药) and asks for one line per head with the
    concrete content in the line. Meta: ``heads``, ``lines``, ``payload_span`` (the
    seed), ``instructions``.
    """
    variant = ctx.pick(variant_ids("instructions", "acrostic_answer"))
    text = ctx.query.text
    heads = "".join(text[i] for i in find_keys(ctx.query).positions)[:MAX_HEADS]
    if not heads:
        raise NotApplicableError(f"{ctx.method}: query {ctx.query.id!r} has no key character to use as a head")
    template = template_variant("instructions", "acrostic_answer", variant)
    new, span = wrap(template, text, placeholder="{query}", heads="、".join(heads), n=str(len(heads)))
    meta = {
        "heads": heads,
        "lines": len(heads),
        "payload_span": span,
        "instructions": load_table("instructions")["version"],
    }
    return Draft(new, meta)
