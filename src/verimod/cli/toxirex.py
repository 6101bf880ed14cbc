"""``verimod toxirex``: the ToxiREX protocol — sub-threads, prediction, evaluation, agreement."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.table import Table

from verimod.cli.backend_options import ApiKeyEnv, BaseUrl, Concurrency, NoCache, backend_from_options, run_with_backend
from verimod.cli.common import EncodingOption, QuietOption, bad_input_exits, console, emit_json, err_console
from verimod.core.engine import EngineConfig
from verimod.core.errors import InputError, one_line
from verimod.models.base import GenerationParams
from verimod.report.tables import percent

toxirex_app = typer.Typer(help="ToxiREX: toxic reasoning in conversational context.", no_args_is_help=True)

JsonOut = Annotated[str | None, typer.Option("--json", help="Write every number as JSON ('-': stdout).")]


def _choices(option: str, given: str, allowed: tuple[str, ...]) -> list[str]:
    chosen = [part.strip() for part in given.split(",") if part.strip()]
    wrong = [c for c in chosen if c not in allowed]
    if wrong or not chosen:
        raise InputError.at(option, None, None, f"choose from {', '.join(allowed)}; got {given!r}")
    return chosen


@toxirex_app.command("subthreads")
def subthreads(
    comments: Annotated[Path, typer.Argument(help="Comments (and posts) with id / parent_id / link_id (JSON, JSONL).")],
    out: Annotated[Path, typer.Argument(help="Sub-threads (JSONL, one self-contained line each).")],
    posts: Annotated[Path | None, typer.Option(help="Posts in a separate file.")] = None,
    ideal_length: Annotated[int, typer.Option(help="The length L the score |L − ideal| + B aims at.")] = 5,
    min_length: Annotated[int, typer.Option(help="Candidates shorter than this are dropped.")] = 3,
    on_error: Annotated[
        str, typer.Option(help="fail: stop at the first bad record; skip: leave it out and list it.")
    ] = "fail",
    uncovered: Annotated[Path | None, typer.Option(help="Write the ids of comments in no sub-thread here.")] = None,
    encoding: EncodingOption = None,
    quiet: QuietOption = False,
) -> None:
    """Extract sub-threads from comment trees: every leaf's ancestry is a candidate, those shorter
    than --min-length are dropped, and the candidate with the lowest |L − ideal| + B (B: its
    branching comments) is confirmed first, until none remain.

    Example: [bold]verimod toxirex subthreads reddit_comments.jsonl subthreads.jsonl --posts posts.jsonl[/bold]
    """
    from verimod.tasks.toxirex.subthread_files import write_subthreads
    from verimod.tasks.toxirex.subthreads import extract_subthreads
    from verimod.tasks.toxirex.threads import read_threads

    with bad_input_exits():
        if on_error not in ("fail", "skip"):
            raise InputError.at("--on-error", None, None, f"choose fail or skip, got {on_error!r}")
        forest = read_threads(comments, posts, encoding=encoding, on_error=cast(Any, on_error))
        try:
            extraction = extract_subthreads(forest, ideal_length=ideal_length, min_length=min_length)
        except ValueError as exc:
            raise InputError.at("--min-length", None, None, str(exc)) from None
    write_subthreads(out, extraction.subthreads)
    if uncovered is not None:
        uncovered.write_text("".join(f"{c}\n" for c in extraction.uncovered), encoding="utf-8")
    for problem in forest.problems:
        err_console.print(f"skipped ({problem.kind}): {one_line(str(problem), 1000)}", highlight=False, soft_wrap=True)
    if not quiet:
        counts = extraction.counts()
        console.print(
            f"{len(forest.trees)} posts, {forest.n_comments} comments → {counts['subthreads']} sub-threads "
            f"({counts['comments']} comments; {counts['uncovered']} in none; {len(forest.problems)} records skipped)"
            f" → {out}",
            highlight=False,
            soft_wrap=True,
        )


@toxirex_app.command("predict")
def predict(
    subthreads_path: Annotated[Path, typer.Argument(help="Sub-threads (JSONL from `toxirex subthreads`).")],
    out: Annotated[Path, typer.Argument(help="Predictions (JSONL, one line per comment; rebuilt each run).")],
    model: Annotated[str, typer.Option("--model", "-m", help="Model spec (openai:…, gguf:…, scripted:…).")],
    raw: Annotated[Path | None, typer.Option(help="Raw outputs log (default: OUT.raw.jsonl).")] = None,
    language: Annotated[str, typer.Option(help="Prompt and rendering language: en | zh.")] = "en",
    absent: Annotated[
        str, typer.Option(help="A comment without an entry: not_toxic (the paper's reading) | invalid.")
    ] = "not_toxic",
    allow_unreached: Annotated[
        bool, typer.Option("--allow-unreached", help="Accept fields filled beyond a stop (for the optimistic setting).")
    ] = False,
    max_tokens: Annotated[int, typer.Option(help="Maximum new tokens per sub-thread.")] = 2048,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: Concurrency = 16,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Ask a model for the toxic reasoning of every sub-thread (JSON-schema structured output where
    the backend supports it); resumable. Every comment gets one line: its reasoning or a failure
    class (invalid_json, schema_violation, stopping_violation, missing, request_failed).

    Example: [bold]verimod toxirex predict subthreads.jsonl preds.jsonl -m openai:qwen --base-url http://localhost:8000/v1[/bold]
    """
    from verimod.tasks.toxirex.predict import predict_subthreads
    from verimod.tasks.toxirex.subthread_files import load_subthreads

    with bad_input_exits():
        _choices("--language", language, ("en", "zh"))
        _choices("--absent", absent, ("not_toxic", "invalid"))
        threads = load_subthreads(subthreads_path)
        backend = backend_from_options(model, base_url, api_key_env)
    summary = run_with_backend(
        lambda cache: predict_subthreads(
            threads, backend, out, raw_log=raw, language=cast(Any, language),
            params=GenerationParams(max_tokens=max_tokens), engine=EngineConfig(max_concurrency=max_concurrency),
            cache=cache, absent=cast(Any, absent), allow_unreached=allow_unreached,
        ),
        backend, not no_cache,
    )  # fmt: skip
    if not quiet:
        stats = summary.stats
        console.print(
            f"{summary.n_threads} sub-threads ({stats.done} asked, {stats.errors} failed, {stats.cache_hits} cached)"
            f" → {summary.n_comments} comment predictions {json.dumps(summary.outcomes)} → {out}",
            highlight=False,
            soft_wrap=True,
        )


