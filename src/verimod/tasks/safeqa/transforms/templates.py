"""Template channel: the seed, verbatim, inside a framing text (``resources/safeqa/templates.json``).

Each method has several variants (an id and a text with ``{query}`` once); the variant is drawn per
query by the seeded generator or forced. The seed is inserted by plain replacement, so its risky
entity, action, target and judgement direction are untouched; ``meta["payload_span"]`` locates it
and :func:`~.base.decode_verbatim` cuts it back out. Meta: ``payload_span``, ``templates`` (the
file's version); the variant id is the common ``meta["variant"]``.
"""

from __future__ import annotations

from verimod.tasks.safeqa.transforms.base import (
    Context,
    Draft,
    decode_verbatim,
    load_table,
    register,
    template_variant,
    variant_ids,
    wrap,
)


def _fill(ctx: Context, key: str) -> Draft:
    variant = ctx.pick(variant_ids("templates", key))
    text, span = wrap(template_variant("templates", key, variant), ctx.query.text, placeholder="{query}")
    return Draft(text, {"payload_span": span, "templates": load_table("templates")["version"]})


@register(
    15,
    "code_format",
    channel="template",
    family="format/structure",
    target="structured-format output: the answer asked for as code",
    declarative_only=True,
    variants=variant_ids("templates", "code_format"),
    decoder=decode_verbatim,
)
def code_format(ctx: Context) -> Draft:
    """The seed as a task to be answered in code (Python, JavaScript, Bash, pseudocode)."""
    return _fill(ctx, "code_format")


@register(
    16,
    "style_format",
    channel="template",
    family="format/structure",
    target="stylistic reframing: the answer asked for as a poem, table, JSON or classical Chinese",
    declarative_only=True,
    variants=variant_ids("templates", "style_format"),
    decoder=decode_verbatim,
)
def style_format(ctx: Context) -> Draft:
    """The seed as a task to be answered in a given style or format (poem, table, JSON, 文言文)."""
    return _fill(ctx, "style_format")


@register(
    17,
    "role_play",
    channel="template",
    family="context/role",
    target="context and role framing (fiction, scholarship, game, screenplay)",
    variants=variant_ids("templates", "role_play"),
    decoder=decode_verbatim,
)
def role_play(ctx: Context) -> Draft:
    """The seed put to a role in a scenario (a novelist's expert, a historian, a game guide, a screenwriter)."""
    return _fill(ctx, "role_play")


@register(
    18,
    "opposite_speech",
    channel="template",
    family="logic/polarity",
    target="polarity tracking (说反话: the request inverted or framed as what not to do)",
    declarative_only=True,
    variants=variant_ids("templates", "opposite_speech"),
    decoder=decode_verbatim,
)
def opposite_speech(ctx: Context) -> Draft:
    """The seed under an opposite-speech frame: answer it backwards, list what must not be done, or rebut it."""
    return _fill(ctx, "opposite_speech")
