"""``verimod train``: train models. ``train baseline`` trains the embedded baseline model."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from verimod.cli.common import EncodingOption, QuietOption, bad_input_exits, console, safe
from verimod.core.errors import InputError
from verimod.core.paths import cache_dir
from verimod.data.jsonl import write_json
from verimod.models.baseline.default import cache_key
from verimod.models.baseline.model import BaselineModel
from verimod.models.baseline.training import train_baseline, training_data_sha256
from verimod.report.tables import MAIN_METRICS, percent
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.io import load_references
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import VarmScores, score_predictions

train_app = typer.Typer(
    name="train",
    help="Train models: the embedded baseline; CoT-SFT (LoRA) of chat models, and merging its adapter.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)

#: Splits scored after training, when the file has them.
EVAL_SPLITS = ("dev", "test")


def select_split(references: list[VarmReference], split: str, path: Path) -> list[VarmReference]:
    """The records of ``split``; all records when the file has no ``split`` field at all."""
    if all(r.split is None for r in references):
        return references
    chosen = [r for r in references if r.split == split]
    if not chosen:
        present = ", ".join(sorted({r.split for r in references if r.split is not None}))
        raise InputError.at(str(path), None, "split", f"no records with split {split!r} (splits present: {present})")
    return chosen


def _score(model: BaselineModel, references: list[VarmReference]) -> VarmScores:
    predictions = model.predict([r.text for r in references])
    scores, _ = score_predictions(references, {r.id: p.rationale for r, p in zip(references, predictions, strict=True)})
    return scores


@train_app.command("baseline")
def baseline(
    data: Annotated[Path, typer.Option("--data", help="Reference JSONL (VARM records) to train on.")],
    split: Annotated[str, typer.Option(help="Split to train on (all records when the file has no splits).")] = "train",
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Model folder to write (default: the verimod cache, keyed by the data)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed (span-scorer sampling and cross-fitting folds).")] = 0,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the model folder and scores as JSON ('-' for stdout).")
    ] = None,
    encoding: EncodingOption = None,
    quiet: QuietOption = False,
) -> None:
    """Train the embedded baseline model (character n-gram classifiers, span extractor, rationale
    writer) and save it as JSON + .npz. Prints the model folder, and the scores on the file's
    dev and test splits when it has them. Use the model with the spec [bold]baseline:DIR[/bold].

    Example: [bold]verimod train baseline --data varm.jsonl --out models/baseline[/bold]
    """
    with bad_input_exits():
        references = load_references(data, encoding)
        train = select_split(references, split, data)
        partial = [r for r in train if not r.is_complete]
        if partial:
            missing = sorted(set(FIELDS) - set(partial[0].present_fields()))
            raise InputError.at(
                str(data),
                None,
                missing[0],
                f"the baseline trains on complete records; {len(partial)} are partial "
                f"(first: id {partial[0].id!r}, missing {', '.join(missing)})",
            )
        if out is not None and out.exists() and not out.is_dir():
            raise InputError.at(str(out), None, None, "--out must be a folder (a file of that name exists)")
    started = time.perf_counter()
    model = train_baseline(train, seed=seed)
    elapsed = time.perf_counter() - started
    folder = out if out is not None else cache_dir() / "baseline" / cache_key(training_data_sha256(train), seed)
    model.save(folder)
    scores = {
        name: _score(model, rows)
        for name in EVAL_SPLITS
        if name != split and (rows := [r for r in references if r.split == name])
    }
    report: dict[str, Any] = {
        "model_dir": str(folder),
        "spec": f"baseline:{folder}",
        "n_train": len(train),
        "data_sha256": model.data_sha256,
        "seed": seed,
        "train_seconds": round(elapsed, 3),
        "scores": {name: s.model_dump() for name, s in scores.items()},
    }
    if json_out == "-":
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    elif json_out is not None:
        write_json(json_out, report)
    if quiet or json_out == "-":
        return
    console.print(f"Trained on {len(train)} '{split}' records in {elapsed:.1f} s; model saved to ", end="")
    console.print(safe(str(folder), 1000))
    console.print("Use it with the model spec ", safe(f"baseline:{folder}", 1000))
    if scores:
        console.print(_scores_table(scores))


def _scores_table(scores: dict[str, VarmScores]) -> Table:
    """The main VARM metrics of each evaluated split, side by side (percent)."""
    table = Table(title="Baseline scores (%)", header_style="bold")
    table.add_column("metric")
    for name, s in scores.items():
        table.add_column(f"{name} (n = {s.n})", justify="right")
    for label, attribute in MAIN_METRICS:
        table.add_row(label, *(percent(getattr(s, attribute)) for s in scores.values()))
    return table


def register(app: typer.Typer) -> None:
    """Add the ``train`` command group (baseline, sft, merge) to the root application."""
    from verimod.cli import train_sft  # noqa: F401 - registers sft and merge

    app.add_typer(train_app, name="train", rich_help_panel="Models")
