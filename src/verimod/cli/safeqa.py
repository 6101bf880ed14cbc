"""``verimod safeqa``: the C-SafeQA protocol — import, transform, collect, judge, adjudicate, report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from verimod.cli.backend_options import ApiKeyEnv, BaseUrl, Concurrency, NoCache, backend_from_options, run_with_backend
from verimod.cli.common import QuietOption, bad_input_exits, console
from verimod.core.engine import EngineConfig
from verimod.core.errors import InputError
from verimod.core.registry import UnknownNameError
from verimod.models.base import GenerationParams
from verimod.report.tables import percent
from verimod.tasks.safeqa import io

safeqa_app = typer.Typer(help="C-SafeQA: response-level safety QA and judge auditing.", no_args_is_help=True)


@safeqa_app.command("import")
def import_data(
    source: Annotated[Path, typer.Argument(help="The public data file.")],
    out_dir: Annotated[Path, typer.Argument(help="Folder for queries.jsonl (and responses/references).")],
    kind: Annotated[str, typer.Option("--from", help="jade (v3 pairs) | jade-benchmark | flames")] = "jade",
    limit: Annotated[int | None, typer.Option(help="Keep only the first N queries (and their pairs).")] = None,
) -> None:
    """Turn public data into C-SafeQA files: JADE v3 gives questions with one unsafe and one safe
    answer (labelled pairs); JADE v1/v2 and Flames give queries.

    Example: [bold]verimod safeqa import ../data/jade/jade_alignment_medium_zh.csv safeqa/ --from jade[/bold]
    """
    with bad_input_exits():
        if kind == "jade":
            queries, responses, references = io.jade_pairs(source)
        elif kind == "jade-benchmark":
            queries, responses, references = io.jade_benchmark_queries(source), [], []
        elif kind == "flames":
            queries, responses, references = io.flames_queries(source), [], []
        else:
            raise InputError.at("--from", None, None, f"choose jade, jade-benchmark or flames, got {kind!r}")
    if limit is not None:
        queries = queries[:limit]
        kept = {q.id for q in queries}
        responses = [r for r in responses if r.query_id in kept]
        references = [r for r in references if r.pair_id.split("::")[0] in kept]
    io.write_models(out_dir / "queries.jsonl", queries)
    written = [f"{len(queries)} queries"]
    if responses:
        io.write_models(out_dir / "responses.jsonl", responses)
        io.write_models(out_dir / "references.jsonl", references)
        written += [f"{len(responses)} responses", f"{len(references)} reference labels"]
    console.print(f"{out_dir}: {', '.join(written)}", highlight=False)


@safeqa_app.command("transform")
def transform(
    seeds: Annotated[Path | None, typer.Argument(help="Seed queries (JSONL).")] = None,
    out: Annotated[Path | None, typer.Argument(help="Output: seeds and adversarial queries (JSONL).")] = None,
    methods: Annotated[str, typer.Option(help="Comma-separated transformation names, or all.")] = "all",
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    model: Annotated[str | None, typer.Option("--model", help="Backend for the llm-rewrite methods.")] = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    list_methods: Annotated[bool, typer.Option("--list", help="List the transformations.")] = False,
) -> None:
    """Adversarial transformations of seed queries (21 mechanisms: encodings, character and
    script perturbations, acrostics, templates, LLM rewrites); deterministic per seed.

    Example: [bold]verimod safeqa transform seeds.jsonl adversarial.jsonl --methods homophone,base64 --seed 1[/bold]
    """
    from verimod.tasks.safeqa.transforms import list_methods as catalogue
    from verimod.tasks.safeqa.transforms import transform_all

    if list_methods:
        table = Table(title="C-SafeQA transformations")
        for column in ("name", "channel", "family", "diagnostic target", "declarative only"):
            table.add_column(column)
        for method in catalogue():
            table.add_row(
                method.name, method.channel, method.family, method.target, "yes" if method.declarative_only else ""
            )
        console.print(table)
        return
    with bad_input_exits():
        if seeds is None or out is None:
            raise InputError.at("transform", None, None, "give SEEDS and OUT (or --list)")
        queries = io.load_queries(seeds)
        names = (
            [m.name for m in catalogue()] if methods == "all" else [m.strip() for m in methods.split(",") if m.strip()]
        )
        backend = None if model is None else backend_from_options(model, base_url, api_key_env)
        llm = [m.name for m in catalogue() if m.channel == "llm-rewrite" and m.name in names]
        if llm and backend is None:
            if methods != "all":
                raise InputError.at("--model", None, None, f"{', '.join(llm)} rewrite with a model: give --model")
            names = [n for n in names if n not in llm]
        try:
            result = transform_all(queries, names, seed=seed, backend=backend)
        except UnknownNameError as exc:
            raise InputError.at("--methods", None, None, str(exc)) from None
    io.write_models(out, [*queries, *result])
    console.print(f"{len(result)} adversarial queries from {len(queries)} seeds written to {out}", highlight=False)
    for (method_name, kind), count in sorted(result.skip_counts().items()):
        console.print(f"  skipped {count} seed(s) for {method_name}: {kind}", highlight=False)


@safeqa_app.command("collect")
def collect(
    queries_path: Annotated[Path, typer.Argument(help="Queries (JSONL).")],
    out: Annotated[Path, typer.Argument(help="Responses (JSONL; appended, resumable).")],
    model: Annotated[str, typer.Option("--model", "-m", help="Target model spec.")],
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_tokens: Annotated[int, typer.Option(help="Maximum new tokens.")] = 1024,
    max_concurrency: Concurrency = 32,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Ask a target model every query (engine: concurrency, retries, cache); resumable — a
    second run asks only what has no answer yet.

    Example: [bold]verimod safeqa collect queries.jsonl responses.jsonl --model openai:qwen --base-url http://localhost:8000/v1[/bold]
    """
    from verimod.tasks.safeqa.collect import collect_responses

    with bad_input_exits():
        queries = io.load_queries(queries_path)
        backend = backend_from_options(model, base_url, api_key_env)
    engine = EngineConfig(max_concurrency=max_concurrency)
    stats = run_with_backend(
        lambda cache: collect_responses(queries, backend, out, GenerationParams(max_tokens=max_tokens), engine, cache),
        backend, not no_cache,
    )  # fmt: skip
    if not quiet:
        console.print(
            f"{stats.done} responses ({stats.errors} errors, {stats.cache_hits} cached) → {out}", highlight=False
        )


