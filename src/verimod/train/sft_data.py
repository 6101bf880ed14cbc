"""CoT-SFT examples: (instruction + input → reference rationale) in the model's chat template,
with the loss masked on the prompt.

:func:`encode_example`: the prompt is the chat template of the prompt messages with the
generation prompt added (exactly what ``verimod eval`` sends); the full text is the template of
the same messages plus the assistant turn holding the rationale. The full text must begin with
the prompt text (a template that rewrites earlier turns is refused); the completion is the rest
— the rationale and the template's end-of-turn marker, so the model learns to stop. Prompt and
completion are tokenized separately (no special tokens added) and concatenated, so a token never
straddles the boundary. Labels are ``-100`` on every prompt token and equal the input ids on
every completion token.

An example longer than ``max_length`` tokens is not cut (a truncated rationale would teach an
unfinished record): it is left out and reported by id. Records without a reference rationale
(``cot``) are an input error naming file, line and field.

:func:`batches` pads micro-batches on the right (labels ``-100`` and attention 0 on padding).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verimod.models._local import chat_dicts
from verimod.models.base import ChatMessage
from verimod.tasks.varm.prompts import PromptTemplate
from verimod.tasks.varm.schema import VarmReference

IGNORE_INDEX = -100


@dataclass(frozen=True)
class SftExample:
    """One encoded example: token ids and their labels (``-100`` where no loss is taken)."""

    id: str
    input_ids: tuple[int, ...]
    labels: tuple[int, ...]

    @property
    def n_supervised(self) -> int:
        """Tokens that carry loss."""
        return sum(1 for label in self.labels if label != IGNORE_INDEX)


@dataclass(frozen=True)
class EncodedSet:
    """The examples of one split, and the ids left out as longer than ``max_length``."""

    examples: list[SftExample]
    too_long: list[str]


def encode_example(tokenizer: Any, example_id: str, messages: Sequence[ChatMessage], rationale: str) -> SftExample:
    """Tokens and masked labels of one (prompt messages → rationale) example (module docstring)."""
    if getattr(tokenizer, "chat_template", None) is None:
        raise ValueError("the tokenizer has no chat template; CoT-SFT trains chat models")
    chat = chat_dicts(messages)
    prompt = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    full = tokenizer.apply_chat_template([*chat, {"role": "assistant", "content": rationale}], tokenize=False)
    if not full.startswith(prompt):
        raise ValueError("the chat template does not extend the prompt with the assistant turn; cannot mask it")
    completion = full[len(prompt) :]
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    completion_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    if not completion_ids:
        raise ValueError(f"example {example_id!r}: empty completion")
    return SftExample(
        id=example_id,
        input_ids=tuple(prompt_ids) + tuple(completion_ids),
        labels=(IGNORE_INDEX,) * len(prompt_ids) + tuple(completion_ids),
    )


def encode_references(
    tokenizer: Any, references: Sequence[VarmReference], template: PromptTemplate, max_length: int
) -> EncodedSet:
    """Every reference with a rationale as an example; longer than ``max_length`` left out."""
    examples: list[SftExample] = []
    too_long: list[str] = []
    for reference in references:
        if reference.cot is None:
            raise ValueError(f"record {reference.id!r} has no reference rationale (cot)")
        example = encode_example(tokenizer, reference.id, template.render(reference), reference.cot)
        if len(example.input_ids) > max_length:
            too_long.append(reference.id)
        else:
            examples.append(example)
    return EncodedSet(examples, too_long)


def references_sha256(references: Sequence[VarmReference]) -> str:
    """sha256 of the records as trained (id, text, context, rationale; in order)."""
    digest = hashlib.sha256()
    for r in references:
        row = {"id": r.id, "text": r.text, "context": r.context, "cot": r.cot}
        digest.update(json.dumps(row, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def collate(examples: Sequence[SftExample], pad_id: int) -> dict[str, Any]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` tensors."""
    import torch

    width = max(len(e.input_ids) for e in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE_INDEX, dtype=torch.long)
    for row, example in enumerate(examples):
        n = len(example.input_ids)
        ids[row, :n] = torch.tensor(example.input_ids)
        mask[row, :n] = 1
        labels[row, :n] = torch.tensor(example.labels)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def batches(examples: Sequence[SftExample], order: Sequence[int], batch_size: int) -> list[list[SftExample]]:
    """``examples`` in ``order``, cut into micro-batches of ``batch_size`` (the last may be short)."""
    ordered = [examples[i] for i in order]
    return [ordered[k : k + batch_size] for k in range(0, len(ordered), batch_size)]