def _scores_table(report: Any, mode: str, settings: list[str]) -> Table:
    table = Table(
        title=f"weighted precision / recall / F1 beside the Prior (%), annotation mode {mode}",
        caption="invalid: unparseable or missing predictions among the n items (scored wrong)",
    )
    for column in ("variable", "setting", "n", "invalid", "P", "R", "F1", "Prior"):
        table.add_column(column, justify="left" if column in ("variable", "setting") else "right")
    for variable in dict.fromkeys(r.variable for r in report.scores):
        for k, setting in enumerate(settings):
            r = report.score(variable, setting, mode)
            table.add_row(
                variable if k == 0 else "", setting, _count(r.n), _count(r.n_invalid), percent(r.precision, 1),
                percent(r.recall, 1), percent(r.f1, 1), percent(r.prior, 1), end_section=k == len(settings) - 1,
            )  # fmt: skip
    return table


def _count(value: float) -> str:
    return "0" if math.isnan(value) else f"{value:g}"


def _jaccard_table(report: Any) -> Table:
    table = Table(title="token spans: mean Jaccard (%)")
    for column in ("variable", "mode", "n", "Jaccard", "both empty"):
        table.add_column(column, justify="left" if column in ("variable", "mode") else "right")
    for row in report.jaccard:
        table.add_row(row.variable, row.mode, f"{row.n:g}", percent(row.mean, 1), f"{row.n_both_empty:g}")
    return table