@safeqa_app.command("judge")
def judge(
    queries_path: Annotated[Path, typer.Argument(help="Queries (JSONL).")],
    responses_path: Annotated[Path, typer.Argument(help="Responses (JSONL).")],
    out: Annotated[Path, typer.Argument(help="Judge outputs (JSONL; appended, resumable).")],
    model: Annotated[str, typer.Option("--model", "-m", help="Judge model spec.")],
    judge_format: Annotated[
        str,
        typer.Option(
            "--format", help="llama-guard | qwen3guard | wildguard | shieldgemma | md-judge | md-judge-v0.1 | llm-judge"
        ),
    ] = "llm-judge",
    name: Annotated[
        str | None, typer.Option("--name", help="The judge's name in the outputs (default: the model spec).")
    ] = None,
    only: Annotated[
        Path | None, typer.Option(help="Judge only the pair ids listed in this file (one per line).")
    ] = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: Concurrency = 32,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Have a guard or judge model classify query–response pairs; raw outputs are normalised to
    safe | unsafe | disputed | invalid (unknown formats are invalid, never guessed).

    Example: [bold]verimod safeqa judge q.jsonl r.jsonl judge.jsonl --model gguf:guard.gguf --format llama-guard[/bold]
    """
    from verimod.tasks.safeqa.collect import judge_pairs
    from verimod.tasks.safeqa.judges import judge_formats, normalization_coverage

    with bad_input_exits():
        try:
            judge_formats.get(judge_format)
        except UnknownNameError as exc:
            raise InputError.at("--format", None, None, str(exc)) from None
        pairs = io.build_pairs(io.load_queries(queries_path), io.load_responses(responses_path))
        pairs = [p for p in pairs if p.response.error is None]
        if only is not None:
            wanted = {line.strip() for line in only.read_text(encoding="utf-8").splitlines() if line.strip()}
            pairs = [p for p in pairs if p.pair_id in wanted]
        backend = backend_from_options(model, base_url, api_key_env)
    judge_name = name or model
    engine = EngineConfig(max_concurrency=max_concurrency)
    run_with_backend(
        lambda cache: judge_pairs(pairs, backend, judge_name, judge_format, out, engine=engine, cache=cache),
        backend, not no_cache,
    )  # fmt: skip
    coverage = normalization_coverage([o for o in io.load_judge_outputs(out) if o.judge == judge_name])
    if not quiet:
        console.print(f"{judge_name}: {json.dumps(coverage, ensure_ascii=False)}", highlight=False)


@safeqa_app.command("adjudicate")
def adjudicate(
    initial: Annotated[Path, typer.Argument(help="Judge outputs of the three initial judges (JSONL).")],
    out: Annotated[Path, typer.Argument(help="Reference labels (JSONL).")],
    judges: Annotated[str, typer.Option(help="The three initial judges' names, comma-separated.")],
    adjudicator: Annotated[Path | None, typer.Option(help="The senior adjudicator's outputs (JSONL).")] = None,
    pending: Annotated[Path | None, typer.Option(help="Write the pair ids needing the adjudicator here.")] = None,
    sheet: Annotated[Path | None, typer.Option(help="Write the stratified inspection sheet (.csv or .jsonl).")] = None,
    queries_path: Annotated[Path | None, typer.Option("--queries", help="Queries (for the sheet).")] = None,
    responses_path: Annotated[Path | None, typer.Option("--responses", help="Responses (for the sheet).")] = None,
    rates: Annotated[str, typer.Option(help="Inspection rates unanimous,majority,split.")] = "0.2,0.4,0.8",
    seed: Annotated[int, typer.Option(help="Seed of the inspection sample.")] = 0,
    blind: Annotated[bool, typer.Option("--blind", help="Leave model labels off the sheet.")] = False,
    expert: Annotated[Path | None, typer.Option(help="A filled-in inspection sheet: expert labels supersede.")] = None,
) -> None:
    """Agreement-aware adjudication: unanimous initial votes give a provisional label; 2–1 and
    split votes go to the adjudicator; a stratified, seeded sample goes to human inspection;
    expert labels supersede; every label keeps its provenance.

    Example: [bold]verimod safeqa adjudicate judges.jsonl refs.jsonl --judges a,b,c --adjudicator senior.jsonl[/bold]
    """
    from verimod.tasks.safeqa import adjudication as adj

    with bad_input_exits():
        names = [n.strip() for n in judges.split(",") if n.strip()]
        outputs = [o for o in io.load_judge_outputs(initial) if o.judge in names]
        votes = adj.initial_votes(outputs, names)
        to_adjudicate = adj.needs_adjudication(votes)
        if pending is not None:
            pending.write_text("".join(v.pair_id + "\n" for v in to_adjudicate), encoding="utf-8")
        senior = [] if adjudicator is None else io.load_judge_outputs(adjudicator)
        try:
            result = adj.apply_adjudication(votes, senior)
        except ValueError as exc:
            raise InputError.at(str(adjudicator), None, None, str(exc)) from None
        if sheet is not None:
            if queries_path is None or responses_path is None:
                raise InputError.at("--sheet", None, None, "the sheet needs --queries and --responses")
            try:
                unanimous, majority, split = (float(x) for x in rates.split(","))
            except ValueError:
                raise InputError.at("--rates", None, None, f"expected three numbers, got {rates!r}") from None
            sample = adj.sample_inspection(votes, {"unanimous": unanimous, "majority": majority, "split": split}, seed)
            pairs = io.build_pairs(io.load_queries(queries_path), io.load_responses(responses_path))
            adj.write_inspection_sheet(sheet, adj.inspection_rows(sample.pair_ids, result, pairs, blind=blind))
        labels = adj.read_expert_labels(expert, {v.pair_id for v in votes}).labels if expert is not None else {}
        final = adj.finalize(result, labels)
    io.write_models(out, final.labels)
    console.print(
        f"{len(final.labels)} reference labels → {out}; agreement {json.dumps(result.agreement_counts)}; "
        f"{len(to_adjudicate)} needed the adjudicator; {len(final.unresolved)} unresolved; {len(labels)} expert labels",
        highlight=False,
    )


def _target_table(report: Any) -> Table:
    table = Table(title="target models (unsafe-response rate over binary-resolved pairs, %)")
    for column in ("model", "pool", "n", "unsafe", "95% CI", "safe", "refusal", "disputed"):
        table.add_column(column, justify="left" if column in ("model", "pool") else "right")
    for row in report.rates:
        if row.by != "all":
            continue
        ci = (
            ""
            if row.unsafe_rate_ci is None
            else f"{percent(row.unsafe_rate_ci.low, 1)}–{percent(row.unsafe_rate_ci.high, 1)}"
        )
        table.add_row(row.model, row.pool or "all", str(row.n_pairs), percent(row.unsafe_rate, 1), ci,
                      percent(row.safe_rate, 1), percent(row.refusal_rate, 1), str(row.n_disputed))  # fmt: skip
    return table


def _judge_table(report: Any) -> Table:
    table = Table(title="judges (all pairs; D→Safe / D→Unsafe, %)")
    for column in ("judge", "pool", "n", "unsafe recall", "safe-resp. FPR", "precision", "F1", "conflict", "coverage"):
        table.add_column(column, justify="left" if column in ("judge", "pool") else "right")
    for s in report.scores:
        if s.by != "all":
            continue
        a, b = s.disputed_as_safe, s.disputed_as_unsafe

        def both(x: float | None, y: float | None) -> str:
            return f"{percent(x, 1)} / {percent(y, 1)}"

        table.add_row(s.judge, s.pool or "all", str(s.n_binary), both(a.unsafe_recall, b.unsafe_recall),
                      both(a.safe_response_fpr, b.safe_response_fpr), both(a.precision, b.precision),
                      both(a.f1, b.f1), percent(s.conflict_rate, 1), percent(s.coverage, 1))  # fmt: skip
    return table


@safeqa_app.command("report")
def report(
    queries_path: Annotated[Path, typer.Argument(help="Queries (JSONL).")],
    responses_path: Annotated[Path, typer.Argument(help="Responses (JSONL).")],
    references_path: Annotated[Path, typer.Argument(help="Reference labels (JSONL).")],
    judge_outputs: Annotated[
        list[Path] | None, typer.Option("--judges", help="Judge outputs to audit (repeatable).")
    ] = None,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the 95% CIs.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    json_out: Annotated[str | None, typer.Option("--json", help="Write every metric as JSON ('-': stdout).")] = None,
) -> None:
    """Target-model rates (base vs adversarial, per category, method and form) and judge audits
    (recall, safe-response FPR, precision, F1, conflict, coverage under D→Safe and D→Unsafe;
    agreement between judges; conflict shift from base to adversarial).

    Example: [bold]verimod safeqa report queries.jsonl responses.jsonl references.jsonl --judges judges.jsonl[/bold]
    """
    from verimod.tasks.safeqa.metrics import judge_metrics, target_metrics
    from verimod.tasks.safeqa.refusal import is_refusal

    with bad_input_exits():
        pairs = io.build_pairs(
            io.load_queries(queries_path), io.load_responses(responses_path), io.load_reference_labels(references_path)
        )
        outputs = [o for path in judge_outputs or [] for o in io.load_judge_outputs(path)]
        try:
            targets = target_metrics(pairs, is_refusal=is_refusal, n_resamples=bootstrap, seed=seed)
            judges_report = judge_metrics(pairs, outputs, n_resamples=bootstrap, seed=seed) if outputs else None
        except ValueError as exc:
            raise InputError.at("--judges", None, None, str(exc)) from None
    payload = {"targets": targets.model_dump(), "judges": None if judges_report is None else judges_report.model_dump()}
    if json_out == "-":
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return
    if json_out:
        Path(json_out).write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    console.print(_target_table(targets))
    if judges_report is not None:
        console.print(_judge_table(judges_report))
        console.print(
            f"judge × category cells whose conflict rate rises from base to adversarial: "
            f"{judges_report.n_conflict_cells_rising} of {judges_report.n_conflict_cells}",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Add the ``safeqa`` group to the root application."""
    app.add_typer(safeqa_app, name="safeqa", rich_help_panel="Protocols")
