"""What every command of the ``verimod`` tree gets before it parses anything.

:func:`prepare` walks the Click command tree once (idempotent) and

- makes every help text safe for Rich markup: a bracketed span that Rich would take for a tag
  but that is not a style (``[default: 15]``, ``[data]``, a closing tag that closes nothing) is
  escaped, so it is shown as written instead of disappearing or raising ``MarkupError``;
  styles (``[bold]…[/bold]``) keep working;
- gives each command a one-paragraph ``short_help`` (in rich markup mode Typer keeps single
  line breaks in command listings, which wraps them mid-sentence);
- makes every ``float`` parameter refuse ``nan`` and ``±inf`` (Click and pydantic accept them,
  and a range test such as ``0 ≤ t ≤ 100`` is false for NaN only by accident of each check);
- applies the CLI-wide conventions of :data:`NAMED_MINIMUMS` — every ``--seed`` and every
  ``--bootstrap`` is a non-negative integer — where an option declares no range of its own
  (numpy refuses negative seeds and resample counts with a traceback).

:class:`VerimodGroup` is the root group class: it prepares the tree on every invocation (also
under a test runner) and prints a usage error — an unknown option, a value of the wrong type or
out of its range — as one line, ``error: … (see 'verimod data dedup --help')``, exit code 2,
instead of a multi-line box.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
import typer.core
from rich.errors import StyleSyntaxError
from rich.markup import RE_TAGS, escape
from rich.style import Style
from typer import _click

from verimod.core.errors import one_line

__all__ = ["VerimodGroup", "prepare", "safe_markup", "walk"]

_PREPARED = "_verimod_prepared"
#: Lowest value of every integer parameter of these names (unless it declares its own range).
NAMED_MINIMUMS: dict[str, int] = {"seed": 0, "bootstrap": 0}


def walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command of the tree with its path of names (the root has the empty path)."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from walk(sub, (*path, name))


def _is_style(name: str) -> bool:
    try:
        Style.parse(name)
    except StyleSyntaxError:
        return False
    return True


def safe_markup(text: str) -> str:
    """``text`` with every bracketed span escaped that Rich would read as a tag but that is not
    a style tag (or a closing tag matching an open one): ``"Remove [哈哈] [default: keep]"`` →
    ``"Remove [哈哈] \\[default: keep]"``; ``"[bold]x[/bold]"`` is unchanged.

    >>> safe_markup("needs verimod[data]; [bold]verimod x[/bold] [/bold]")
    'needs verimod\\\\[data]; [bold]verimod x[/bold] \\\\[/bold]'
    """
    out: list[str] = []
    opened: list[str] = []
    position = 0
    for match in RE_TAGS.finditer(text):
        backslashes, tag = match.group(2), match.group(3)
        start, end = match.span()
        out.append(text[position:start])
        position = end
        if len(backslashes) % 2:  # already escaped
            out.append(match.group(0))
            continue
        if tag.startswith("/"):
            name = tag[1:].strip()
            keep = bool(opened) and (not name or name == opened[-1])
            if keep:
                opened.pop()
        else:
            keep = _is_style(tag)
            if keep:
                opened.append(tag.strip())
        out.append(match.group(0) if keep else backslashes + escape(f"[{tag}]"))
    out.append(text[position:])
    return "".join(out)


def _finite(original: Callable[..., Any] | None) -> Callable[..., Any]:
    """A parameter callback refusing NaN and infinities, then running ``original``."""

    def check(ctx: _click.Context, param: Any, value: Any) -> Any:
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if isinstance(item, float) and not math.isfinite(item):
                raise _click.exceptions.BadParameter(f"must be a finite number, got {item!r}", ctx=ctx, param=param)
        return original(ctx, param, value) if original is not None else value

    return check


def _at_least(minimum: int, original: Callable[..., Any] | None) -> Callable[..., Any]:
    """A parameter callback refusing integers below ``minimum``, then running ``original``."""

    def check(ctx: _click.Context, param: Any, value: Any) -> Any:
        if isinstance(value, int) and value < minimum:
            raise _click.exceptions.BadParameter(f"must be ≥ {minimum}, got {value}", ctx=ctx, param=param)
        return original(ctx, param, value) if original is not None else value

    return check


def _annotation(param: Any) -> Any:
    descriptor = getattr(param, "type_descriptor", None)
    return getattr(descriptor, "annotation", None)


def _prepare_command(command: Any) -> None:
    if command.help:
        command.help = safe_markup(command.help)
        if not command.short_help:
            command.short_help = " ".join(inspect.cleandoc(command.help).split("\n\n")[0].split())
    if command.short_help:
        command.short_help = safe_markup(command.short_help)
    if getattr(command, "epilog", None):
        command.epilog = safe_markup(command.epilog)
    for param in command.params:
        if getattr(param, "help", None):
            param.help = safe_markup(param.help)
        annotation = _annotation(param)
        if annotation is float or annotation in (list[float], tuple[float, ...]):
            param.callback = _finite(param.callback)
        info = getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
        if annotation is int and param.name in NAMED_MINIMUMS and getattr(info, "min", None) is None:
            param.callback = _at_least(NAMED_MINIMUMS[param.name], param.callback)


def prepare(root: Any) -> Any:
    """Prepare every command of the tree under ``root`` once (see the module docstring)."""
    if getattr(root, _PREPARED, False):
        return root
    for _, command in walk(root):
        _prepare_command(command)
    setattr(root, _PREPARED, True)
    return root


@contextmanager
def one_line_usage_errors() -> Iterator[None]:
    """Print a Click usage error as one line on stderr and exit with its code (2)."""
    try:
        yield
    except _click.exceptions.NoArgsIsHelpError:
        raise
    except _click.exceptions.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        typer.echo(f"error: {one_line(exc.format_message(), 1000)}{hint}", err=True)
        raise typer.Exit(exc.exit_code) from None


class VerimodGroup(typer.core.TyperGroup):
    """The root group: prepares the command tree and prints usage errors as one line."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        prepare(self)
        return super().main(*args, **kwargs)

    def make_context(self, *args: Any, **kwargs: Any) -> _click.Context:
        with one_line_usage_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: _click.Context) -> Any:
        with one_line_usage_errors():
            return super().invoke(ctx)
