"""SoftHateBench generator, decomposer, variant and NLI prompts, and the readers of their answers.

The prompt texts are versioned data in ``resources/softhate/prompts.json`` (English and
Chinese); :func:`softhate_prompts` loads them and the ``*_messages`` functions render chat
messages. The version enters the engine's cache key and every trace.

Answers are read by :func:`parse_fields` (the (P, M) and (E, D) steps: a JSON object with
string fields, or ``key: value`` lines as a fallback) and :func:`parse_variant` (a variant's
text). A parse failure raises :class:`OutputParseError` with a one-line reason; the search
records it as the candidate's rejection, never guesses.
"""

from __future__ import annotations

import json
import re
from functools import cache
from string import Template
from typing import Final

from pydantic import BaseModel, ConfigDict

from verimod.core.errors import one_line
from verimod.models.base import ChatMessage
from verimod.resources import resource_path
from verimod.tasks.softhate.schema import Gold, Language, Locus, Standpoint, TargetGroup, VariantKind

PROMPTS_RESOURCE: Final = "softhate/prompts.json"
PREMISE_FIELDS: Final = ("premise", "maxim")
DECOMPOSITION_FIELDS: Final = ("endoxon", "datum")


class PromptBlock(BaseModel):
    """A system and a user template."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: str
    user: str


class LocusText(BaseModel):
    """A locus as the prompts of one language name and describe it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str


class LanguagePrompts(BaseModel):
    """All prompts of one language."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    premise: PromptBlock
    decompose: PromptBlock
    groupvague: PromptBlock
    hostilityvague: PromptBlock
    nli: PromptBlock
    loci: dict[Locus, LocusText]
    control: dict[str, str] = {}  # block name → system message for non-hate control standpoints


class SoftHatePrompts(BaseModel):
    """The bundled prompts with their version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    languages: dict[Language, LanguagePrompts]


class OutputParseError(ValueError):
    """A generator answer without the asked-for content (the message is one line)."""


@cache
def softhate_prompts() -> SoftHatePrompts:
    """The bundled prompts (``resources/softhate/prompts.json``)."""
    data = json.loads(resource_path(PROMPTS_RESOURCE).read_text(encoding="utf-8"))
    data.pop("_about", None)
    return SoftHatePrompts.model_validate(data)


def _render(block: PromptBlock, system: str | None = None, **values: str) -> tuple[ChatMessage, ...]:
    user = Template(block.user).substitute(values)
    system = block.system if system is None else system
    if system:
        return (ChatMessage(role="system", content=system), ChatMessage(role="user", content=user))
    return (ChatMessage(role="user", content=user),)


def target_name(target: TargetGroup, language: Language) -> str:
    """The group's name in prompts of ``language``
    (:meth:`~verimod.tasks.softhate.schema.TargetGroup.display_name`); ValueError when it has
    none, so that a Chinese prompt never shows an English group name."""
    name = target.display_name(language)
    if name is None:
        raise ValueError(f"group {target.name!r} has no {language} name (add one under 'names' in the taxonomy)")
    return name


def _system(prompts: LanguagePrompts, block: str, gold: Gold) -> str | None:
    return prompts.control.get(block) if gold == "non_hate" else None


def premise_messages(
    standpoint: Standpoint, locus: Locus, index: int, count: int, language: Language = "en"
) -> tuple[ChatMessage, ...]:
    """Step 1: ask for a (P, M) candidate from (S, [TG], L); ``index`` is 1-based."""
    prompts = softhate_prompts().languages[language]
    locus_text = prompts.loci[locus]
    return _render(
        prompts.premise,
        _system(prompts, "premise", standpoint.gold),
        standpoint=standpoint.text,
        target=target_name(standpoint.target, language),
        locus_name=locus_text.name,
        locus_description=locus_text.description,
        index=str(index),
        count=str(count),
    )


def decompose_messages(
    standpoint: Standpoint, premise: str, maxim: str, index: int, count: int, language: Language = "en"
) -> tuple[ChatMessage, ...]:
    """Step 2: ask for an (E, D) candidate decomposing P; ``index`` is 1-based."""
    prompts = softhate_prompts().languages[language]
    return _render(
        prompts.decompose,
        _system(prompts, "decompose", standpoint.gold),
        standpoint=standpoint.text,
        target=target_name(standpoint.target, language),
        premise=premise,
        maxim=maxim,
        index=str(index),
        count=str(count),
    )


