"""``verimod review audit | serve | export``: the rationale audit (proxies, blinded judge passes,
routing to human review, review sheets), the review web app, and the adjudicated export."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

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
    run_with_backend,
)
from verimod.cli.common import QuietOption, RunsDirOption, bad_input_exits, console, emit_json
from verimod.core.errors import InputError, install_hint, one_line
from verimod.core.runs import DEFAULT_RUNS_DIR, resolve_run_dir
from verimod.report.tables import percent
from verimod.tasks.varm.codebook import FIELDS

review_app = typer.Typer(
    help="Rationale audit: groundedness, adequacy, coherence; judges, routing and human review.",
    no_args_is_help=True,
)

CHECKS, JUDGEMENTS, ROUTING, ITEMS = "checks.jsonl", "judgements.jsonl", "routing.jsonl", "items.jsonl"
DATABASE = "review.sqlite"


def _write_jsonl(path: Path, rows: Any) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _sources(paths: list[Path], runs_dir: Path) -> list[Path]:
    """Existing files and folders as given; anything else is looked up as a run id."""
    return [path if path.exists() else resolve_run_dir(path, runs_dir) for path in paths]


def _rates_table(title: str, rows: list[Any]) -> Table:
    table = Table(title=title)
    for column in ("system", "dimension", "pass rate", "95% CI", "items", "from"):
        table.add_column(column, justify="left" if column in ("system", "dimension", "from") else "right")
    for row in rows:
        interval = "" if math.isnan(row.low) else f"{percent(row.low, 1)}–{percent(row.high, 1)}"
        sources = ", ".join(f"{k} {v}" for k, v in sorted(row.sources.items()))
        table.add_row(row.system, row.dimension, percent(row.rate, 1), interval, str(row.known), sources)
    return table


@review_app.command("audit")
def audit(
    sources: Annotated[
        list[Path], typer.Argument(help="Run directories or run ids, and/or reference files (their cot).")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Audit folder (checks, judgements, routing, sheet).")],
    judges: Annotated[
        list[str] | None, typer.Option("--judge", help="Judge model spec (repeatable; passes cycle through them).")
    ] = None,
    passes: Annotated[int, typer.Option(help="Judge passes per rationale.")] = 3,
    temperature: Annotated[float, typer.Option(help="Judge sampling temperature (passes differ by seed).")] = 0.7,
    sample_rate: Annotated[float, typer.Option(help="Share of clean items also sent to review.")] = 0.1,
    seed: Annotated[int, typer.Option(help="Seed of the pass orders, judge sampling and the review sample.")] = 0,
    sheet: Annotated[str, typer.Option(help="Review sheet file name in --out (.csv or .jsonl).")] = "review.csv",
    blind: Annotated[
        bool, typer.Option("--blind/--no-blind", help="Sheet without systems and judge votes (ids coded if mixed).")
    ] = True,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: Concurrency = 16,
    timeout: Timeout = 120.0,
    retries: Retries = 6,
    threads: Threads = None,
    context_size: ContextSize = None,
    device: Device = None,
    no_cache: NoCache = False,
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
    quiet: QuietOption = False,
) -> None:
    """Audit rationales on groundedness, adequacy and coherence: deterministic proxies with
    evidence spans, then (with --judge) blinded judge passes with majority and Fleiss' κ; route
    failed, non-unanimous and a seeded sample of clean items to a review sheet.

    Example: [bold]verimod review audit runs/RUN -o audit/ --judge openai:qwen --base-url http://localhost:8000/v1[/bold]
    """
    from verimod.tasks.varm.audit_checks import audit_items
    from verimod.tasks.varm.audit_judge import load_judge_passes, majority, pass_agreement, run_judge_passes
    from verimod.tasks.varm.audit_review import (
        BLIND_KEY,
        audit_sources,
        audit_table,
        blind_sheet,
        route,
        sheet_rows,
        source_of,
        write_sheet,
    )

    with bad_input_exits():
        if passes < 1:
            raise InputError.at("--passes", None, None, f"must be at least 1, got {passes}")
        if not 0.0 <= sample_rate <= 1.0:
            raise InputError.at("--sample-rate", None, None, f"must be in [0, 1], got {sample_rate}")
        if Path(sheet).suffix.lower() not in (".csv", ".jsonl") or Path(sheet).name != sheet:
            raise InputError.at("--sheet", None, None, f"a file name ending in .csv or .jsonl, got {sheet!r}")
        subjects = audit_sources(_sources(sources, runs_dir))
        transport = Transport(max_concurrency, timeout, retries, threads, context_size, device)
        engine = transport.engine()
        backends = [backend_from_options(spec, base_url, api_key_env, "--judge", transport) for spec in judges or []]
    out.mkdir(parents=True, exist_ok=True)
    items = [s.item for s in subjects]
    audits = audit_items(items)
    _write_jsonl(out / ITEMS, (
        {"id": s.item.id, "item_id": s.item_id, "system": s.item.system, "text": s.item.text,
         "context": s.item.context, "rationale": s.item.rationale,
         "reference": None if s.reference is None else {
             f: getattr(s.reference, f) for f in FIELDS if getattr(s.reference, f) is not None}}
        for s in subjects
    ))  # fmt: skip
    _write_jsonl(out / CHECKS, (
        {"id": a.item.id, "verdicts": a.verdicts, "checks": [c.to_dict() for c in a.checks]} for a in audits
    ))  # fmt: skip
    judged = None
    agreement = None
    if backends:
        run_with_backend(
            lambda cache: run_judge_passes(items, backends, out / JUDGEMENTS, passes=passes, seed=seed,
                                           temperature=temperature, engine=engine, cache=cache),
            backends, not no_cache,
        )  # fmt: skip
        with bad_input_exits():
            audited = {item.id for item in items}  # lines of items audited earlier but not now are left out
            judged = {k: v for k, v in majority(load_judge_passes(out / JUDGEMENTS), passes).items() if k in audited}
        agreement = pass_agreement(judged)
    routed = route(audits, judged, sample_rate=sample_rate, seed=seed)
    _write_jsonl(out / ROUTING, ({"id": r.item_id, "reasons": list(r.reasons)} for r in routed))
    rows = sheet_rows(subjects, {a.item.id: a for a in audits}, routed, judged)
    key: dict[str, str] = {}
    if blind:
        by_id = {s.item.id: s for s in subjects}
        rows, key = blind_sheet(rows, [source_of(r.item_id, by_id[r.item_id].item_id) for r in routed], seed)
    write_sheet(out / sheet, rows)
    (out / BLIND_KEY).unlink(missing_ok=True)
    if key:
        (out / BLIND_KEY).write_text(json.dumps({"codes": key}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    rates = audit_table(audits, judged)
    summary = {
        "items": len(items),
        "routed": len(routed),
        "table": [r.to_dict() for r in rates],
        "agreement": agreement,
        "passes": passes if backends else 0,
        "seed": seed,
        "blind_sheet": blind,
    }
    (out / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if quiet:
        return
    source = "judges' majority" if backends else "proxies"
    console.print(_rates_table(f"rationale audit before review ({source})", rates))
    if agreement:
        for dimension, stats in agreement.items():
            kappa = "n/a" if math.isnan(stats["fleiss_kappa"]) else f"{stats['fleiss_kappa']:.3f}"
            share = percent(stats["unanimous_share"], 1)
            line = (
                f"{dimension}: Fleiss' κ over {passes} passes {kappa}; unanimous {share} of {int(stats['items'])} items"
            )
            console.print(line, highlight=False)
    blinded = f" (blind; key in {out / BLIND_KEY})" if key else " (blind)" if blind else ""
    console.print(f"{len(routed)} of {len(items)} items routed to review → {out / sheet}{blinded}", highlight=False)


@review_app.command("export")
def export(
    audit_dir: Annotated[Path, typer.Argument(help="The audit folder of `review audit`.")],
    sources: Annotated[list[Path], typer.Option("--source", help="The same sources as given to audit (repeatable).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for adjudicated.jsonl and audit_table.json.")],
    sheets: Annotated[list[Path] | None, typer.Option("--sheet", help="Filled review sheets (repeatable).")] = None,
    db: Annotated[
        Path | None,
        typer.Option("--db", help="The review app's database (default: AUDIT_DIR/review.sqlite if present)."),
    ] = None,
    adjudicators: Annotated[
        list[str] | None,
        typer.Option("--adjudicator", help="Reviewer whose decision on an item is final (repeatable)."),
    ] = None,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Also write the audit table as JSON ('-': stdout).")
    ] = None,
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
    quiet: QuietOption = False,
) -> None:
    """Apply the reviewers' decisions — from filled sheets and the review app's database — the
    reference records with their corrections (adjudicated.jsonl) and the audit table: per system
    and dimension, the pass rate of the final verdicts (reviewer, else judges' majority, else
    proxies) with Wilson 95% intervals.

    Every corrected record is validated as `verimod validate` does; anchors of corrected fields
    in its rationale are rewritten to the new values (and marked). Records that would not
    validate are refused, one line per item, exit code 2. Reviewers who propose different
    values for a field are never settled by order: the items go to OUT/adjudication.csv (exit
    code 2); an adjudicator fills it in and the export is run again with --adjudicator NAME.

    Example: [bold]verimod review export audit/ --source runs/RUN --sheet audit/review.csv -o final/[/bold]
    """
    from verimod.tasks.varm.audit_checks import audit_items
    from verimod.tasks.varm.audit_export import adjudicate
    from verimod.tasks.varm.audit_judge import load_judge_passes, majority
    from verimod.tasks.varm.audit_review import BLIND_KEY, audit_sources, audit_table, read_decisions

    with bad_input_exits():
        subjects = audit_sources(_sources(sources, runs_dir))
        known = {s.item.id for s in subjects}
        key_path = audit_dir / BLIND_KEY
        key = json.loads(key_path.read_text(encoding="utf-8"))["codes"] if key_path.is_file() else None
        decisions = [d for path in sheets or [] for d in read_decisions(path, key)]
        database = db if db is not None else audit_dir / DATABASE
        if db is not None and not db.is_file():
            raise InputError.at("--db", None, None, f"no such database: {db}")
        if database.is_file():
            from verimod.review.store import DecisionStore

            decisions += DecisionStore(database).current()
        if not decisions:
            raise InputError.at("--sheet", None, None, "no decision: give filled sheets or a review database")
        unknown = [d.item_id for d in decisions if d.item_id not in known]
        if unknown:
            where = str(sheets[0]) if sheets else str(database)
            raise InputError.at(where, None, "item_id", f"{unknown[0]!r} is not an item of the sources")
        summary_path = audit_dir / "summary.json"
        passes = json.loads(summary_path.read_text(encoding="utf-8")).get("passes", 0) if summary_path.exists() else 0
        judged = majority(load_judge_passes(audit_dir / JUDGEMENTS), passes) if passes else None
    audits = audit_items([s.item for s in subjects])
    result = adjudicate(subjects, decisions, adjudicators or ())
    out.mkdir(parents=True, exist_ok=True)
    if not result.ok:
        _refuse_export(result, subjects, audits, out)
    rates = audit_table(audits, judged, decisions, adjudicators or ())
    _write_jsonl(out / "adjudicated.jsonl", result.records)
    (out / ADJUDICATION).unlink(missing_ok=True)
    payload = {"table": [r.to_dict() for r in rates], "decisions": len(decisions), "corrected": result.corrected,
               "rederived_anchors": result.rederived}  # fmt: skip
    emit_json(str(out / "audit_table.json"), payload)
    if json_out:
        emit_json(json_out, payload)
    if json_out == "-":
        return
    if not quiet:
        console.print(_rates_table("rationale audit after review", rates))
        console.print(
            f"{len(decisions)} decision(s) applied, {result.corrected} record(s) corrected → "
            f"{out / 'adjudicated.jsonl'}",
            highlight=False,
        )
        if result.rederived:
            console.print(
                f"{result.rederived} rationale(s) had anchors rewritten to the corrected values "
                "(meta.review.rederived_anchors): the words around them were not reviewed",
                highlight=False,
            )


ADJUDICATION = "adjudication.csv"


def _refuse_export(result: Any, subjects: list[Any], audits: list[Any], out: Path) -> None:
    """Print one line per item that cannot be exported, write the adjudication sheet for the
    conflicts, and exit with code 2 (nothing else is written)."""
    from verimod.tasks.varm.audit_review import Routed, sheet_rows, write_sheet

    for refusal in result.refusals:
        typer.echo(one_line(f"error: {refusal.describe()}", 1000), err=True)
    for conflict in result.conflicts:
        typer.echo(one_line(f"error: item {conflict.item_id!r}: conflicting corrections: {conflict.describe()}", 1000),
                   err=True)  # fmt: skip
    if result.conflicts:
        routed = [Routed(c.audit_id, (f"conflict: {c.describe()}",)) for c in result.conflicts]
        rows = sheet_rows(subjects, {a.item.id: a for a in audits}, routed)
        for row in rows:
            row |= {"system": "", "judge_votes": ""}
        write_sheet(out / ADJUDICATION, rows)
        typer.echo(
            f"{len(result.conflicts)} item(s) need adjudication: fill in {out / ADJUDICATION} and export again "
            "with --sheet it --adjudicator NAME",
            err=True,
        )
    raise typer.Exit(2)


@review_app.command("serve")
def serve(
    audit_dir: Annotated[Path, typer.Argument(help="The audit folder of `review audit`.")],
    db: Annotated[
        Path | None, typer.Option("--db", help="Decision database (default: AUDIT_DIR/review.sqlite).")
    ] = None,
    host: Annotated[str, typer.Option(help="Address to bind (default: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8765,
    allowed_hosts: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="Another name or address reviewers use to reach the app (repeatable); every other Host is refused.",
        ),
    ] = None,
    blind: Annotated[
        bool, typer.Option("--blind/--no-blind", help="Hide the systems and the judges' votes from reviewers.")
    ] = True,
) -> None:
    """The review web app: each routed item with its comment, the rationale with anchors and
    cited evidence highlighted, the parsed record and the reference; mark the three dimensions,
    correct reference fields, move on by keyboard. Decisions are saved as they are made
    (SQLite); several reviewers can work at once. Blind by default (no system names, no judge
    votes); requests for any Host but the bound address, 127.0.0.1, localhost and
    --allowed-host are refused (DNS rebinding).

    Example: [bold]verimod review serve audit/[/bold]  then open http://127.0.0.1:8765
    (on a lab server: [bold]--host 0.0.0.0 --allowed-host review.lab.example[/bold])
    """
    with bad_input_exits():
        try:
            import uvicorn

            from verimod.review.app import create_app
        except ImportError as exc:
            raise InputError.at(
                "review serve", None, None, f"{exc.name} is missing: {install_hint('review')}"
            ) from None
        try:
            app = create_app(audit_dir, db if db is not None else audit_dir / DATABASE, host=host,
                             allowed_hosts=allowed_hosts or (), blind=blind)  # fmt: skip
        except ValueError as exc:
            raise InputError.at("--allowed-host" if allowed_hosts else "--host", None, None, str(exc)) from None
    mode = "blind" if blind else "not blind: systems and judge votes shown"
    console.print(f"reviewing {audit_dir} ({mode}) on http://{host}:{port}  (Ctrl+C to stop)",
                  highlight=False, markup=False)  # fmt: skip
    uvicorn.run(app, host=host, port=port, log_level="warning")


def register(app: typer.Typer) -> None:
    """Add the ``review`` group to the root application."""
    app.add_typer(review_app, name="review", rich_help_panel="Evaluate")
