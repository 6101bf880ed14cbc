"""Merging a LoRA adapter into its base model, for servers that load plain checkpoints.

W' = W + (alpha / r) · B A for every adapted weight (peft's ``merge_and_unload``), computed in
float32 and saved in ``dtype`` — ``"auto"``: the base model's own (``config.dtype``, float32
when unset), or ``float32`` / ``bfloat16`` / ``float16`` — as safetensors, with the tokenizer
and the adapter's ``verimod_training.json``. The output folder must not exist yet; it is
written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from verimod.models._local import require_module
from verimod.models.hf import dtype_keyword, local_model_path
from verimod.train.errors import TrainingInputError

DTYPES = ("auto", "float32", "bfloat16", "float16")


def merge_adapter(model: str, adapter: Path, out: Path, dtype: str = "auto") -> Path:
    """Merge ``adapter`` into ``model`` and save the result in ``out`` (module docstring).
    Raises :class:`~verimod.train.errors.TrainingInputError` for a missing adapter, an existing
    ``out`` or a model that cannot load."""
    torch = require_module("torch", "train", "merging an adapter")
    transformers = require_module("transformers", "train", "merging an adapter")
    peft = require_module("peft", "train", "merging an adapter")
    if dtype not in DTYPES:
        raise TrainingInputError("--dtype", f"choose from {', '.join(DTYPES)}; got {dtype!r}")
    if not (adapter / "adapter_config.json").is_file():
        raise TrainingInputError("--adapter", f"no adapter_config.json in {adapter}")
    if out.exists():
        raise TrainingInputError("--out", f"{out} exists; choose a new folder")
    path = local_model_path(model)
    kwargs = {"local_files_only": True} if path is not None else {}
    source = str(path) if path is not None else model
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kwargs)
        base = transformers.AutoModelForCausalLM.from_pretrained(source, **kwargs, **{dtype_keyword(): torch.float32})
        merged = peft.PeftModel.from_pretrained(base, str(adapter)).merge_and_unload()
    except (OSError, ValueError) as exc:
        raise TrainingInputError(
            "--model", f"cannot load {model!r} with {adapter}: {str(exc).splitlines()[0]}"
        ) from None
    if dtype == "auto":
        saved = getattr(base.config, "dtype", None) or getattr(base.config, "torch_dtype", None)
        target = getattr(torch, saved, None) if isinstance(saved, str) else saved
    else:
        target = getattr(torch, dtype)
    merged = merged.to(target if isinstance(target, torch.dtype) else torch.float32)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    merged.save_pretrained(str(tmp), safe_serialization=True)
    tokenizer.save_pretrained(str(tmp))
    info = adapter / "verimod_training.json"
    if info.is_file():
        shutil.copyfile(info, tmp / "verimod_training.json")
    os.replace(tmp, out)
    return out
