"""The items of a VARM run, streamed: memory does not grow with the number of items.

- :class:`ReferenceFile` — the reference items of a run as a sequence read from a JSONL file on
  demand (a byte offset per item is all it holds). A new run's items are first *spooled* to a
  file (:func:`spool_references`) which becomes the run's ``references.jsonl``.
- :class:`RequestPlan` — the run's requests, one per (item, repeat), built as the engine reads
  them: its length is known at once, its prompts exist only while in flight. Repeat ``r > 0``
  is sent with seed ``seed + r`` (when a seed is set) so that sampled repeats differ; repeat 0
  is exactly the request of a single-repeat run. ``skip`` leaves out finished (id, repeat)
  pairs (a resumed run).
"""

from __future__ import annotations

import json
import os
import re
import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence, Set
from pathlib import Path
from typing import overload

from pydantic import ValidationError

from verimod.core.errors import InputError
from verimod.core.runs import new_spool
from verimod.data.jsonl import dumps_line
from verimod.models.base import ChatMessage, GenerationParams, ModelRequest
from verimod.tasks.varm.prompts import PromptTemplate
from verimod.tasks.varm.schema import VarmReference

#: the start of a line as verimod writes a reference: its id
_ID = re.compile(rb'\{"id": ("(?:[^"\\]|\\.)*")')


class ReferenceFile(Sequence[VarmReference]):
    """Reference items read from a JSONL file (one verimod-written item per line) on demand."""

    def __init__(self, path: Path, offsets: array[int], spooled: bool = False) -> None:
        self.path = path
        self._offsets = offsets
        self._cleanup = weakref.finalize(self, _unlink, path) if spooled else None

    @classmethod
    def open(cls, path: str | Path) -> ReferenceFile:
        """The items of an existing file (one pass over its bytes to find where lines start)."""
        offsets = array("q")
        position = 0
        with open(path, "rb") as handle:
            for line in handle:
                if line.strip():
                    offsets.append(position)
                position += len(line)
        return cls(Path(path), offsets)

    def take(self) -> Path | None:
        """The spool file, handed over to be moved (it is then read from wherever
        :meth:`relocate` says); None when it is no longer a spool (it was taken already)."""
        if self._cleanup is None or not self._cleanup.alive:
            return None
        self._cleanup.detach()
        return self.path

    def relocate(self, path: Path) -> None:
        """The file now lives at ``path`` (same content)."""
        self.path = path

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> VarmReference: ...
    @overload
    def __getitem__(self, index: slice) -> list[VarmReference]: ...
    def __getitem__(self, index: int | slice) -> VarmReference | list[VarmReference]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        with open(self.path, "rb") as handle:
            handle.seek(self._offsets[index])
            return self._decode(handle.readline(), self._offsets[index])

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        """(byte offset, line) of every line that is not blank."""
        with open(self.path, "rb") as handle:
            offset = 0
            for line in handle:
                if line.strip():
                    yield offset, line
                offset += len(line)

    def __iter__(self) -> Iterator[VarmReference]:
        for offset, line in self._lines():
            yield self._decode(line, offset)

    def ids(self) -> Iterator[str]:
        """The item ids in order, without decoding the items."""
        for offset, line in self._lines():
            found = _ID.match(line)
            yield str(json.loads(found[1])) if found else self._decode(line, offset).id

    def _decode(self, line: bytes, offset: int) -> VarmReference:
        """The item on the line at ``offset``; a bad one is an :class:`InputError` naming the file's line."""
        try:
            return VarmReference.model_validate_json(line)
        except ValidationError as exc:
            with open(self.path, "rb") as handle:
                number = handle.read(offset).count(b"\n") + 1
            raise InputError.at(
                str(self.path), number, None, f"not a reference item: {exc.errors()[0]['msg']}"
            ) from None


def _unlink(path: Path) -> None:
    Path(path).unlink(missing_ok=True)


def spool_references(references: Iterable[VarmReference], folder: str | Path | None = None) -> ReferenceFile:
    """Write ``references`` to a temporary file in ``folder`` (when it exists; else the system's
    temporary folder) as the run's ``references.jsonl`` will hold them; the file is removed
    when the returned object is dropped, unless :meth:`ReferenceFile.take` handed it over (one
    left by a killed process is removed by a later run creation: :func:`verimod.core.runs.new_spool`)."""
    fd, name = new_spool(folder)
    offsets = array("q")
    position = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for reference in references:
                line = dumps_line(reference.model_dump(exclude_none=True))
                offsets.append(position)
                out.write(line)
                position += len(line)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return ReferenceFile(Path(name), offsets, spooled=True)


class RequestPlan(Sequence[ModelRequest]):
    """The requests of a run, built lazily (see the module docstring)."""

    def __init__(
        self,
        references: Sequence[VarmReference],
        template: PromptTemplate,
        examples: Sequence[VarmReference],
        params: GenerationParams,
        repeats: int = 1,
        skip: Set[tuple[str, int]] = frozenset(),
    ) -> None:
        self.references = references
        self.template = template
        self.examples = list(examples)
        self.repeats = repeats
        self.skip = skip
        self.params = [repeat_params(params, r) for r in range(repeats)]
        self._length: int | None = None if skip else len(references) * repeats

    def __iter__(self) -> Iterator[ModelRequest]:
        for reference in self.references:
            messages = None
            for repeat in range(self.repeats):
                if (reference.id, repeat) in self.skip:
                    continue
                if messages is None:
                    messages = self.template.render(reference, self.examples)
                yield self._request(reference, repeat, messages)

    def _request(self, reference: VarmReference, repeat: int, messages: tuple[ChatMessage, ...]) -> ModelRequest:
        return ModelRequest(
            sample_id=reference.id,
            messages=messages,
            params=self.params[repeat],
            repeat=repeat,
            input_text=reference.text,
        )

    def __len__(self) -> int:
        if self._length is None:
            ids = (
                self.references.ids() if isinstance(self.references, ReferenceFile) else (r.id for r in self.references)
            )
            self._length = sum(1 for i in ids for r in range(self.repeats) if (i, r) not in self.skip)
        return self._length

    @overload
    def __getitem__(self, index: int) -> ModelRequest: ...
    @overload
    def __getitem__(self, index: slice) -> list[ModelRequest]: ...
    def __getitem__(self, index: int | slice) -> ModelRequest | list[ModelRequest]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if not self.skip:
            reference = self.references[index // self.repeats]
            return self._request(reference, index % self.repeats, self.template.render(reference, self.examples))
        for position, request in enumerate(self):
            if position == index:
                return request
        raise IndexError(index)


def repeat_params(params: GenerationParams, repeat: int) -> GenerationParams:
    """The parameters of repeat ``repeat``: seed + repeat (repeat 0, or no seed: unchanged)."""
    if repeat == 0 or params.seed is None:
        return params
    return params.model_copy(update={"seed": params.seed + repeat})