def _attitude_table(report: Any) -> Table:
    table = Table(title="attitudes: ordinal errors (pairs off by 0 / 1 / 2 / 3+ steps; Not applicable apart)")
    for column in ("attitude", "0", "1", "2", "3+", "NA both", "NA mismatch", "n"):
        table.add_column(column, justify="left" if column == "attitude" else "right")
    for name, t in report.attitudes.items():
        table.add_row(name, *(str(v) for v in t.steps.values()), str(t.na_both), str(t.na_mismatch), str(t.n))
    return table


@toxirex_app.command("evaluate")
def evaluate(
    annotations_path: Annotated[Path, typer.Argument(help="Annotations (JSONL; several annotators per comment).")],
    predictions_path: Annotated[Path, typer.Argument(help="Predictions (JSONL from `toxirex predict`).")],
    variables: Annotated[str | None, typer.Option(help="Classification variables, comma-separated.")] = None,
    settings: Annotated[
        str, typer.Option(help="propagated, conditional, optimistic, cond-tokens (comma-separated).")
    ] = "propagated,conditional,optimistic,cond-tokens",
    modes: Annotated[str, typer.Option(help="Annotation modes: all, random, max (comma-separated).")] = "all",
    draws: Annotated[int, typer.Option(help="Draws of the random mode (the median is reported).")] = 100,
    seed: Annotated[int, typer.Option(help="Seed of the random mode.")] = 0,
    max_on: Annotated[str | None, typer.Option(help="Variables the max mode matches on (comma-separated).")] = None,
    token_threshold: Annotated[float, typer.Option(help="Jaccard the cond-tokens setting requires.")] = 0.5,
    token_unit: Annotated[str, typer.Option(help="token | char (Chinese spans: char).")] = "token",
    all_attitude_pairs: Annotated[
        bool, typer.Option("--all-attitude-pairs", help="Attitude errors over every pair, not only matched summaries.")
    ] = False,
    allow_unreached: Annotated[
        bool, typer.Option("--allow-unreached", help="Accept predictions that fill fields beyond a stop.")
    ] = False,
    json_out: JsonOut = None,
) -> None:
    """Score predictions against several annotations: weighted P/R/F1 beside the analytic Prior
    per variable, setting and annotation mode; Jaccard of token spans; summary-sentence accuracy;
    ordinal attitude errors. Unparseable or missing predictions are wrong, never dropped.

    Example: [bold]verimod toxirex evaluate annotations.jsonl preds.jsonl --modes all,random,max[/bold]
    """
    from verimod.tasks.toxirex import evaluation as ev
    from verimod.tasks.toxirex.evaluation_items import DEFAULT_MAX_ON, MODES, SETTINGS
    from verimod.tasks.toxirex.io import load_annotations, load_predictions
    from verimod.tasks.toxirex.stopping import VARIABLE_BY_NAME

    with bad_input_exits():
        chosen_settings = _choices("--settings", settings, SETTINGS)
        chosen_modes = _choices("--modes", modes, MODES)
        known = ev.CLASSIFICATION_VARIABLES
        chosen_variables = None if variables is None else _choices("--variables", variables, known)
        matched = DEFAULT_MAX_ON if max_on is None else _choices("--max-on", max_on, tuple(VARIABLE_BY_NAME))
        _choices("--token-unit", token_unit, ("token", "char"))
        if draws < 1:
            raise InputError.at("--draws", None, None, f"must be at least 1, got {draws}")
        annotations = load_annotations(annotations_path)
        predictions = load_predictions(predictions_path, allow_unreached=allow_unreached)
        report = ev.evaluate(
            annotations, predictions, variables=chosen_variables, settings=cast(Any, chosen_settings),
            modes=cast(Any, chosen_modes), n_draws=draws, seed=seed, max_on=matched, token_threshold=token_threshold,
            token_unit=cast(Any, token_unit), attitudes_matched_only=not all_attitude_pairs,
        )  # fmt: skip
    if json_out == "-":
        emit_json("-", report.to_dict())
        return
    if json_out:
        emit_json(json_out, report.to_dict())
    console.print(
        f"{report.n_comments} comments, {report.n_annotations} annotations; {report.n_missing} without a prediction, "
        f"{report.n_invalid} invalid (scored wrong)",
        highlight=False,
        soft_wrap=True,
    )
    for mode in chosen_modes:
        console.print(_scores_table(report, mode, chosen_settings))
    console.print(_jaccard_table(report))
    summary = report.summary
    console.print(
        f"summary sentences (n = {summary.n}): {json.dumps(summary.counts)}; small differences by slot: "
        f"{json.dumps(summary.small_difference_slots)}",
        highlight=False,
        soft_wrap=True,
    )
    console.print(_attitude_table(report))


