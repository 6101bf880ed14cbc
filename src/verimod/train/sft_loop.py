"""The CoT-SFT training loop (formulas in :mod:`.sft_config`, data in :mod:`.sft_data`,
checkpoints in :mod:`.sft_checkpoint`).

Determinism: the LoRA weights are initialised after ``torch.manual_seed(seed)``; epoch ``e``
visits the examples in the order ``numpy.random.default_rng([seed, e]).permutation(n)``; the
torch RNG state (dropout) is saved in every checkpoint and restored on resume. So the same
configuration, data and software give the same losses and adapter on the same device — and a
resumed run continues exactly where the uninterrupted one would be.

Time: ``training.json``'s ``seconds`` is the training time of the whole run, summed over a
first start and every ``--resume`` (each checkpoint records the seconds up to it; time spent
after the last checkpoint of a killed segment is lost with the steps it made, and those steps
count again when repeated); ``seconds_this_run`` is this process's share, model loading
included; ``segments`` counts the starts.

Device and precision: ``cuda`` loads the base weights in bfloat16, ``cpu`` in float32 (peft
keeps the adapter weights in float32 either way); the loss is computed in float32.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verimod import __version__
from verimod.models._local import package_version, require_module
from verimod.models.base import BackendError
from verimod.models.hf import dtype_keyword, local_model_path, torch_device
from verimod.tasks.varm.prompts import load_prompt
from verimod.tasks.varm.schema import VarmReference
from verimod.train.errors import TrainingInputError
from verimod.train.sft_checkpoint import (
    TrainState,
    checkpoint_identity,
    latest_checkpoint,
    load_checkpoint,
    recover_adapter,
    save_adapter,
    save_checkpoint,
)
from verimod.train.sft_config import SftConfig, lora_targets
from verimod.train.sft_data import IGNORE_INDEX, SftExample, batches, collate, encode_references, references_sha256


@dataclass(frozen=True)
class StepReport:
    """Progress after one optimizer step (``dev_loss`` only on evaluation steps)."""

    step: int
    total: int
    loss: float
    learning_rate: float
    dev_loss: float | None = None


@dataclass
class SftResult:
    """What a run produced: the adapter folder, the history and how it ended."""

    adapter: Path
    steps: int
    total_steps: int
    best_step: int | None
    best_dev_loss: float | None
    initial_dev_loss: float | None
    stopped_early: bool
    resumed_from: int | None
    n_train: int
    n_dev: int
    too_long: dict[str, list[str]] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)


def _load(config: SftConfig, device: Any, torch: Any) -> tuple[Any, Any]:
    transformers = require_module("transformers", "train", "CoT-SFT")
    path = local_model_path(config.model)
    source = str(path) if path is not None else config.model
    kwargs: dict[str, Any] = {"local_files_only": True} if path is not None else {}
    if path is not None and not path.is_dir():
        raise TrainingInputError("--model", f"no model folder at {path}")
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kwargs)
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
        model = transformers.AutoModelForCausalLM.from_pretrained(source, **kwargs, **{dtype_keyword(): dtype})
    except (OSError, ValueError) as exc:
        raise TrainingInputError("--model", f"cannot load {config.model!r}: {str(exc).splitlines()[0]}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, model.to(device)


def token_loss_sum(model: Any, batch: dict[str, Any], torch: Any) -> Any:
    """Σ cross-entropy over the supervised tokens of one micro-batch (next-token shift)."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    shifted = logits[:, :-1, :].float()
    targets = batch["labels"][:, 1:]
    return torch.nn.functional.cross_entropy(
        shifted.reshape(-1, shifted.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum"
    )


def dev_loss(model: Any, examples: Sequence[SftExample], batch_size: int, pad_id: int, device: Any) -> float:
    """Token-weighted mean cross-entropy over ``examples`` (eval mode, no gradients)."""
    import torch

    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    with torch.no_grad():
        for chunk in batches(examples, range(len(examples)), batch_size):
            batch = {k: v.to(device) for k, v in collate(chunk, pad_id).items()}
            total += float(token_loss_sum(model, batch, torch))
            tokens += sum(e.n_supervised for e in chunk)
    if was_training:
        model.train()
    return total / tokens


def train_sft(
    config: SftConfig,
    train_refs: Sequence[VarmReference],
    dev_refs: Sequence[VarmReference],
    out: Path,
    *,
    device: str | None = None,
    resume: bool = False,
    on_step: Callable[[StepReport], None] | None = None,
) -> SftResult:
    """Train a LoRA adapter (module docstrings); the best one ends in ``<out>/adapter``."""
    torch = require_module("torch", "train", "CoT-SFT")
    peft = require_module("peft", "train", "CoT-SFT")
    transformers = require_module("transformers", "train", "CoT-SFT")
    import numpy as np

    started = time.perf_counter()
    try:
        torch_dev = torch_device(torch, device, "train sft")
    except BackendError as exc:
        raise TrainingInputError("--device", str(exc)) from None
    checkpoint = latest_checkpoint(out)
    recover_adapter(out)
    if checkpoint is None and resume:
        raise TrainingInputError("--resume", f"no checkpoint in {out}")
    if checkpoint is not None and not resume:
        raise TrainingInputError(
            "--out", f"{out} holds a checkpoint; add --resume to continue it, or choose another folder"
        )
    if checkpoint is None and (out / "adapter").exists():
        raise TrainingInputError("--out", f"{out} already holds an adapter; choose another folder")
    template = load_prompt(config.setting, config.prompt_template)
    digests = {"train_sha256": references_sha256(train_refs), "dev_sha256": references_sha256(dev_refs)}
    identity = {"fingerprint": config.fingerprint(), "prompt_sha256": template.sha256, **digests}
    if checkpoint is not None:
        saved = checkpoint_identity(checkpoint)
        for key, value in identity.items():
            if saved.get(key) != value:
                what = {"fingerprint": "configuration", "prompt_sha256": "prompt template"}.get(
                    key, key.removesuffix("_sha256") + " data"
                )
                raise TrainingInputError("--resume", f"the {what} differs from the checkpoint's in {out}")

    torch.manual_seed(config.seed)
    tokenizer, base = _load(config, torch_dev, torch)
    try:
        train_set = encode_references(tokenizer, train_refs, template, config.max_length)
        dev_set = encode_references(tokenizer, dev_refs, template, config.max_length)
    except ValueError as exc:
        raise TrainingInputError("--train", str(exc)) from None
    if not train_set.examples or not dev_set.examples:
        which = "train" if not train_set.examples else "dev"
        raise TrainingInputError(f"--{which}", f"no example fits --max-length {config.max_length}")
    if config.gradient_checkpointing:
        base.gradient_checkpointing_enable()
        base.enable_input_require_grads()
        base.config.use_cache = False
    torch.manual_seed(config.seed)
    lora = peft.LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=lora_targets(base.config.model_type, config.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )
    model = peft.get_peft_model(base, lora)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.learning_rate, weight_decay=config.weight_decay)
    n = len(train_set.examples)
    total = config.total_steps(n)
    per_epoch = config.steps_per_epoch(n)
    scheduler = transformers.get_cosine_schedule_with_warmup(optimizer, math.ceil(config.warmup_ratio * total), total)
    pad_id = tokenizer.pad_token_id

    info_base = {
        "config": config.model_dump(mode="json"),
        **identity,
        "n_train": n,
        "n_dev": len(dev_set.examples),
        "too_long": {"train": train_set.too_long, "dev": dev_set.too_long},
        "total_steps": total,
        "versions": {
            "verimod": __version__,
            **{name: package_version(name) for name in ("torch", "transformers", "peft")},
        },
        "device": torch_dev.type,
    }
    segments = 1
    if checkpoint is not None:
        state = load_checkpoint(checkpoint, model, optimizer, scheduler)
        resumed_from: int | None = state.step
        segments += int(checkpoint_identity(checkpoint).get("segments", 1))
    else:
        state, resumed_from = TrainState(history=[]), None
        initial = dev_loss(model, dev_set.examples, config.batch_size, pad_id, torch_dev)
        state.history = [{"step": 0, "dev_loss": initial}]
    seconds_before = state.seconds
    history = state.history if state.history is not None else []
    stopped_early = state.bad_evals >= config.patience
    model.train()
    while state.step < total and not stopped_early:
        epoch, offset = divmod(state.step, per_epoch)
        order = np.random.default_rng([config.seed, epoch]).permutation(n)
        group = batches(train_set.examples, order.tolist(), config.batch_size)[
            offset * config.grad_accum : (offset + 1) * config.grad_accum
        ]
        tokens = sum(e.n_supervised for chunk in group for e in chunk)
        loss_total = 0.0
        for chunk in group:
            batch = {k: v.to(torch_dev) for k, v in collate(chunk, pad_id).items()}
            loss = token_loss_sum(model, batch, torch) / tokens
            loss.backward()
            loss_total += float(loss.detach())
        if config.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(trainable, config.max_grad_norm)
        learning_rate = scheduler.get_last_lr()[0]
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        state.step += 1
        record: dict[str, Any] = {"step": state.step, "loss": loss_total, "learning_rate": learning_rate}
        evaluated = state.step % config.eval_every == 0 or state.step == total
        if evaluated:
            record["dev_loss"] = dev_loss(model, dev_set.examples, config.batch_size, pad_id, torch_dev)
            best = state.best_dev_loss
            if best is None or record["dev_loss"] < best - config.min_delta:
                state.best_dev_loss, state.best_step, state.bad_evals = record["dev_loss"], state.step, 0
                info = {**info_base, "best_step": state.step, "best_dev_loss": record["dev_loss"]}
                save_adapter(out, model, {**info, "history": [*history, record]})
            else:
                state.bad_evals += 1
                stopped_early = state.bad_evals >= config.patience
        history.append(record)
        state.history = history
        if evaluated:
            state.seconds = seconds_before + time.perf_counter() - started
            save_checkpoint(out, model, optimizer, scheduler, state, {**identity, "segments": segments})
        if on_step is not None:
            on_step(StepReport(state.step, total, loss_total, learning_rate, record.get("dev_loss")))
    summary = {
        **info_base,
        "best_step": state.best_step,
        "best_dev_loss": state.best_dev_loss,
        "steps": state.step,
        "stopped_early": stopped_early,
        "resumed_from": resumed_from,
        "seconds": round(seconds_before + time.perf_counter() - started, 3),
        "seconds_this_run": round(time.perf_counter() - started, 3),
        "segments": segments,
        "history": history,
    }
    (out / "training.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return SftResult(
        adapter=out / "adapter",
        steps=state.step,
        total_steps=total,
        best_step=state.best_step,
        best_dev_loss=state.best_dev_loss,
        initial_dev_loss=history[0].get("dev_loss") if history else None,
        stopped_early=stopped_early,
        resumed_from=resumed_from,
        n_train=n,
        n_dev=len(dev_set.examples),
        too_long={"train": train_set.too_long, "dev": dev_set.too_long},
        history=history,
    )
