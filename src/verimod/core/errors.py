"""Errors that describe bad input precisely enough to fix it.

Every problem with a user's file is reported as one line naming the file, the line and the
field: ``FILE:LINE: field 'label': value 'harmfull' is not one of ... (did you mean 'harmful'?)``.
The command line turns an :class:`InputError` into that line and exit code 2, never a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem found in an input file.

    ``line`` is 1-based (None when the problem concerns the whole file); ``field`` is the
    offending JSON key (None when the problem concerns the whole line).
    """

    path: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        what = f"field '{self.field}': " if self.field else ""
        return one_line(f"{where}: {what}{self.message}")


class InputError(Exception):
    """Bad input: a file, line or field that cannot be used as given."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem

    @classmethod
    def at(cls, path: str, line: int | None, field: str | None, message: str) -> InputError:
        """Shorthand for ``InputError(Problem(path, line, field, message))``."""
        return cls(Problem(path, line, field, message))


def one_line(text: str, limit: int = 400) -> str:
    """Collapse ``text`` onto one printable line of at most ``limit`` characters.

    Control characters and line breaks become spaces; lone surrogates become U+FFFD, so the
    result can always be printed and encoded as UTF-8.
    """
    cleaned = "".join(
        " "
        if ch in "\r\n\t\v\f" or ord(ch) < 32 or ord(ch) == 127
        else ("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch)
        for ch in text
    )
    cleaned = " ".join(cleaned.split())
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or ``""`` when none is close."""
    matches = difflib.get_close_matches(value.lower(), list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{matches[0]}'?)" if matches else ""


def shown(value: object, limit: int = 60) -> str:
    """A short, safe rendering of an offending value for an error message."""
    text = repr(value)
    return one_line(text if len(text) <= limit else text[: limit - 1] + "…")


def install_hint(extra: str) -> str:
    """How to install an optional extra, as it works: verimod is not on the package index, so the
    line installs from the verimod folder (a built wheel works the same way; see the README)."""
    return f'pip install ".[{extra}]" in the verimod folder'


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra to install.
    Commands report it as one line with exit code 2, like bad input."""
