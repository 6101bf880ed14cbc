"""Command listings show each command's first docstring paragraph on flowing lines."""

from __future__ import annotations

import inspect

from verimod.cli.app import build_command


def _walk(command, path=()):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _walk(sub, (*path, name))


def test_every_listed_command_has_a_joined_first_paragraph() -> None:
    seen = 0
    for path, command in _walk(build_command()):
        if not path or not command.help:
            continue
        seen += 1
        first = inspect.cleandoc(command.help).split("\n\n")[0]
        assert "\n" not in command.short_help, path
        assert command.short_help.split() == first.split(), path
    assert seen > 30  # every protocol group is walked, not only the root