def variant_messages(
    kind: VariantKind,
    base: str,
    target: TargetGroup,
    index: int,
    count: int,
    language: Language = "en",
    gold: Gold = "hate",
) -> tuple[ChatMessage, ...]:
    """A GroupVague (``softgv``) or HostilityVague (``softhv``) candidate of the base text."""
    prompts = softhate_prompts().languages[language]
    name = "groupvague" if kind == "softgv" else "hostilityvague"
    block = prompts.groupvague if kind == "softgv" else prompts.hostilityvague
    return _render(
        block,
        _system(prompts, name, gold),
        base=base,
        target=target_name(target, language),
        index=str(index),
        count=str(count),
    )


def nli_messages(premise: str, hypothesis: str, language: Language = "en") -> tuple[ChatMessage, ...]:
    """Ask an LLM for one word: entailment, neutral or contradiction."""
    return _render(softhate_prompts().languages[language].nli, premise=premise, hypothesis=hypothesis)


def field_schema(fields: tuple[str, ...]) -> dict[str, object]:
    """The JSON schema of an answer with these string fields (for constrained decoding)."""
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in fields},
        "required": list(fields),
        "additionalProperties": False,
    }


_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?|\n?\s*```\s*$")


def _strip_fence(text: str) -> str:
    return _FENCE.sub("", text.strip()).strip()


def parse_fields(text: str | None, fields: tuple[str, ...]) -> dict[str, str]:
    """The non-empty string ``fields`` of a generator answer.

    Accepted: a JSON object (possibly inside a code fence or after other text: the span from
    the first ``{`` to the last ``}`` is read), or one ``key: value`` line per field (``:`` or
    ``：``, keys case-insensitive). Raises :class:`OutputParseError` otherwise.

    >>> parse_fields('{"premise": "p", "maxim": "m"}', ("premise", "maxim"))
    {'premise': 'p', 'maxim': 'm'}
    """
    if text is None or not text.strip():
        raise OutputParseError("empty output")
    body = _strip_fence(text)
    json_error = "no JSON object"
    start, end = body.find("{"), body.rfind("}")
    if start >= 0 and end > start:
        try:
            obj = json.loads(body[start : end + 1])
        except json.JSONDecodeError as exc:
            obj = None
            json_error = f"invalid JSON ({exc.msg} at character {exc.pos})"
        if isinstance(obj, dict):
            missing = [f for f in fields if not isinstance(obj.get(f), str) or not obj[f].strip()]
            if missing:
                raise OutputParseError(f"JSON object lacks non-empty string field(s) {', '.join(missing)}")
            return {f: one_line(obj[f], limit=2000) for f in fields}
    found: dict[str, str] = {}
    for line in body.splitlines():
        match = re.match(r"^\s*[-*]?\s*\"?([A-Za-z_]+)\"?\s*[:：]\s*(.+?)\s*,?\s*$", line)
        if match and match.group(1).casefold() in fields and match.group(2).strip().strip('"'):
            found.setdefault(match.group(1).casefold(), match.group(2).strip().strip('"'))
    if all(f in found for f in fields):
        return {f: found[f] for f in fields}
    raise OutputParseError(f"{json_error}; no '{fields[0]}: …' lines for all of {', '.join(fields)}")


def parse_variant(text: str | None) -> str:
    """A variant's text: the answer without a code fence or enclosing quotes; a JSON object's
    ``text`` field if the answer is one. Raises :class:`OutputParseError` when empty."""
    if text is None:
        raise OutputParseError("empty output")
    body = _strip_fence(text)
    if body.startswith("{") and body.endswith("}"):
        try:
            obj = json.loads(body)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("text"), str):
            body = obj["text"].strip()
    for left, right in (('"', '"'), ("“", "”"), ("'", "'"), ("「", "」")):
        if len(body) >= 2 and body.startswith(left) and body.endswith(right):
            body = body[1:-1].strip()
    if not body:
        raise OutputParseError("empty output")
    return body
