"""VARM prompt settings: zero-shot, taxonomy-guided and k-shot, from versioned templates.

Templates are data (``resources/prompts/varm.json``, or a user's JSON file with the same
keys) with ``$name`` placeholders filled by :class:`string.Template` — a comment containing
``$text`` or ``{...}`` stays literal text. The template ``version`` and the sha256 of its
content enter the response-cache key and the run manifest, so a changed prompt never reuses
cached answers.

k-shot examples are drawn deterministically from a train split (default: the train split of the
evaluated bundled set, else the starter set's):
complete references with a rationale, never one whose id or text is in the evaluated data, balanced
between harmful and non-harmful, harmful ones cycling through the categories, ordered by a
seeded hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from string import Template
from typing import Final

from pydantic import BaseModel, ConfigDict, ValidationError

from verimod.core.errors import InputError
from verimod.core.validation import validation_problems
from verimod.models.base import ChatMessage
from verimod.resources import resource_path
from verimod.tasks.varm.schema import VarmReference

SETTINGS: Final = ("zero-shot", "taxonomy", "k-shot")
DEFAULT_SHOTS: Final = 4


class PromptTemplate(BaseModel):
    """One prompt setting: system and user templates plus the shared blocks they embed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    system: str
    user: str
    contract: str = ""
    codebook: str = ""
    context: str = "上下文：$context\n"
    example: str = "评论：$text\n分析：$cot"

    @property
    def sha256(self) -> str:
        """Hash of the template's full content (key order independent)."""
        canonical = json.dumps(self.model_dump(), ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def render(self, reference: VarmReference, examples: Sequence[VarmReference] = ()) -> tuple[ChatMessage, ...]:
        """The chat messages for one item."""
        context = reference.context
        if isinstance(context, list):
            context = "\n".join(context)
        shots = "\n\n".join(Template(self.example).safe_substitute(text=e.text, cot=e.cot or "") for e in examples)
        values = {
            "text": reference.text,
            "contract": self.contract,
            "codebook": self.codebook,
            "examples": shots,
            "context": Template(self.context).safe_substitute(context=context) if context else "",
        }
        user = Template(self.user).safe_substitute(values)
        system = Template(self.system).safe_substitute(values)
        messages = [ChatMessage(role="system", content=system)] if system.strip() else []
        messages.append(ChatMessage(role="user", content=user))
        return tuple(messages)


def load_prompt(setting: str, template_file: str | Path | None = None) -> PromptTemplate:
    """The built-in template of ``setting``, or the user's JSON template file.

    A user file holds ``{"version", "system", "user"}`` and optionally ``contract``,
    ``codebook``, ``context``, ``example`` (built-in blocks are used where they are absent).
    """
    builtin = json.loads(resource_path("prompts/varm.json").read_text(encoding="utf-8"))
    shared = {key: builtin[key] for key in ("contract", "codebook", "context", "example")}
    if template_file is None:
        if setting not in builtin["settings"]:
            from verimod.core.errors import did_you_mean

            raise InputError.at(
                "--setting",
                None,
                None,
                f"unknown prompt setting {setting!r}{did_you_mean(setting, SETTINGS)}; known: {', '.join(SETTINGS)}",
            )
        return PromptTemplate(version=builtin["version"], **shared, **builtin["settings"][setting])
    path = str(template_file)
    try:
        data = json.loads(Path(template_file).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError.at(path, None, None, "file not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError.at(path, None, None, f"not a UTF-8 JSON template: {exc}") from None
    if not isinstance(data, dict):
        raise InputError.at(path, None, None, "a template file must hold a JSON object")
    try:
        return PromptTemplate.model_validate({**shared, **data})
    except ValidationError as exc:
        raise InputError(validation_problems(exc, PromptTemplate, path, 1)[0]) from None


def _rank(seed: int, reference: VarmReference) -> str:
    return hashlib.sha256(f"{seed}:{reference.id}".encode()).hexdigest()


def select_examples(
    train: Sequence[VarmReference], k: int, seed: int = 0, exclude: Sequence[VarmReference] = ()
) -> list[VarmReference]:
    """``k`` deterministic demonstration examples (see the module docstring)."""
    if k <= 0:
        return []
    excluded_ids = {r.id for r in exclude}
    excluded_texts = {r.text for r in exclude}
    pool = sorted(
        (r for r in train if r.cot and r.is_complete and r.id not in excluded_ids and r.text not in excluded_texts),
        key=lambda r: _rank(seed, r),
    )
    harmful_by_category: dict[str, list[VarmReference]] = {}
    for r in pool:
        if r.label == "harmful" and r.category is not None:
            harmful_by_category.setdefault(r.category, []).append(r)
    harmful: list[VarmReference] = []
    category_order = sorted(harmful_by_category, key=lambda c: hashlib.sha256(f"{seed}:{c}".encode()).hexdigest())
    queues = [harmful_by_category[c] for c in category_order]
    while any(queues):
        for queue in queues:
            if queue:
                harmful.append(queue.pop(0))
    non_harmful = [r for r in pool if r.label == "non_harmful"]
    chosen: list[VarmReference] = []
    for i in range(max(len(harmful), len(non_harmful))):
        for source in (harmful, non_harmful) if i % 2 == 0 else (non_harmful, harmful):
            if i < len(source) and len(chosen) < k:
                chosen.append(source[i])
    return chosen[:k]
