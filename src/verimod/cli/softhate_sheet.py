"""``verimod softhate sheet``: sample the human-verification sheets of SoftHateBench."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verimod.cli.common import QuietOption, bad_input_exits
from verimod.cli.softhate import annotator_names, choice, say, softhate_app
from verimod.core.errors import InputError


@softhate_app.command("sheet")
def sheet(
    items_paths: Annotated[list[Path], typer.Argument(help="Item files (softbase, softgv, softhv; controls).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The blank sheet (CSV).")],
    kind: Annotated[
        str, typer.Option(help="structure: tier-matched triples | perception: balanced hate and non-hate items.")
    ] = "structure",
    n: Annotated[int, typer.Option("--n", help="Triples (structure) or items per class (perception).")] = 500,
    annotators: Annotated[str, typer.Option(help="Annotators, comma-separated.")] = "annotator1,annotator2,annotator3",
    tiers: Annotated[str, typer.Option(help="perception: tiers to draw from, comma-separated.")] = (
        "softbase,softgv,softhv"
    ),
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    quiet: QuietOption = False,
) -> None:
    """Sample a human-verification sheet: --kind structure draws --n standpoints with all three
    soft tiers and asks each annotator, per item, for soft-hate validity, AMT coherence and
    whether the target is identifiable (the paper: 500 triples); --kind perception draws --n hate
    and --n non-hate items and asks whether each is hateful (gold labels stay off the sheet;
    `softhate report --sheet` compares the majority verdicts with them). Fill the verdict column
    with yes / no.

    Example: [bold]verimod softhate sheet sh/softbase.jsonl sh/softgv.jsonl sh/softhv.jsonl -o sheet.csv --n 500[/bold]
    """
    from verimod.tasks.softhate.items import load_items
    from verimod.tasks.softhate.sheets import (
        PERCEPTION_CRITERIA,
        STRUCTURE_CRITERIA,
        sample_perception,
        sample_structure,
        sheet_rows,
        write_blank_sheet,
    )

    with bad_input_exits():
        choice("--kind", kind, ("structure", "perception"))
        if n < 1:
            raise InputError.at("--n", None, None, f"must be at least 1, got {n}")
        names = annotator_names(annotators)
        items = load_items(items_paths)
        try:
            if kind == "structure":
                chosen, criteria = sample_structure(items, n, seed), STRUCTURE_CRITERIA
            else:
                wanted = tuple(t.strip() for t in tiers.split(",") if t.strip())
                chosen, criteria = sample_perception(items, n, seed, wanted), PERCEPTION_CRITERIA
        except ValueError as exc:
            raise InputError.at("--n", None, None, str(exc)) from None
    count = write_blank_sheet(sheet_rows(chosen, names, criteria), out)
    if not quiet:
        say(f"{len(chosen)} items × {len(names)} annotators × {len(criteria)} criteria = {count} rows → {out}")
