"""``verimod data profile``: what a data set looks like, side by side with others.

Registered on the ``data`` group by :func:`verimod.cli.data.register`; the statistics are
defined in :mod:`verimod.data.profile`, the table in :mod:`verimod.report.profile_table`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from verimod.cli.common import QuietOption, bad_input_exits, console, err_console
from verimod.cli.data import EncodingOpt, OnErrorOpt, TextField, Threshold, data_app
from verimod.core.errors import InputError, one_line
from verimod.data.jsonl import write_json
from verimod.data.records import FORMATS
from verimod.report.profile_table import PROFILE_FORMATS


@data_app.command("profile")
def profile(
    source: Annotated[
        Path, typer.Argument(help="The file to profile (VARM references, or any CSV, TSV, JSON, JSONL, Parquet).")
    ],
    against: Annotated[
        list[Path] | None, typer.Option("--against", help="Another file to show side by side (repeatable).")
    ] = None,
    text_field: TextField = "text",
    text_only: Annotated[
        bool, typer.Option("--text-only", help="Profile the texts alone; ignore label, target, tags and other fields.")
    ] = False,
    threshold: Threshold = 95.0,
    frames: Annotated[int, typer.Option("--frames", help="Most repeated sentence frames listed per file.")] = 10,
    json_out: Annotated[str | None, typer.Option("--json", help="Write the report as JSON ('-': stdout).")] = None,
    fmt: Annotated[str, typer.Option("--format", help=f"Output: {' | '.join(PROFILE_FORMATS)}.")] = "table",
    input_format: Annotated[
        str | None, typer.Option("--input-format", help=f"Input format ({', '.join(FORMATS)}); default: by name.")
    ] = None,
    workers: Annotated[int, typer.Option(help="Threads of the near-duplicate join.")] = 1,
    encoding: EncodingOpt = "auto",
    on_error: OnErrorOpt = "fail",
    quiet: QuietOption = False,
) -> None:
    """Profile a data set: text lengths (p10/p50/p90/max characters after NFKC, an emoticon code
    such as [酷] counting one), shares of texts with emoji, emoticons, no punctuation at all, Latin
    letters and Traditional characters, the share opening with their own target (all and
    harmful), the most repeated sentence frames, label / category / stance / target type /
    explicitness / split / meta.source distributions, tags and the share of non-harmful items that
    are hard cases, and near-duplicates (exact join at --threshold) — side by side with the
    --against files.

    Example: [bold]verimod data profile src/verimod/resources/varm_starter.jsonl --against
    cold_test.jsonl --json profile.json[/bold]
    """
    from verimod.data.neardup_bounds import check_threshold
    from verimod.data.profile import profile_report
    from verimod.data.profile_input import read_profile_input
    from verimod.report.profile_table import render_profile

    with bad_input_exits():
        if fmt not in PROFILE_FORMATS:
            raise InputError.at("--format", None, None, f"choose one of {', '.join(PROFILE_FORMATS)}, got {fmt!r}")
        if on_error not in ("fail", "skip"):
            raise InputError.at("--on-error", None, None, f"choose fail or skip, got {on_error!r}")
        if input_format is not None and input_format not in FORMATS:
            raise InputError.at(
                "--input-format", None, None, f"choose one of {', '.join(FORMATS)}, got {input_format!r}"
            )
        if frames < 0:
            raise InputError.at("--frames", None, None, f"must be 0 or more, got {frames}")
        try:
            check_threshold(threshold)
        except ValueError as exc:
            raise InputError.at("--threshold", None, None, str(exc)) from None
        inputs = []
        for path in [source, *(against or [])]:
            data = read_profile_input(
                path,
                fmt=input_format,  # type: ignore[arg-type]
                encoding=None if encoding == "utf-8" else encoding,
                on_error=on_error,  # type: ignore[arg-type]
                text_field=text_field,
                text_only=text_only,
            )
            for problem in data.skipped:
                typer.echo(f"skipped: {one_line(str(problem))}", err=True)
            inputs.append(data)
        with err_console.status("profiling …"):
            report = profile_report(inputs, threshold=threshold, top_frames=frames, workers=workers)
    if json_out == "-":
        sys.stdout.write(f"{render_profile(report, 'json')}\n")
    elif json_out:
        write_json(json_out, report.model_dump(mode="json"))
    if quiet or json_out == "-":
        return
    rendered = render_profile(report, fmt)  # type: ignore[arg-type]
    if isinstance(rendered, Table):
        console.print(rendered)
        for name, how in report.method.items():
            console.print(f"{name}: {how}", highlight=False)
    else:
        sys.stdout.write(rendered if rendered.endswith("\n") else rendered + "\n")