@toxirex_app.command("agree")
def agree(
    annotations_path: Annotated[Path, typer.Argument(help="Annotations (JSONL; several annotators per comment).")],
    missing: Annotated[
        str, typer.Option(help="complete (every annotator reached it) | pairable | category (not reached = a class).")
    ] = "complete",
    sheet: Annotated[
        Path | None, typer.Option(help="Write the disagreement sheet to categorise (.csv or .jsonl).")
    ] = None,
    counts: Annotated[Path | None, typer.Option(help="Count the categories of a filled-in disagreement sheet.")] = None,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the 95% CIs.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    json_out: JsonOut = None,
) -> None:
    """Inter-annotator agreement: Fleiss' κ per variable (bootstrap 95% CI over comments), and the
    disagreement sheet (error / orthogonal / conditional / subjective / disjunct) with its counts.

    Example: [bold]verimod toxirex agree annotations.jsonl --sheet disagreements.csv[/bold]
    """
    from verimod.tasks.toxirex import agreement as ag
    from verimod.tasks.toxirex.io import load_annotations

    with bad_input_exits():
        _choices("--missing", missing, ("complete", "pairable", "category"))
        annotations = load_annotations(annotations_path)
        rows = ag.variable_agreement(annotations, missing=cast(Any, missing), n_resamples=bootstrap, seed=seed)
        category_counts = None if counts is None else ag.disagreement_counts(ag.read_sheet(counts))
    template = ag.disagreement_rows(annotations) if sheet is not None else []
    if sheet is not None:
        ag.write_sheet(template, sheet)
    payload = {
        "kappa": [asdict(r) for r in rows],
        "sheet_rows": len(template) if sheet is not None else None,
        "categories": None if category_counts is None else category_counts.to_dict(),
    }
    if json_out:
        emit_json(json_out, _nan_to_none(payload))
        if json_out == "-":
            return
    table = Table(title=f"Fleiss' κ per variable (missing = {missing})")
    for column in ("variable", "comments", "κ", "95% CI"):
        table.add_column(column, justify="left" if column == "variable" else "right")
    for r in rows:
        interval = "n/a" if math.isnan(r.low) else f"{r.low:.3f}–{r.high:.3f}"
        table.add_row(r.variable, str(r.n_items), "n/a" if math.isnan(r.kappa) else f"{r.kappa:.3f}", interval)
    console.print(table)
    if sheet is not None:
        console.print(f"{len(template)} disagreements to categorise → {sheet}", highlight=False, soft_wrap=True)
    if category_counts is not None:
        console.print(f"categories: {json.dumps(category_counts.to_dict()['total'])}", highlight=False)


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value


@toxirex_app.command("schema")
def schema(
    scope: Annotated[str, typer.Option(help="thread (what predict asks for) | comment.")] = "thread",
) -> None:
    """Print the toxic reasoning JSON Schema used for structured outputs.

    Example: [bold]verimod toxirex schema --scope comment[/bold]
    """
    from verimod.tasks.toxirex.schema import toxic_reasoning_json_schema

    with bad_input_exits():
        _choices("--scope", scope, ("thread", "comment"))
    sys.stdout.write(json.dumps(toxic_reasoning_json_schema(cast(Any, scope)), ensure_ascii=False, indent=2) + "\n")


def register(app: typer.Typer) -> None:
    """Add the ``toxirex`` group to the root application."""
    app.add_typer(toxirex_app, name="toxirex", rich_help_panel="Protocols")
