"""Name → object registries filled by decorators, with did-you-mean errors.

>>> widgets = Registry("widget")
>>> @widgets.register("knob")
... class Knob: ...
>>> widgets.get("knob") is Knob
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from verimod.core.errors import did_you_mean

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name that is not registered; the message lists the known names and the closest one."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[T]):
    """A registry of named entries of one kind (backends, prompt settings, …)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name`` (names are unique)."""

        def add(entry: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = entry
            return entry

        return add

    def get(self, name: str) -> T:
        """The entry registered under ``name``; :class:`UnknownNameError` otherwise."""
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}{did_you_mean(name, self._entries)}; known: {known}"
            ) from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
