"""``verimod safeqa``: the C-SafeQA protocol — import, transform, collect, judge, adjudicate, report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from verimod.cli.backend_options import ApiKeyEnv, BaseUrl, Concurrency, NoCache, backend_from_options, run_with_backend
from verimod.cli.common import QuietOption, bad_input_exits, console, err_console, safe
from verimod.cli.safeqa_report import report_command
from verimod.cli.safeqa_transform import transform_command
from verimod.core.engine import EngineConfig
from verimod.core.errors import InputError
from verimod.core.registry import UnknownNameError
from verimod.models.base import GenerationParams
from verimod.tasks.safeqa import io

safeqa_app = typer.Typer(help="C-SafeQA: response-level safety QA and judge auditing.", no_args_is_help=True)

MaxTokens = Annotated[int | None, typer.Option(help="Maximum new tokens (default: see the command's help).")]
Temperature = Annotated[float | None, typer.Option(help="Sampling temperature (default 0).")]
TopP = Annotated[float | None, typer.Option(help="Nucleus sampling top-p (default: the server's).")]
GenSeed = Annotated[int | None, typer.Option("--gen-seed", help="Sampling seed sent to the model (default 0).")]
ExtraBody = Annotated[
    str | None,
    typer.Option(
        help='Extra request fields as a JSON object, e.g. \'{"chat_template_kwargs": {"enable_thinking": false}}\'.'
    ),
]


def generation_params(
    base: GenerationParams,
    max_tokens: int | None,
    temperature: float | None,
    top_p: float | None,
    seed: int | None,
    extra_body: str | None,
) -> GenerationParams:
    """``base`` with the options the user gave (a bad value is an input error naming the option)."""
    update: dict[str, Any] = {}
    if extra_body is not None:
        try:
            body = json.loads(extra_body)
        except ValueError as exc:
            raise InputError.at("--extra-body", None, None, f"not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise InputError.at("--extra-body", None, None, "must be a JSON object")
        update["extra_body"] = body
    for name, value in (("max_tokens", max_tokens), ("temperature", temperature), ("top_p", top_p), ("seed", seed)):
        if value is not None:
            update[name] = value
    try:
        return GenerationParams.model_validate({**base.model_dump(), **update})
    except ValueError as exc:
        first = str(exc).splitlines()
        raise InputError.at("generation options", None, None, " ".join(first[:3])) from None


@safeqa_app.command("import")
def import_data(
    source: Annotated[Path, typer.Argument(help="The public data file.")],
    out_dir: Annotated[Path, typer.Argument(help="Folder for queries.jsonl (and responses/references).")],
    kind: Annotated[str, typer.Option("--from", help="jade (v3 pairs) | jade-benchmark | flames")] = "jade",
    limit: Annotated[int | None, typer.Option(help="Keep only the first N queries (and their pairs).")] = None,
    categories: Annotated[
        list[Path] | None,
        typer.Option("--categories", help="JADE v1/v2 question files to join categories from (repeatable)."),
    ] = None,
    declarative: Annotated[
        bool, typer.Option("--declarative", help="Add a rule-made declarative twin of every question-form seed.")
    ] = False,
) -> None:
    """Turn public data into C-SafeQA files: JADE v3 gives questions with one unsafe and one safe
    answer (labelled pairs, gold labels kept); JADE v1/v2 give questions with categories; Flames
    gives prompts that are adversarial already (usable as seeds). Each query's form (question or
    declarative) is read from its final punctuation.

    Example: [bold]verimod safeqa import jade_alignment_medium_zh.csv sq/ --from jade --declarative
    --categories jade_benchmark_medium_zh.csv[/bold]
    """
    from verimod.tasks.safeqa.transforms.declarative import declarative_twins

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
        notes = []
        if categories:
            queries, stats = io.attach_jade_categories(queries, categories)
            notes.append(
                f"categories joined from {', '.join(stats.files)}: {stats.matched} of {stats.queries} matched"
                f" ({stats.conflicts} labelled more than one way: first kept, all in meta.jade_join)"
            )
        elif kind == "jade":
            notes.append("no categories: JADE v3 has none — join them with --categories <jade_benchmark_*.csv>")
        forms = {form: sum(q.form == form for q in queries) for form in ("question", "declarative")}
        notes.append(f"forms: {forms['question']} question, {forms['declarative']} declarative")
        if declarative:
            twins = declarative_twins(queries)
            made = [(t.meta or {}).get("declarative", {}).get("rule") for t in twins]
            rules = {r: made.count(r) for r in ("ask", "interrogative", "wrapped")}
            queries = [*queries, *twins]
            notes.append(f"{len(twins)} declarative twins by rule ({', '.join(f'{k} {v}' for k, v in rules.items())})")
    io.write_models(out_dir / "queries.jsonl", queries)
    written = [f"{len(queries)} queries"]
    if responses:
        io.write_models(out_dir / "responses.jsonl", responses)
        io.write_models(out_dir / "references.jsonl", references)
        written += [f"{len(responses)} responses", f"{len(references)} reference labels"]
    console.print(f"{out_dir}: {', '.join(written)}", highlight=False, soft_wrap=True)
    for note in notes:
        console.print(f"  {note}", highlight=False, soft_wrap=True)


safeqa_app.command("transform")(transform_command)


@safeqa_app.command("collect")
def collect(
    queries_path: Annotated[Path, typer.Argument(help="Queries (JSONL).")],
    out: Annotated[Path, typer.Argument(help="Responses (JSONL; appended, resumable).")],
    model: Annotated[str, typer.Option("--model", "-m", help="Target model spec.")],
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_tokens: MaxTokens = None,
    temperature: Temperature = None,
    top_p: TopP = None,
    gen_seed: GenSeed = None,
    extra_body: ExtraBody = None,
    max_concurrency: Concurrency = 32,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Ask a target model every query (engine: concurrency, retries, cache); resumable — a
    second run asks only what has no answer yet. Generation defaults: 1024 new tokens,
    temperature 0, seed 0; every option used is recorded in each response line, and resuming a
    file made with other options is refused.

    Example: [bold]verimod safeqa collect queries.jsonl responses.jsonl --model openai:qwen --base-url
    http://localhost:8000/v1 --extra-body '{"chat_template_kwargs": {"enable_thinking": false}}'[/bold]
    """
    from verimod.tasks.safeqa.collect import DEFAULT_TARGET_PARAMS, collect_responses

    with bad_input_exits():
        queries = io.load_queries(queries_path)
        params = generation_params(DEFAULT_TARGET_PARAMS, max_tokens, temperature, top_p, gen_seed, extra_body)
        backend = backend_from_options(model, base_url, api_key_env)
        engine = EngineConfig(max_concurrency=max_concurrency)
        stats = run_with_backend(
            lambda cache: collect_responses(queries, backend, out, params, engine, cache), backend, not no_cache
        )
    if not quiet:
        cut = sum(1 for r in io.load_responses(out) if r.model == backend.spec and r.finish_reason == "length")
        console.print(
            f"{stats.done} responses ({stats.errors} errors, {stats.cache_hits} cached) → {out}"
            f"{f'; {cut} answers cut at --max-tokens {params.max_tokens}' if cut else ''}",
            highlight=False,
            soft_wrap=True,
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
            "--format",
            help="llama-guard | qwen3guard | wildguard | shieldgemma | md-judge | md-judge-v0.1 | nemoguard | "
            "polyguard | yufeng-xguard | llm-judge",
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
    max_tokens: MaxTokens = None,
    temperature: Temperature = None,
    top_p: TopP = None,
    gen_seed: GenSeed = None,
    extra_body: ExtraBody = None,
    max_concurrency: Concurrency = 32,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Have a guard or judge model classify query–response pairs; raw outputs are normalised to
    safe | unsafe | disputed | invalid (unknown formats are invalid, never guessed). Generation
    defaults fit the format (e.g. 32 new tokens for llama-guard, 512 for llm-judge and md-judge,
    temperature 0); the options used are recorded in each output line.

    Example: [bold]verimod safeqa judge q.jsonl r.jsonl judge.jsonl --model gguf:guard.gguf --format llama-guard[/bold]
    """
    from verimod.tasks.safeqa.collect import judge_pairs
    from verimod.tasks.safeqa.judges import judge_formats, normalization_coverage

    with bad_input_exits():
        try:
            spec = judge_formats.get(judge_format)
        except UnknownNameError as exc:
            raise InputError.at("--format", None, None, str(exc)) from None
        params = generation_params(spec.default_params, max_tokens, temperature, top_p, gen_seed, extra_body)
        pairs = io.build_pairs(io.load_queries(queries_path), io.load_responses(responses_path))
        pairs = [p for p in pairs if p.response.error is None]
        if only is not None:
            wanted = {line.strip() for line in only.read_text(encoding="utf-8").splitlines() if line.strip()}
            pairs = [p for p in pairs if p.pair_id in wanted]
        backend = backend_from_options(model, base_url, api_key_env)
        judge_name = name or model
        engine = EngineConfig(max_concurrency=max_concurrency)
        run_with_backend(
            lambda cache: judge_pairs(pairs, backend, judge_name, judge_format, out, params, engine, cache),
            backend, not no_cache,
        )  # fmt: skip
    outputs = [o for o in io.load_judge_outputs(out) if o.judge == judge_name]
    coverage = normalization_coverage(outputs)
    if not quiet:
        coverage.pop("by_judge", None)
        console.print(f"{judge_name}: {json.dumps(coverage, ensure_ascii=False)}", highlight=False, soft_wrap=True)
        if coverage["cut_invalid"]:
            err_console.print(
                f"warning: {coverage['cut_invalid']} invalid outputs were cut at {params.max_tokens} tokens: "
                "raise --max-tokens and judge again into a new file",
                highlight=False,
                soft_wrap=True,
            )


def _print_audit(final: Any, experts: Any) -> None:
    table = Table(title="expert inspection: how often experts changed the model label, per agreement stratum")
    for column in ("stratum", "inspected", "changed", "change rate"):
        table.add_column(column, justify="left" if column == "stratum" else "right")
    for row in final.audit:
        rate = "n/a" if not row.n_inspected else f"{100 * row.n_changed / row.n_inspected:.1f} %"
        table.add_row(row.agreement, str(row.n_inspected), str(row.n_changed), rate)
    console.print(table)
    agreement = experts.agreement if experts is not None else None
    if agreement is not None:

        def show(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.3f}"

        console.print(
            f"experts: {agreement.n_complete} pairs with three labels — {agreement.n_unanimous} unanimous, "
            f"{agreement.n_majority} 2–1, {agreement.n_split} three-way; "
            f"raw agreement {show(agreement.raw_agreement)}, "
            f"Fleiss κ {show(agreement.fleiss_kappa)}, Krippendorff α {show(agreement.krippendorff_alpha)}; "
            f"{len(experts.discussion)} in the discussion queue, {len(experts.incomplete)} incomplete",
            highlight=False,
            soft_wrap=True,
        )


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
    seed: Annotated[int, typer.Option(help="Seed of the inspection sample and of the blind sheet's order.")] = 0,
    blind: Annotated[
        bool, typer.Option("--blind", help="Blind sheet: opaque item ids, shuffled rows, no model/method/labels.")
    ] = False,
    sheet_key: Annotated[
        Path | None, typer.Option(help="Key of a blind sheet (default: <sheet>.key.jsonl beside it).")
    ] = None,
    expert: Annotated[Path | None, typer.Option(help="A filled-in inspection sheet: expert labels supersede.")] = None,
    discussion: Annotated[
        Path | None, typer.Option(help="Write the pairs the three experts disagree on here (JSONL).")
    ] = None,
    gold: Annotated[
        Path | None, typer.Option(help="References carrying the data set's own labels (e.g. JADE's) to keep beside.")
    ] = None,
) -> None:
    """Agreement-aware adjudication: unanimous initial votes give a provisional label; 2–1 and
    split votes go to the adjudicator; a stratified, seeded sample goes to three experts through
    a sheet (--blind: opaque ids, shuffled, nothing but query and response; the key file maps the
    items back); unanimous or discussed expert labels supersede, disagreements go to a
    discussion queue; the per-stratum change audit and the experts' agreement are printed; every
    label keeps its provenance and, with --gold, the data set's own label beside it.

    Example: [bold]verimod safeqa adjudicate judges.jsonl refs.jsonl --judges a,b,c --adjudicator senior.jsonl
    --gold sq/references.jsonl[/bold]
    """
    from verimod.tasks.safeqa import adjudication as adj
    from verimod.tasks.safeqa import inspection

    with bad_input_exits():
        names = [n.strip() for n in judges.split(",") if n.strip()]
        outputs = [o for o in io.load_judge_outputs(initial) if o.judge in names]
        try:
            votes = adj.initial_votes(outputs, names)
        except ValueError as exc:
            raise InputError.at(str(initial), None, "judge", str(exc)) from None
        to_adjudicate = adj.needs_adjudication(votes)
        if pending is not None:
            pending.write_text("".join(v.pair_id + "\n" for v in to_adjudicate), encoding="utf-8")
        senior = [] if adjudicator is None else io.load_judge_outputs(adjudicator)
        try:
            result = adj.apply_adjudication(votes, senior)
        except ValueError as exc:
            raise InputError.at(str(adjudicator), None, None, str(exc)) from None
        if sheet is not None and expert is None:
            _write_sheet(sheet, sheet_key, blind, votes, result, rates, seed, queries_path, responses_path)
        experts = None
        if expert is not None:
            key_file = sheet_key or inspection.key_path(expert)
            key = inspection.read_key(key_file) if key_file.exists() else None
            experts = inspection.read_expert_labels(expert, {v.pair_id for v in votes}, key=key)
            if discussion is not None:
                inspection.write_discussion(discussion, experts.discussion)
        final = adj.finalize(result, experts.labels if experts else {}, experts.experts if experts else None)
        labels = final.labels
        kept = 0
        if gold is not None:
            labels, kept = adj.keep_source_labels(labels, io.load_reference_labels(gold))
    io.write_models(out, labels)
    console.print(
        f"{len(labels)} reference labels → {out}; agreement {json.dumps(result.agreement_counts)}; "
        f"{len(to_adjudicate)} needed the adjudicator; {len(final.unresolved)} unresolved; "
        f"{len(experts.labels) if experts else 0} expert labels{f'; {kept} source labels kept' if gold else ''}",
        highlight=False,
        soft_wrap=True,
    )
    if experts is not None:
        _print_audit(final, experts)


def _write_sheet(
    sheet: Path, sheet_key: Path | None, blind: bool, votes: Any, result: Any, rates: str, seed: int,
    queries_path: Path | None, responses_path: Path | None,
) -> None:  # fmt: skip
    from verimod.tasks.safeqa import adjudication as adj
    from verimod.tasks.safeqa import inspection

    if queries_path is None or responses_path is None:
        raise InputError.at("--sheet", None, None, "the sheet needs --queries and --responses")
    try:
        unanimous, majority, split = (float(x) for x in rates.split(","))
        sample = adj.sample_inspection(votes, {"unanimous": unanimous, "majority": majority, "split": split}, seed)
    except ValueError as exc:
        raise InputError.at("--rates", None, None, f"expected three numbers in [0, 1], got {rates!r} ({exc})") from None
    pairs = io.build_pairs(io.load_queries(queries_path), io.load_responses(responses_path))
    if blind:
        built = inspection.blind_sheet(sample.pair_ids, result, pairs, seed)
        inspection.write_inspection_sheet(sheet, built.rows)
        key_file = sheet_key or inspection.key_path(sheet)
        inspection.write_key(key_file, built.key)
        console.print(
            f"blind sheet: {len(built.rows)} items → {sheet}; key (keep it from the experts) → {key_file}",
            highlight=False,
            soft_wrap=True,
        )
    else:
        inspection.write_inspection_sheet(sheet, inspection.inspection_rows(sample.pair_ids, result, pairs))
        console.print(safe(f"inspection sheet: {len(sample.pair_ids)} pairs → {sheet}"), soft_wrap=True)


safeqa_app.command("report")(report_command)


def register(app: typer.Typer) -> None:
    """Add the ``safeqa`` group to the root application."""
    app.add_typer(safeqa_app, name="safeqa", rich_help_panel="Protocols")
