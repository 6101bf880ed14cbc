"""Crash-safe CoT-SFT checkpoints and the saved adapter.

A checkpoint is a folder ``<out>/checkpoints/step-<n>/`` with the LoRA weights
(``adapter.safetensors``), the optimizer and scheduler states (``optimizer.pt``,
``scheduler.pt``: tensors and numbers only, read back with ``torch.load(weights_only=True)``,
never unpickling arbitrary objects), the torch RNG states (``rng.pt``) and ``state.json`` (step,
best dev loss, evaluations without improvement, history, training seconds so far, config
fingerprint, data digests). It
is written under a temporary name and renamed when complete; then ``<out>/checkpoints/LATEST``
(the folder name) is replaced atomically, and older checkpoints are removed. A run killed at
any moment therefore resumes from the last complete checkpoint and repeats at most the steps
since.

The best adapter is ``<out>/adapter/`` (peft's ``adapter_config.json`` and
``adapter_model.safetensors``, plus ``verimod_training.json``), replaced the same way at every
dev-loss improvement: written to ``adapter.tmp``, the old one renamed aside, the new one
renamed in place, the old one removed (:func:`recover_adapter` puts the old one back if a crash
fell between the two renames).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LATEST = "LATEST"


@dataclass
class TrainState:
    """What the loop carries from step to step (and across a resume)."""

    step: int = 0
    best_dev_loss: float | None = None
    best_step: int | None = None
    bad_evals: int = 0
    history: list[dict[str, Any]] | None = None
    seconds: float = 0.0  # training time up to this state, summed over every resumed segment

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "step": self.step,
            "best_dev_loss": self.best_dev_loss,
            "best_step": self.best_step,
            "bad_evals": self.bad_evals,
            "history": self.history or [],
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainState:
        """Read back :meth:`to_json`."""
        return cls(
            data["step"], data["best_dev_loss"], data["best_step"], data["bad_evals"], list(data["history"]),
            float(data.get("seconds", 0.0)),  # checkpoints written before the field: unknown, counted as 0
        )  # fmt: skip


def _write_json(path: Path, payload: Any) -> None:
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def save_checkpoint(
    out: Path, model: Any, optimizer: Any, scheduler: Any, state: TrainState, identity: dict[str, Any]
) -> Path:
    """Write the checkpoint of ``state.step`` (module docstring); returns its folder."""
    import torch
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    root = out / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    name = f"step-{state.step}"
    tmp = root / f"{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    weights = {k: v.detach().cpu().contiguous() for k, v in get_peft_model_state_dict(model).items()}
    save_file(weights, str(tmp / "adapter.safetensors"))
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
    rng = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.stack(torch.cuda.get_rng_state_all())
    torch.save(rng, tmp / "rng.pt")
    _write_json(tmp / "state.json", {**state.to_json(), **identity})
    final = root / name
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    pointer = root / f"{LATEST}.tmp"
    pointer.write_text(name + "\n", encoding="utf-8")
    os.replace(pointer, root / LATEST)
    for old in root.iterdir():
        if old.is_dir() and old.name != name:
            shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(out: Path) -> Path | None:
    """The folder ``LATEST`` names, or None when there is no complete checkpoint."""
    pointer = out / "checkpoints" / LATEST
    if not pointer.is_file():
        return None
    folder = out / "checkpoints" / pointer.read_text(encoding="utf-8").strip()
    return folder if (folder / "state.json").is_file() else None


def checkpoint_identity(folder: Path) -> dict[str, Any]:
    """The ``state.json`` of a checkpoint."""
    data: dict[str, Any] = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    return data


def load_checkpoint(folder: Path, model: Any, optimizer: Any, scheduler: Any) -> TrainState:
    """Restore weights, optimizer, scheduler and RNG states from ``folder``; the loop state."""
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    set_peft_model_state_dict(model, load_file(str(folder / "adapter.safetensors")))
    optimizer.load_state_dict(torch.load(folder / "optimizer.pt", weights_only=True))
    scheduler.load_state_dict(torch.load(folder / "scheduler.pt", weights_only=True))
    rng = torch.load(folder / "rng.pt", weights_only=True)
    torch.set_rng_state(rng["cpu"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(list(rng["cuda"]))
    return TrainState.from_json(checkpoint_identity(folder))


def save_adapter(out: Path, model: Any, info: dict[str, Any]) -> Path:
    """Replace ``<out>/adapter`` with the model's current adapter and ``info`` (module docstring)."""
    final, tmp, aside = out / "adapter", out / "adapter.tmp", out / "adapter.old"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    _write_json(tmp / "verimod_training.json", info)
    shutil.rmtree(aside, ignore_errors=True)
    if final.exists():
        os.replace(final, aside)
    os.replace(tmp, final)
    shutil.rmtree(aside, ignore_errors=True)
    return final


def recover_adapter(out: Path) -> None:
    """After a crash between the renames of :func:`save_adapter`: the set-aside adapter back."""
    final, aside = out / "adapter", out / "adapter.old"
    if not final.exists() and aside.is_dir():
        os.replace(aside, final)
