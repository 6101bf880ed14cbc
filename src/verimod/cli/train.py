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
from verimod.models.baseline.leakage import LeakageIndex
from verimod.models.baseline.model import BaselineModel
from verimod.models.baseline.training import train_baseline, training_data_sha256
from verimod.report.tables import MAIN_METRICS, percent
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
    data: Annotated[
        list[Path] | None,
        typer.Option("--data", help="Reference JSONL (VARM records, complete or partial); repeat for several files."),
    ] = None,
    weight: Annotated[
        list[float] | None,
        typer.Option("--weight", help="Loss weight of each --data file, in the same order (default 1 each)."),
    ] = None,
    split: Annotated[str, typer.Option(help="Split to train on (all records of a file without splits).")] = "train",
    recipe: Annotated[
        str | None,
        typer.Option(help="A training recipe (JSON; 'default' = the default model's) instead of --data."),
    ] = None,
    data_root: Annotated[
        Path | None, typer.Option(help="Folder of the public data files a recipe's adapter sources name.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Model folder to write (default: the verimod cache, keyed by the data)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed (obfuscated copies, span-scorer sampling, folds).")] = 0,
    leakage: Annotated[
        str,
        typer.Option(
            help="What the model keeps of its training texts for eval's leakage warning: store (the texts) | "
            "hash (hashes and MinHash signatures only)."
        ),
    ] = "store",
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the model folder and scores as JSON ('-' for stdout).")
    ] = None,
    encoding: EncodingOption = None,
    quiet: QuietOption = False,
) -> None:
    """Train the embedded baseline model (character, word, pinyin and stance features, span extractor,
    rationale writer) and save it as JSON + .npz. Partial records train the fields they carry;
    prints how many records trained each field, the model folder, and the scores on the files'
    dev and test splits. Use the model with the spec [bold]baseline:DIR[/bold].

    Example: [bold]verimod train baseline --data varm.jsonl --data labels_only.jsonl --weight 1 --weight 0.5
    --out models/baseline[/bold]; the default model: [bold]verimod train baseline --recipe default
    --data-root ../shared/data --out src/verimod/resources/baseline/default[/bold]
    """
    with bad_input_exits():
        if (recipe is None) == (not data):
            raise InputError.at("--data", None, None, "give --data FILE (repeatable) or --recipe, not both")
        if leakage not in ("store", "hash"):
            raise InputError.at("--leakage", None, None, f"must be store or hash, got {leakage!r}")
        if out is not None and out.exists() and not out.is_dir():
            raise InputError.at(str(out), None, None, "--out must be a folder (a file of that name exists)")
        if recipe is not None:
            _train_recipe(recipe, data_root, out, json_out, quiet)
            return
        assert data is not None
        if weight and len(weight) != len(data):
            raise InputError.at("--weight", None, None, f"{len(weight)} weight(s) for {len(data)} --data file(s)")
        if any(w < 0 for w in weight or ()):
            raise InputError.at("--weight", None, None, "weights must not be negative")
        references: list[VarmReference] = []
        train: list[VarmReference] = []
        weights: list[float] = []
        for k, path in enumerate(data):
            rows = load_references(path, encoding)
            chosen = select_split(rows, split, path)
            references.extend(rows)
            train.extend(chosen)
            weights.extend([weight[k] if weight else 1.0] * len(chosen))
        if not any(r.label is not None for r in train):
            raise InputError.at(str(data[0]), None, "label", "no training record carries a label")
    index = LeakageIndex.build([r.text for r in train], []) if leakage == "store" else None
    if index is None:
        index = LeakageIndex.build([], [r.text for r in train])
    started = time.perf_counter()
    model = train_baseline(train, seed=seed, weights=weights, leakage=index)
    elapsed = time.perf_counter() - started
    sha = training_data_sha256(train, weights)
    folder = out if out is not None else cache_dir() / "baseline" / cache_key(sha, seed)
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
        "trained_on": model.summary.fields,
        "augmented": model.summary.augmented,
        "data_sha256": model.data_sha256,
        "seed": seed,
        "train_seconds": round(elapsed, 3),
        "scores": {name: s.model_dump() for name, s in scores.items()},
    }
    _emit(report, json_out)
    if quiet or json_out == "-":
        return
    console.print(f"Trained on {len(train)} '{split}' records in {elapsed:.1f} s; model saved to ", end="")
    console.print(safe(str(folder), 1000))
    console.print(_fields_table(model.summary.fields, model.summary.augmented))
    console.print("Use it with the model spec ", safe(f"baseline:{folder}", 1000))
    if scores:
        console.print(_scores_table(scores))


def _emit(report: dict[str, Any], json_out: str | None) -> None:
    if json_out == "-":
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    elif json_out is not None:
        write_json(json_out, report)


def _train_recipe(name: str, data_root: Path | None, out: Path | None, json_out: str | None, quiet: bool) -> None:
    """``--recipe``: resolve the recipe, train, write the model and its manifest."""
    from verimod.models.baseline.recipe import build_from_recipe, load_recipe, source_summary

    recipe, folder = load_recipe(name)
    target = out if out is not None else cache_dir() / "baseline" / f"recipe-{recipe.name}"
    model, manifest = build_from_recipe(recipe, folder, data_root, target)
    report = {"model_dir": str(target), "spec": f"baseline:{target}", **manifest}
    _emit(report, json_out)
    if quiet or json_out == "-":
        return
    console.print(
        f"Recipe {recipe.name!r}: {manifest['records']} records in {manifest['train_seconds']} s; model saved to ",
        end="",
        highlight=False,
    )
    console.print(safe(str(target), 1000))
    for line in source_summary(manifest["sources"]) + manifest["notes"]:
        console.print("  ", safe(line, 1000), highlight=False)
    console.print(_fields_table(model.summary.fields, model.summary.augmented))


def _fields_table(fields: dict[str, int], augmented: int) -> Table:
    """How many records trained each field."""
    table = Table(title="Records that trained each field", header_style="bold")
    table.add_column("field")
    table.add_column("records", justify="right")
    for name, count in fields.items():
        table.add_row(name, f"{count:,}")
    if augmented:
        table.caption = f"label and category also learned from {augmented:,} obfuscated copies"
    return table


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
