"""What every command shares: consoles, bad-input handling, common options.

Untrusted text (model outputs, data) is printed only through :func:`safe` (a Rich ``Text``)
or :func:`verimod.core.errors.one_line` (plain): both remove control characters, so no terminal
escape sequence gets through, and neither is ever interpreted as Rich markup. Error and problem
lines are printed plain and unwrapped: one problem, one line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from verimod.core.errors import InputError, MissingExtraError, one_line

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

EncodingOption = Annotated[
    str | None,
    typer.Option(
        "--encoding", help="Input encoding (default: UTF-8 with or without BOM): a codec name such as gb18030, or auto."
    ),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]
RunsDirOption = Annotated[
    Path, typer.Option("--runs-dir", help="The folder of run directories, where run ids are looked up.")
]
#: help of an argument naming runs
RUN_HELP = "A run directory, run id or unique prefix of one (looked up in --runs-dir)."
RUNS_HELP = "Run directories, run ids or unique prefixes of them (looked up in --runs-dir)."


def safe(text: str, limit: int = 400) -> Text:
    """Untrusted text as a Rich ``Text``: one line, no control characters, no markup."""
    return Text(one_line(text, limit))


@contextmanager
def bad_input_exits() -> Iterator[None]:
    """Turn :class:`InputError` (and a missing optional package, :class:`MissingExtraError`) into
    one line on stderr and exit code 2 (never a traceback)."""
    try:
        yield
    except InputError as exc:
        typer.echo(f"error: {one_line(str(exc.problem), 1000)}", err=True)
        raise typer.Exit(2) from None
    except MissingExtraError as exc:
        typer.echo(f"error: {one_line(str(exc), 1000)}", err=True)
        raise typer.Exit(2) from None


def emit_json(json_out: str, payload: Any) -> None:
    """Indented UTF-8 JSON to the file ``json_out``, or to stdout when it is ``-``."""
    text = json.dumps(payload, ensure_ascii=False, indent=2) + "\n"
    if json_out == "-":
        sys.stdout.write(text)
    else:
        Path(json_out).write_text(text, encoding="utf-8")
