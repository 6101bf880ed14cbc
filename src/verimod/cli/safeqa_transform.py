"""``verimod safeqa transform``: the 21 adversarial transformations of seed queries, with model
rewrites validated through the engine and every skipped method or seed reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from verimod.cli.backend_options import ApiKeyEnv, BaseUrl, Concurrency, NoCache, backend_from_options, run_with_backend
from verimod.cli.common import QuietOption, bad_input_exits, console
from verimod.cli.progress import RunProgress
from verimod.core.engine import EngineConfig, Outcome
from verimod.core.errors import InputError
from verimod.core.registry import UnknownNameError
from verimod.tasks.safeqa import io


def _progress_callback(progress: RunProgress) -> Any:
    def advance(outcome: Outcome) -> None:
        if "#" not in outcome.request.sample_id and "/" not in outcome.request.sample_id:
            progress.advance(outcome)

    return advance


def _print_methods(summary: list[dict[str, Any]], seeds: list[Any]) -> None:
    table = Table(title="transformations (per method)")
    for column in ("method", "made", "skipped (why)", "rejected", "risk hit", "missed"):
        left = column in ("method", "skipped (why)")
        table.add_column(
            column, justify="left" if left else "right", overflow="fold", min_width=19 if column == "method" else None
        )
    for row in summary:
        skipped = "; ".join(f"{n} {kind}" for kind, n in row["skipped"].items()).replace("-", "\u2011")
        if row["not_run"]:
            skipped = f"not run: {row['not_run']}"
        coverage = "" if row["risk_coverage"] is None else f"{100 * row['risk_coverage']:.1f} %"
        missed = "" if row["risk_terms_missed"] is None else str(row["risk_terms_missed"])
        table.add_row(row["method"], str(row["made"]), skipped, str(row["rejected_attempts"]), coverage, missed)
    console.print(table)
    if any("declarative-only" in row["skipped"] for row in summary):
        from verimod.tasks.safeqa.transforms.declarative import needs_twin

        lacking = len(needs_twin(seeds))
        questions = sum(q.form == "question" for q in seeds)
        note = (
            f"{lacking} of them have no declarative twin: add twins with 'safeqa import --declarative' or "
            "--declarative-model"
            if lacking
            else "each has a declarative twin, which the declarative-only methods transform instead"
        )
        console.print(
            f"  declarative-only methods skip the {questions} question-form seeds; {note}",
            highlight=False,
            soft_wrap=True,
        )


def transform_command(
    seeds: Annotated[Path | None, typer.Argument(help="Seed queries (JSONL).")] = None,
    out: Annotated[Path | None, typer.Argument(help="Output: seeds and adversarial queries (JSONL).")] = None,
    methods: Annotated[str, typer.Option(help="Comma-separated transformation names, or all.")] = "all",
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    model: Annotated[str | None, typer.Option("--model", help="Backend of the llm-rewrite methods.")] = None,
    checker: Annotated[
        str | None, typer.Option("--checker", help="Backend of the meaning check (default: --model).")
    ] = None,
    meaning: Annotated[str, typer.Option(help="Meaning check of rewrites: none | back-translation | nli.")] = "none",
    max_attempts: Annotated[int, typer.Option(help="Attempts per rewrite before it is skipped.")] = 3,
    declarative_model: Annotated[
        str | None,
        typer.Option("--declarative-model", help="Backend that writes declarative twins of question seeds first."),
    ] = None,
    rejected: Annotated[
        Path | None, typer.Option(help="Write every rejected rewrite (with its reason) here (JSONL).")
    ] = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: Concurrency = 16,
    no_cache: NoCache = False,
    summary_json: Annotated[Path | None, typer.Option(help="Write the per-method summary as JSON.")] = None,
    quiet: QuietOption = False,
    list_methods: Annotated[bool, typer.Option("--list", help="List the transformations.")] = False,
) -> None:
    """Adversarial transformations of seed queries (21 mechanisms: encodings, character and
    script perturbations, acrostics, templates, LLM rewrites); deterministic per seed. Model
    rewrites go through the engine (cache, retries, progress) and are validated (refusal,
    identity, language, form, length; meaning by back-translation or NLI with --meaning);
    rejected ones are asked again up to --max-attempts times and kept with their reason. Every
    method or seed that is skipped is printed with the reason.

    Example: [bold]verimod safeqa transform sq/queries.jsonl sq/all.jsonl --model openai:qwen
    --meaning back-translation --rejected sq/rejected.jsonl[/bold]
    """
    from verimod.tasks.safeqa.transforms import MeaningConfig, RewriteConfig, transform_all
    from verimod.tasks.safeqa.transforms import list_methods as catalogue

    if list_methods:
        _print_catalogue(catalogue())
        return
    with bad_input_exits():
        if seeds is None or out is None:
            raise InputError.at("transform", None, None, "give SEEDS and OUT (or --list)")
        queries = io.load_queries(seeds)
        names = (
            [m.name for m in catalogue()] if methods == "all" else [m.strip() for m in methods.split(",") if m.strip()]
        )
        try:
            config = RewriteConfig(max_attempts=max_attempts, meaning=MeaningConfig(mode=meaning))  # type: ignore[arg-type]
        except ValueError as exc:
            raise InputError.at("--meaning/--max-attempts", None, None, str(exc).splitlines()[-1]) from None
        llm = [m.name for m in catalogue() if m.channel == "llm-rewrite" and m.name in names]
        if llm and model is None and methods != "all":
            raise InputError.at("--model", None, None, f"{', '.join(llm)} rewrite with a model: give --model")
        backend = None if model is None else backend_from_options(model, base_url, api_key_env)
        check = None if checker is None else backend_from_options(checker, base_url, api_key_env, "--checker")
        writer = None if declarative_model is None else backend_from_options(
            declarative_model, base_url, api_key_env, "--declarative-model"
        )  # fmt: skip
        if meaning != "none" and check is None and backend is None and writer is None:
            raise InputError.at("--meaning", None, None, "the meaning check needs a model: give --checker or --model")
    opened = [b for b in (backend, check, writer) if b is not None]
    rejections: list[Any] = []

    async def run(cache: Any) -> Any:
        nonlocal queries
        engine = EngineConfig(max_concurrency=max_concurrency)
        if writer is not None:
            queries = queries + await _declarative_stage(
                queries, writer, check, config, engine, cache, seed, rejections, quiet
            )
        from verimod.tasks.safeqa.transforms import atransform_all

        rewrite_total = sum(1 for q in queries for name in llm if _applies(name, q)) if backend is not None else 0
        with RunProgress(rewrite_total, "rewrites", quiet or not rewrite_total) as progress:
            return await atransform_all(
                queries, names, seed, backend, without_backend="skip", config=config, checker=check,
                engine=engine, cache=cache, on_outcome=_progress_callback(progress),
            )  # fmt: skip

    with bad_input_exits():
        try:
            if opened:
                result = run_with_backend(run, opened, not no_cache)
            else:
                result = transform_all(queries, names, seed=seed, without_backend="skip")
        except UnknownNameError as exc:
            raise InputError.at("--methods", None, None, str(exc)) from None
    rejections += result.rejected
    io.write_models(out, [*queries, *result])
    summary = result.method_summary(names)
    if rejected is not None:
        from verimod.data.jsonl import write_jsonl

        write_jsonl(rejected, (r.to_dict() for r in rejections))
    if summary_json is not None:
        summary_json.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if quiet:
        return
    base_seeds = [q for q in queries if q.method is None]
    console.print(
        f"{len(result)} adversarial queries from {len(base_seeds)} seeds written to {out}"
        f" ({len(rejections)} rejected rewrite attempts{f' → {rejected}' if rejected else ''})",
        highlight=False,
        soft_wrap=True,
    )
    for name, reason in result.methods_not_run.items():
        console.print(f"  skipped method {name}: {reason}", highlight=False, soft_wrap=True)
    _print_methods(summary, base_seeds)


def _applies(method: str, query: Any) -> bool:
    from verimod.tasks.safeqa.transforms import get_method

    return query.method is None and (query.form == "declarative" or not get_method(method).declarative_only)


async def _declarative_stage(
    queries: list[Any], writer: Any, check: Any, config: Any, engine: EngineConfig, cache: Any, seed: int,
    rejections: list[Any], quiet: bool,
) -> list[Any]:  # fmt: skip
    """Model-written declarative twins of the question seeds (validated; rejected ones recorded)."""
    from verimod.tasks.safeqa.transforms import run_rewrites
    from verimod.tasks.safeqa.transforms.declarative import declarative_tasks, twin
    from verimod.tasks.safeqa.transforms.rewriting import rewrite_meta

    tasks = declarative_tasks(queries, seed)
    with RunProgress(len(tasks), "declarative twins", quiet or not tasks) as progress:
        results = await run_rewrites(
            [task for _q, task in tasks], writer, config=config, checker=check, engine=engine, cache=cache,
            on_outcome=_progress_callback(progress),
        )  # fmt: skip
    twins = []
    for (query, _task), result in zip(tasks, results, strict=True):
        rejections.extend(result.rejections)
        if result.accepted:
            provenance = {"channel": "llm-rewrite", **rewrite_meta(result, writer.spec, config.meaning.mode)}
            twins.append(twin(query, str(result.text), provenance))
    if not quiet:
        made = f"{len(twins)} declarative twins written by {writer.spec} ({len(tasks) - len(twins)} rejected)"
        console.print(made, highlight=False, soft_wrap=True)
    return twins


def _print_catalogue(methods: list[Any]) -> None:
    table = Table(title="C-SafeQA transformations")
    for column in ("name", "channel", "family", "diagnostic target", "declarative only"):
        table.add_column(column)
    for method in methods:
        table.add_row(
            method.name, method.channel, method.family, method.target, "yes" if method.declarative_only else ""
        )
    console.print(table)
