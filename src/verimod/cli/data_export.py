"""``verimod data export``: a reference set as a Hugging Face data set folder (Parquet + card).

Registered on the ``data`` group by :func:`verimod.cli.data.register`; the writing is
:func:`verimod.data.hf_export.export_hf`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verimod.cli.common import EncodingOption, QuietOption, bad_input_exits, console
from verimod.cli.data import data_app
from verimod.core.errors import InputError
from verimod.data.hf import HF_PREFIX

DATA_CARD = "DATA_CARD.md"


def _card_beside(source: str) -> Path | None:
    """``DATA_CARD.md`` in the folder of a file source (or inside a folder source), if present."""
    if source.startswith(HF_PREFIX):
        return None
    path = Path(source)
    folder = path if path.is_dir() else path.parent
    card = folder / DATA_CARD
    return card if card.is_file() else None


@data_app.command("export")
def export(
    source: Annotated[str, typer.Argument(help="References: JSONL, Parquet, a datasets folder, or hf:NAME[:SPLIT].")],
    hf: Annotated[Path, typer.Option("--hf", help="Write a Hugging Face data set folder here (Parquet + README).")],
    card: Annotated[
        Path | None,
        typer.Option(help=f"The data card (markdown, optional YAML front matter); default: {DATA_CARD} beside SOURCE."),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Pretty name in the card (default: the folder name).")] = None,
    license_id: Annotated[
        str | None, typer.Option("--license", help="Licence id for the card (e.g. apache-2.0); wins over the card's.")
    ] = None,
    default_split: Annotated[str, typer.Option(help="Split of references without a split field.")] = "test",
    shard_rows: Annotated[int, typer.Option(help="Rows per Parquet file at most.")] = 500_000,
    attach: Annotated[
        list[Path] | None, typer.Option("--attach", help="A file to copy beside the data (licence …); repeatable.")
    ] = None,
    partial: Annotated[bool, typer.Option("--partial", help="Accept partial references.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an earlier export in the folder.")] = False,
    encoding: EncodingOption = None,
    quiet: QuietOption = False,
) -> None:
    """Export references as a Hugging Face data set folder, ready to push: one Parquet file per
    split (by each record's split field) and a README.md dataset card — YAML front matter
    (licence, language, task, configs mapping splits to files, features) and the data card's
    text. The references must pass `verimod validate` (with --partial: as partial references).

    Example: [bold]verimod data export varm.jsonl --hf hub/varm --license apache-2.0[/bold]
    then [bold]huggingface-cli upload org/varm hub/varm --repo-type dataset[/bold]
    """
    from verimod.data.hf_export import export_hf
    from verimod.tasks.varm.io import load_references, reference_problems

    with bad_input_exits():
        count, problems = reference_problems(source, encoding, require_complete=not partial)
        if problems:
            first = problems[0]
            more = f" (and {len(problems) - 1} more problem(s); run verimod validate)" if len(problems) > 1 else ""
            raise InputError.at(first.path, first.line, first.field, first.message + more)
        references = load_references(source, encoding)
        chosen_card = card if card is not None else _card_beside(source)
        result = export_hf(
            references,
            hf,
            name=name or hf.resolve().name,
            card=chosen_card,
            license_id=license_id,
            default_split=default_split,
            shard_rows=shard_rows,
            attach=attach or (),
            overwrite=overwrite,
        )
    if not quiet:
        splits = ", ".join(f"{split} {n}" for split, n in result.splits.items())
        card_text = result.card_source or "a generated card (no data card given: complete it before publishing)"
        console.print(f"{count} references → {result.folder} ({splits}); card from {card_text}", highlight=False)
        console.print(f"check it with: verimod validate hf:{result.folder}", highlight=False)
