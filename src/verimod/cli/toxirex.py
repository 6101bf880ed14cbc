"""``verimod toxirex``: the ToxiREX protocol — sub-threads, prediction, evaluation, agreement."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from verimod.cli.backend_options import (
    ApiKeyEnv,
    BaseUrl,
    Concurrency,
    ContextSize,
    Device,
    NoCache,
    Retries,
    Threads,
    Timeout,
    Transport,
    backend_from_options,
    cpu_grammar_warning,
    run_with_backend,
)
from verimod.cli.common import EncodingOption, QuietOption, bad_input_exits, console, emit_json, err_console
from verimod.cli.toxirex_tables import kappa_table, print_evaluation
from verimod.core.errors import InputError, one_line
from verimod.models.base import GenerationParams

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
    timeout: Timeout = 120.0,
    retries: Retries = 6,
    threads: Threads = None,
    context_size: ContextSize = None,
    device: Device = None,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Ask a model for the toxic reasoning of every sub-thread (JSON-schema structured output where
    the backend supports it); resumable. Every comment gets one line: its reasoning or a failure
    class (invalid_json, schema_violation, stopping_violation, missing, request_failed).

    A gguf: model on the CPU decodes the schema's grammar slowly (a warning says so): give it a
    longer --timeout, or --device cuda, or serve it.

    Example: [bold]verimod toxirex predict subthreads.jsonl preds.jsonl -m openai:qwen --base-url http://localhost:8000/v1[/bold]
    or [bold]… -m gguf:model.gguf --threads 8 --context-size 8192 --timeout 1800 --retries 1[/bold]
    """
    from verimod.tasks.toxirex.predict import predict_subthreads
    from verimod.tasks.toxirex.subthread_files import load_subthreads

    with bad_input_exits():
        _choices("--language", language, ("en", "zh"))
        _choices("--absent", absent, ("not_toxic", "invalid"))
        subthread_list = load_subthreads(subthreads_path)
        transport = Transport(max_concurrency, timeout, retries, threads, context_size, device)
        engine = transport.engine()
        backend = backend_from_options(model, base_url, api_key_env, transport=transport)
    warning = cpu_grammar_warning(backend, timeout)
    if warning:
        err_console.print(warning, highlight=False, markup=False, soft_wrap=True)
    summary = run_with_backend(
        lambda cache: predict_subthreads(
            subthread_list, backend, out, raw_log=raw, language=cast(Any, language),
            params=GenerationParams(max_tokens=max_tokens), engine=engine,
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


@toxirex_app.command("evaluate")
def evaluate(
    annotations_path: Annotated[Path, typer.Argument(help="Annotations (JSONL; several annotators per comment).")],
    predictions_path: Annotated[Path, typer.Argument(help="Predictions (JSONL from `toxirex predict`).")],
    variables: Annotated[str | None, typer.Option(help="Classification variables, comma-separated.")] = None,
    settings: Annotated[
        str, typer.Option(help="propagated, conditional, optimistic, cond-tokens (comma-separated).")
    ] = "propagated,conditional,optimistic,cond-tokens",
    modes: Annotated[str, typer.Option(help="Annotation modes: all, random, max, majority (comma-separated).")] = "all",
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
    by: ByOption = None,
    json_out: JsonOut = None,
) -> None:
    """Score predictions against several annotations: weighted P/R/F1 beside the analytic Prior
    per variable, setting and annotation mode; Jaccard of token spans; summary-sentence accuracy;
    ordinal attitude errors. Unparseable or missing predictions are wrong, never dropped.
    --by lang adds the same numbers per language (the paper's Table 10).

    Example: [bold]verimod toxirex evaluate annotations.jsonl preds.jsonl --modes majority,random --by lang[/bold]
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
        groups = _groups(annotations, by, annotations_path)

        def run(chosen: Any) -> Any:
            return ev.evaluate(
                chosen, predictions, variables=chosen_variables, settings=cast(Any, chosen_settings),
                modes=cast(Any, chosen_modes), n_draws=draws, seed=seed, max_on=matched,
                token_threshold=token_threshold, token_unit=cast(Any, token_unit),
                attitudes_matched_only=not all_attitude_pairs,
            )  # fmt: skip

        report = run(annotations)
        by_group = {name: run(members) for name, members in groups.items()}
    payload = report.to_dict()
    if by is not None:
        payload |= {"by": by, "groups": {name: r.to_dict() for name, r in by_group.items()}}
    if json_out:
        emit_json(json_out, payload)
        if json_out == "-":
            return
    for name, shown_report in [("", report), *((f" · {by} = {g}", r) for g, r in by_group.items())]:
        print_evaluation(shown_report, chosen_modes, chosen_settings, name)


ByOption = Annotated[
    str | None, typer.Option("--by", help="Also report per group: lang (every annotation needs a lang).")
]


def _groups(annotations: Any, by: str | None, path: Path) -> dict[str, Any]:
    from verimod.tasks.toxirex.groups import GROUP_KEYS, group_annotations

    if by is None:
        return {}
    _choices("--by", by, GROUP_KEYS)
    return group_annotations(annotations, cast(Any, by), str(path))


@toxirex_app.command("agree")
def agree(
    annotations_path: Annotated[Path, typer.Argument(help="Annotations (JSONL; several annotators per comment).")],
    missing: Annotated[
        str,
        typer.Option(
            help="Which comments count: complete (every annotator reached the variable; our reading of the "
            "paper's Table 5) | pairable (two or more did) | category (not reached = a class)."
        ),
    ] = "complete",
    sheet: Annotated[
        Path | None, typer.Option(help="Write the disagreement sheet to categorise (.csv or .jsonl).")
    ] = None,
    counts: Annotated[Path | None, typer.Option(help="Count the categories of a filled-in disagreement sheet.")] = None,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the 95% CIs.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    by: ByOption = None,
    json_out: JsonOut = None,
) -> None:
    """Inter-annotator agreement: Fleiss' κ per variable (bootstrap 95% CI over comments), and the
    disagreement sheet (error / orthogonal / conditional / subjective / disjunct) with its counts.
    Resamples where κ is undefined (one category only) are counted, and an interval resting on
    fewer than all resamples is marked †. --by lang: κ per language too (the paper's Table 5).

    Example: [bold]verimod toxirex agree annotations.jsonl --sheet disagreements.csv --by lang[/bold]
    """
    from verimod.tasks.toxirex import agreement as ag
    from verimod.tasks.toxirex.io import load_annotations

    with bad_input_exits():
        _choices("--missing", missing, ("complete", "pairable", "category"))
        annotations = load_annotations(annotations_path)
        if bootstrap < 1:
            raise InputError.at("--bootstrap", None, None, f"must be at least 1, got {bootstrap}")
        groups = _groups(annotations, by, annotations_path)

        def kappas(chosen: Any) -> list[Any]:
            return ag.variable_agreement(chosen, missing=cast(Any, missing), n_resamples=bootstrap, seed=seed)

        rows = kappas(annotations)
        by_group = {name: kappas(members) for name, members in groups.items()}
        category_counts = None if counts is None else ag.disagreement_counts(ag.read_sheet(counts))
    template = ag.disagreement_rows(annotations) if sheet is not None else []
    if sheet is not None:
        ag.write_sheet(template, sheet)
    payload: dict[str, Any] = {
        "missing": missing,
        "kappa": [asdict(r) for r in rows],
        "sheet_rows": len(template) if sheet is not None else None,
        "categories": None if category_counts is None else category_counts.to_dict(),
    }
    if by is not None:
        payload |= {"by": by, "groups": {name: [asdict(r) for r in group] for name, group in by_group.items()}}
    if json_out:
        emit_json(json_out, _nan_to_none(payload))
        if json_out == "-":
            return
    console.print(kappa_table(rows, missing, bootstrap))
    for name, group in by_group.items():
        console.print(kappa_table(group, missing, bootstrap, f" · {by} = {name}"))
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
