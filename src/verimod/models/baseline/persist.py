"""Byte-deterministic storage of a baseline model: JSON and numpy ``.npz``, never pickle.

A model directory holds three files:

- ``model.json``: format name and version, model version, training configuration, the
  training data's sha256, number of training items, seed, the value list of every field, the
  character tables' version and sha256, what trained each field, the leakage index's summary;
- ``vocab.json``: the text features by block, the cue lexicons and stance words the model was
  trained with, the target n-grams, span-scorer feature names, the target lexicon, the
  implicit-target strings, and the leakage index's stored texts and bundled sources;
- ``arrays.npz``: every numeric array (float64, float16, int64 or uint8), written as an
  uncompressed zip with fixed timestamps and sorted member names, so the same model always
  gives the same bytes.

JSON is written with sorted keys and no timestamps. Reading uses ``np.load(...,
allow_pickle=False)`` and ``json.loads``; any missing file, wrong dtype or non-finite value
raises :class:`verimod.core.errors.InputError` naming the file.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np

from verimod.core.errors import InputError

MODEL_FILE: Final = "model.json"
VOCAB_FILE: Final = "vocab.json"
ARRAYS_FILE: Final = "arrays.npz"
FILES: Final = (MODEL_FILE, VOCAB_FILE, ARRAYS_FILE)
_ZIP_TIME: Final = (1980, 1, 1, 0, 0, 0)
_DTYPES: Final = (np.dtype(np.float64), np.dtype(np.float16), np.dtype(np.int64), np.dtype(np.uint8))


def json_bytes(obj: Any) -> bytes:
    """Canonical JSON (sorted keys, UTF-8, one trailing newline)."""
    return (json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An ``.npz`` archive of ``arrays`` whose bytes depend only on the arrays."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name in sorted(arrays):
            array = np.ascontiguousarray(arrays[name])
            if array.dtype == object:
                raise ValueError(f"array {name!r} has dtype object (refused: it would need pickle)")
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)
    return buffer.getvalue()


def write_files(directory: Path, files: Mapping[str, bytes]) -> None:
    """Write each file atomically (temporary file in the same folder, then rename)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        tmp = directory / f".{name}.{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, directory / name)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def fingerprint(files: Mapping[str, bytes]) -> str:
    """sha256 over the model files (name, length and bytes of each, in :data:`FILES` order)."""
    digest = hashlib.sha256()
    for name in FILES:
        data = files[name]
        digest.update(f"{name}\n{len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()


def read_files(directory: Path) -> dict[str, bytes]:
    """The raw bytes of the three model files; :class:`InputError` when one is missing."""
    if not directory.is_dir():
        raise InputError.at(str(directory), None, None, "not a baseline model directory (no such folder)")
    out = {}
    for name in FILES:
        path = directory / name
        try:
            out[name] = path.read_bytes()
        except OSError as exc:
            raise InputError.at(str(path), None, None, f"cannot read baseline model file: {exc.strerror}") from None
    return out


def load_json(data: bytes, where: str) -> dict[str, Any]:
    """A JSON object from bytes; :class:`InputError` naming ``where`` otherwise."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError.at(where, None, None, f"invalid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise InputError.at(where, None, None, "expected a JSON object")
    return obj


def load_arrays(data: bytes, where: str) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, loaded with ``allow_pickle=False``; only finite
    float64 / float16 and int64 / uint8 arrays are accepted."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError.at(where, None, None, f"not a readable .npz archive: {exc}") from None
    for name, array in arrays.items():
        if array.dtype not in _DTYPES:
            raise InputError.at(
                where, None, None, f"array {name!r} has dtype {array.dtype} (need float64, float16, int64 or uint8)"
            )
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise InputError.at(where, None, None, f"array {name!r} holds non-finite values")
    return arrays
