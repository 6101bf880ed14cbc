"""The CoT-SFT configuration.

Every field that changes what is trained is in :class:`SftConfig` and enters
:meth:`SftConfig.fingerprint`, which a checkpoint must match to be resumed. LoRA target modules
default by architecture (:data:`LORA_TARGETS`, keyed by the config's ``model_type``: the
attention and MLP projections); an unknown architecture falls back to peft's ``"all-linear"``.

Optimisation: AdamW (β = 0.9, 0.999, weight decay ``weight_decay``) on the LoRA parameters; the
learning rate rises linearly over ``warmup_ratio`` of the optimizer steps, then follows a
cosine to 0 (``transformers.get_cosine_schedule_with_warmup``). One optimizer step sums the
gradients of ``grad_accum`` micro-batches of ``batch_size`` examples; its loss is the mean
token cross-entropy over every supervised token of those micro-batches (token-weighted, so the
result does not depend on how the examples fall into micro-batches). The total number of steps
is ``epochs × ⌈⌈n / batch_size⌉ / grad_accum⌉``, capped by ``max_steps``.

Dev loss (the same token-weighted mean over the whole dev set, no dropout) is computed before
training and every ``eval_every`` steps; when it has not improved by more than ``min_delta``
for ``patience`` evaluations in a row, training stops. The adapter of the best dev loss is the
result.
"""

from __future__ import annotations

import hashlib
import json
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

#: LoRA target modules by ``config.model_type``.
LORA_TARGETS: Final[dict[str, tuple[str, ...]]] = {
    **dict.fromkeys(
        ("qwen2", "qwen3", "llama", "mistral", "gemma", "gemma2", "gemma3_text", "internlm2", "yi", "deepseek_v2"),
        ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    ),
    "phi3": ("qkv_proj", "o_proj", "gate_up_proj", "down_proj"),
    "chatglm": ("query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"),
    "baichuan": ("W_pack", "o_proj", "gate_proj", "up_proj", "down_proj"),
}


def lora_targets(model_type: str, override: tuple[str, ...] | None = None) -> list[str] | str:
    """The LoRA target modules: ``override`` when given, else the architecture's default, else
    ``"all-linear"`` (every linear layer but the output head)."""
    if override:
        return list(override)
    known = LORA_TARGETS.get(model_type)
    return list(known) if known is not None else "all-linear"


class SftConfig(BaseModel):
    """What one CoT-SFT run trains (module docstring for the formulas)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    setting: Literal["zero-shot", "taxonomy"] = "zero-shot"
    prompt_template: str | None = None  # a user's JSON template (as for verimod eval --prompt-template)
    lora_r: int = Field(16, ge=1)
    lora_alpha: float = Field(32.0, gt=0)
    lora_dropout: float = Field(0.05, ge=0.0, lt=1.0)
    target_modules: tuple[str, ...] | None = None
    learning_rate: float = Field(2e-4, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    warmup_ratio: float = Field(0.03, ge=0.0, lt=1.0)
    epochs: int = Field(3, ge=1)
    max_steps: int | None = Field(None, ge=1)
    batch_size: int = Field(4, ge=1)
    grad_accum: int = Field(4, ge=1)
    max_length: int = Field(1024, ge=16)
    eval_every: int = Field(50, ge=1)
    patience: int = Field(3, ge=1)
    min_delta: float = Field(0.0, ge=0.0)
    max_grad_norm: float | None = Field(1.0, gt=0)
    gradient_checkpointing: bool = False
    seed: int = 0

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of every field."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def steps_per_epoch(self, n_examples: int) -> int:
        """⌈⌈n / batch_size⌉ / grad_accum⌉ optimizer steps per pass over ``n_examples``."""
        micro_batches = -(-n_examples // self.batch_size)
        return -(-micro_batches // self.grad_accum)

    def total_steps(self, n_examples: int) -> int:
        """Optimizer steps of the run for ``n_examples`` training examples."""
        total = self.epochs * self.steps_per_epoch(n_examples)
        return min(total, self.max_steps) if self.max_steps is not None else total
