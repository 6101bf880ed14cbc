"""``verimod softhate``: the SoftHateBench protocol — seeds, standpoints, generation, variants,
detection runs and the HSR report. Building commands (standpoints, generate, variants) live in
:mod:`verimod.cli.softhate_build`."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.table import Table

from verimod.cli.backend_options import ApiKeyEnv, BaseUrl, Concurrency, NoCache, backend_from_options, run_with_backend
from verimod.cli.common import QuietOption, bad_input_exits, console, emit_json, err_console
from verimod.core.engine import EngineConfig
from verimod.core.errors import InputError, one_line
from verimod.core.registry import UnknownNameError
from verimod.models.base import GenerationParams
from verimod.report.tables import percent

softhate_app = typer.Typer(
    help="SoftHateBench: argument-based soft hate, generation and detection.", no_args_is_help=True
)

JsonOut = Annotated[str | None, typer.Option("--json", help="Write every number as JSON ('-': stdout).")]


def say(text: str) -> None:
    """One plain, unwrapped status line."""
    console.print(text, highlight=False, soft_wrap=True, markup=False)


def annotator_names(text: str) -> list[str]:
    """The distinct comma-separated names of ``--annotators`` (an input error otherwise)."""
    names = [a.strip() for a in text.split(",") if a.strip()]
    if not names or len(set(names)) != len(names):
        raise InputError.at("--annotators", None, None, "give one or more distinct names")
    return names


def choice(option: str, value: str, allowed: tuple[str, ...]) -> str:
    """``value`` when it is one of ``allowed``, else an input error naming ``option``."""
    if value not in allowed:
        raise InputError.at(option, None, None, f"choose from {', '.join(allowed)}; got {value!r}")
    return value


@softhate_app.command("seeds")
def seeds(
    sources: Annotated[list[Path], typer.Argument(help="Source files of one data set (CSV, Parquet, JSONL …).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Seed items (JSONL, plain items with tier hard).")],
    source: Annotated[str, typer.Option("--from", help="davidson | ishate | hatecheck | cold | swsr | generic")],
    offensive: Annotated[str, typer.Option(help="Davidson's offensive class: non_hate | hate | drop.")] = "non_hate",
    individual: Annotated[
        str, typer.Option(help="cold, swsr, generic: attacks on an individual → drop | hate | non_hate.")
    ] = "drop",
    column_map: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="generic: column map, e.g. 'text=content; label=toxic:1=harmful,0=non_harmful; target=group?'.",
        ),
    ] = None,
    include_augmented: Annotated[
        bool, typer.Option("--include-augmented", help="Keep ISHate's machine-augmented rows.")
    ] = False,
    keep_non_hate: Annotated[
        bool, typer.Option("--keep-non-hate", help="Keep non-hate rows too (as controls, gold non_hate).")
    ] = False,
    min_tokens: Annotated[int, typer.Option(help="Drop texts with fewer tokens after cleaning.")] = 5,
    threshold: Annotated[float, typer.Option(help="Near-duplicate cosine threshold within a group.")] = 0.8,
    rule: Annotated[str, typer.Option(help="Near-duplicate removal: component | greedy.")] = "component",
    report_path: Annotated[Path | None, typer.Option("--report", help="Write the counts as JSON.")] = None,
    quiet: QuietOption = False,
) -> None:
    """Seed construction: map source labels to hate / non-hate, clean (URLs, mentions, hashtags;
    fewer than --min-tokens dropped), remove near-duplicates (character TF-IDF cosine ≥
    --threshold) within each target group. Every row is counted: kept or dropped with its reason.
    Each seed keeps the source's fields and its text before cleaning under ``original``.
    Chinese sources (COLD, SWSR) and any tabular file (generic, with --map) are read through
    verimod's data adapters; texts with a Han character count tokens as characters.

    Example: [bold]verimod softhate seeds hatecheck_cases.csv --from hatecheck -o seeds.jsonl[/bold]

    Example: [bold]verimod softhate seeds cold/train.csv cold/dev.csv cold/test.csv --from cold -o seeds.jsonl[/bold]
    """
    from verimod.tasks.softhate.items import write_plain_items
    from verimod.tasks.softhate.seed_similarity import dedupe
    from verimod.tasks.softhate.seed_sources import ADAPTER_SOURCES, read_adapter_seeds
    from verimod.tasks.softhate.seeds import SOURCES, clean_items, read_seeds

    with bad_input_exits():
        choice("--from", source, SOURCES + ADAPTER_SOURCES)
        choice("--offensive", offensive, ("non_hate", "hate", "drop"))
        choice("--individual", individual, ("drop", "hate", "non_hate"))
        choice("--rule", rule, ("component", "greedy"))
        if source == "generic" and not column_map:
            raise InputError.at("--map", None, None, "--from generic needs a column map (text, label, …)")
        counts: Counter[str] = Counter()
        items = []
        for path in sources:
            if source in ADAPTER_SOURCES:
                read = read_adapter_seeds(
                    path, cast(Any, source), individual=cast(Any, individual), column_map=column_map
                )
            else:
                read = read_seeds(
                    path, cast(Any, source), offensive=cast(Any, offensive), include_augmented=include_augmented
                )
            for key, value in read.counts().items():
                counts[key] += value
            items.extend(read.items)
    if not keep_non_hate:
        counts["non_hate left out"] = sum(1 for i in items if i.label == "non_hate")
        items = [i for i in items if i.label == "hate"]
    cleaned = clean_items(items, min_tokens=min_tokens)
    counts[f"shorter than {min_tokens} tokens"] = len(cleaned.dropped)
    kept_items = cleaned.items
    result = dedupe([i.text for i in kept_items], threshold, groups=[(i.group or "", i.label) for i in kept_items],
                    rule=cast(Any, rule))  # fmt: skip
    counts["near-duplicates removed"] = len(kept_items) - result.n_kept
    final = [item for item, keep in zip(kept_items, result.keep, strict=True) if keep]
    counts["kept"] = len(final)
    raw = {i.id: i.text for i in items}
    rows = [
        {"id": i.id, "text": i.text, "tier": "hard", "gold": i.label, "group": i.group, "source": i.source,
         "original": _json_safe({**i.original, "raw_text": raw[i.id]})}
        for i in final
    ]  # fmt: skip
    write_plain_items(out, rows)
    if report_path is not None:
        emit_json(str(report_path), dict(counts))
    if not quiet:
        say(f"{counts['kept']} seeds → {out}; {json.dumps(dict(counts), ensure_ascii=False)}")


def _json_safe(value: Any) -> Any:
    """Source fields as JSON values (NaN and non-JSON scalars become null or text)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


@softhate_app.command("evaluate")
def evaluate(
    items_paths: Annotated[list[Path], typer.Argument(help="Item files (generated items and plain items).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Judgements (JSONL; appended, resumable).")],
    model: Annotated[str, typer.Option("--model", "-m", help="Detector spec.")],
    runs: Annotated[int, typer.Option(help="Runs per item (mean ± sd in the report).")] = 1,
    detector: Annotated[
        str, typer.Option("--format", help="prompt (hateful / safe) or a guard format: llama-guard, qwen3guard, …")
    ] = "prompt",
    hate_categories: Annotated[
        str | None, typer.Option(help="Guard formats: only these unsafe categories count as hate (e.g. S10).")
    ] = None,
    positive: Annotated[str, typer.Option(help="Classifier backends: the hate label(s), comma-separated.")] = (
        "hateful,hate"
    ),
    threshold: Annotated[float, typer.Option(help="Classifier backends: P(hate) threshold.")] = 0.5,
    language: Annotated[str, typer.Option(help="Language of the detector prompt: en | zh.")] = "en",
    ablation: Annotated[
        bool,
        typer.Option(
            "--ablation",
            help="Also judge the scaffold inputs E+D (the surface text), E+D+P, E+D+P+M of every soft item.",
        ),
    ] = False,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (0: runs repeat one another).")] = 0.0,
    max_tokens: Annotated[int, typer.Option(help="Maximum new tokens.")] = 16,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: Concurrency = 32,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Run a detector (LLM with the binary hateful / safe prompt, guard model or classifier) over
    items, --runs times; resumable. Unreadable outputs are recorded as invalid.

    Example: [bold]verimod softhate evaluate hard.jsonl softbase.jsonl -o judged.jsonl -m openai:qwen --runs 3[/bold]

    Example: [bold]verimod softhate evaluate sh/*.jsonl -o judged.jsonl -m openai:qwen --language zh[/bold]
    """
    from verimod.tasks.softhate.detection_runs import detector_format, run_detector
    from verimod.tasks.softhate.items import ablation_items, load_items

    with bad_input_exits():
        if runs < 1:
            raise InputError.at("--runs", None, None, f"must be at least 1, got {runs}")
        choice("--language", language, ("en", "zh"))
        try:
            categories = None if hate_categories is None else [c.strip() for c in hate_categories.split(",")]
            fmt = detector_format(detector, categories, language)
        except UnknownNameError as exc:
            raise InputError.at("--format", None, None, str(exc)) from None
        items = load_items(items_paths)
        if ablation:
            extra = ablation_items(items)
            if not extra:
                raise InputError.at("--ablation", None, None, "no soft item (with its AMT) among the items")
            items = items + extra
        backend = backend_from_options(model, base_url, api_key_env)
    params = GenerationParams(temperature=temperature, max_tokens=max_tokens)
    labels = tuple(p.strip() for p in positive.split(",") if p.strip())
    stats = run_with_backend(
        lambda cache: run_detector(
            items, backend, out, runs=runs, fmt=fmt, params=params, positive=labels, threshold=threshold,
            engine=EngineConfig(max_concurrency=max_concurrency), cache=cache,
        ),
        backend, not no_cache,
    )  # fmt: skip
    if not quiet:
        say(f"{len(items)} items × {runs} runs: {stats.done} judged now ({stats.errors} failed, "
            f"{stats.cache_hits} cached) → {out}")  # fmt: skip


def _rate(summary: Any) -> str:
    if summary is None or math.isnan(summary.mean):
        return "n/a"
    sd = "" if math.isnan(summary.sd) else f" ± {100 * summary.sd:.1f}"
    return f"{100 * summary.mean:.1f}{sd}"


def _points(stats: Any) -> str:
    if stats is None or math.isnan(stats.mean):
        return ""
    sd = "" if math.isnan(stats.sd) else f" ± {stats.sd:.1f}"
    return f"{stats.mean:+.1f}{sd}"


def _tier_table(model: str, report: Any, paired: bool = False) -> Table:
    rates, deltas = (
        (report.paired_by_tier, report.paired_delta) if paired else (report.by_tier, report.delta_vs_reference)
    )
    what = f"the {report.n_pairs} seed(s) present in every tier" if paired else "all items"
    table = Table(title=f"{model}: hate success rate by tier, {what} (%, mean ± sd over {len(report.runs)} run(s))")
    for column in ("tier", "items", "HSR", f"Δ vs {report.reference_tier} (pts)", "invalid"):
        table.add_column(column, justify="left" if column == "tier" else "right")
    for tier, rate in rates.items():
        table.add_row(tier, str(rate.n), _rate(rate), _points(deltas.get(tier)), str(rate.invalid))
    if not paired:
        table.add_row("all", str(report.hsr.n), _rate(report.hsr), "", str(report.hsr.invalid), end_section=True)
    return table


def _paired_note(model: str, report: Any) -> str | None:
    """A banner when the tiers hold different numbers of items (their rates are over different
    item sets), pointing to the paired table or saying there is none."""
    sizes = {tier: rate.n for tier, rate in report.by_tier.items()}
    if len(set(sizes.values())) <= 1:
        return None
    listed = ", ".join(f"{tier} {n}" for tier, n in sizes.items())
    if report.n_pairs:
        return (f"{model}: note — tiers cover different items (n = {listed}); the paired table keeps "
                f"the {report.n_pairs} seed(s) present in every tier")  # fmt: skip
    return f"{model}: note — tiers cover different items (n = {listed}) and no seed is present in every tier"


def _matrix(title: str, cells: dict[tuple[str, ...], Any], tiers: list[str]) -> Table:
    table = Table(title=title)
    table.add_column("")
    for tier in tiers:
        table.add_column(tier, justify="right")
    for row in dict.fromkeys(key[1] for key in cells):
        table.add_row(row, *(_rate(cells.get((tier, row))) for tier in tiers))
    return table


@softhate_app.command("report")
def report(
    items_paths: Annotated[list[Path], typer.Argument(help="Item files (the same as given to evaluate).")],
    judgements: Annotated[list[Path], typer.Option("--judgements", "-j", help="Judgement files (repeatable).")],
    models: Annotated[
        list[str] | None, typer.Option("--model", help="Report only these models (default: every model found).")
    ] = None,
    missing: Annotated[str, typer.Option(help="An item without a judgement: error | invalid.")] = "error",
    by_group: Annotated[bool, typer.Option("--by-group", help="Also print the tier × group table.")] = False,
    sheets: Annotated[
        list[Path] | None, typer.Option("--sheet", help="Human verification sheets (CSV/JSONL; repeatable).")
    ] = None,
    json_out: JsonOut = None,
) -> None:
    """HSR per tier, domain and group with Δ to Hard (mean ± sd over runs), the scaffold
    ablation, specificity on non-hate controls, and human-verification pass rates (Wilson 95%,
    Fleiss' κ).

    Example: [bold]verimod softhate report hard.jsonl softbase.jsonl softgv.jsonl softhv.jsonl -j judged.jsonl[/bold]
    """
    from verimod.tasks.softhate import evaluation as ev
    from verimod.tasks.softhate.detection_runs import judgements_of, load_judgements
    from verimod.tasks.softhate.items import ablation_items, load_items
    from verimod.tasks.softhate.verification import agreement_summary, read_sheet, verification_summary

    with bad_input_exits():
        choice("--missing", missing, ("error", "invalid"))
        items = load_items(items_paths)
        lines = [line for path in judgements for line in load_judgements(path)]
        found = list(dict.fromkeys(line.model for line in lines))
        chosen = models or found
        unknown = [m for m in chosen if m not in found]
        if unknown:
            raise InputError.at("--model", None, None, f"no judgements of {', '.join(unknown)}; found {found}")
        base = [i.item for i in items]
        conditions = [i.item for i in ablation_items(items)]
        base_ids, condition_ids = {i.id for i in base}, {i.id for i in conditions}
        reports: dict[str, Any] = {}
        for model in chosen:
            own = judgements_of(lines, model)
            stray = [j for j in own if j.item_id not in base_ids and j.item_id not in condition_ids]
            if stray:
                message = f"{len(stray)} judgement(s) of {model} for items not given, e.g. {stray[0].item_id!r}"
                raise InputError.at(str(judgements[0]), None, "item_id", message)
            try:
                main = ev.evaluate(base, [j for j in own if j.item_id in base_ids], missing=cast(Any, missing))
                judged = [j for j in own if j.item_id in condition_ids]
                scaffold = ev.scaffold_ablation(conditions, judged, missing=cast(Any, missing)) if judged else []
            except ValueError as exc:
                raise InputError.at(str(judgements[0]), None, None, f"{model}: {exc}") from None
            reports[model] = (main, scaffold)
        sheet_rows = [row for path in sheets or [] for row in read_sheet(path)]
        verification = verification_summary(sheet_rows, {i.id: i.tier for i in base if i.tier}) if sheet_rows else []
        try:
            agreement = agreement_summary(sheet_rows, {i.id: i.gold for i in base})
        except ValueError as exc:
            raise InputError.at(str(sheets[0]) if sheets else "--sheet", None, "item_id", str(exc)) from None
    payload = {
        "models": {
            m: {"report": r.to_dict(), "ablation": [_ablation_dict(a) for a in s]} for m, (r, s) in reports.items()
        },
        "verification": [v.to_dict() for v in verification],
        "agreement": [a.to_dict() for a in agreement],
    }
    if json_out:
        emit_json(json_out, payload)
        if json_out == "-":
            return
    for model, (main, scaffold) in reports.items():
        console.print(_tier_table(model, main))
        note = _paired_note(model, main)
        if note is not None:
            say(note)
            if main.n_pairs:
                console.print(_tier_table(model, main, paired=True))
        tiers = list(main.by_tier)
        console.print(_matrix(f"{model}: HSR by domain and tier (%)", main.by_tier_domain, tiers))
        if by_group:
            console.print(_matrix(f"{model}: HSR by group and tier (%)", main.by_tier_group, tiers))
        if main.specificity is not None:
            say(f"{model}: specificity on non-hate controls {_rate(main.specificity)} % (n = {main.specificity.n})")
            for tier, rate in main.specificity_by_tier.items():
                say(f"  {tier}: {_rate(rate)} % (n = {rate.n})")
        if main.classification is not None:
            c = main.classification
            say(f"{model}: accuracy {100 * c.accuracy.mean:.1f} %, macro-F1 {100 * c.macro_f1.mean:.1f} %")
        if scaffold:
            table = Table(title=f"{model}: reasoning-scaffold ablation (HSR %, gain over E+D in points)")
            for column in ("tier", "input", "items", "HSR", "gain"):
                table.add_column(column, justify="left" if column in ("tier", "input") else "right")
            for row in scaffold:
                table.add_row(row.tier or "", row.condition, str(row.hsr.n), _rate(row.hsr), _points(row.gain))
            console.print(table)
    if verification:
        table = Table(title="human verification (majority of annotators; Wilson 95% interval; Fleiss' κ)")
        for column in ("criterion", "tier", "items", "pass rate", "95% CI", "κ"):
            table.add_column(column, justify="left" if column in ("criterion", "tier") else "right")
        for v in verification:
            kappa = "n/a" if math.isnan(v.fleiss_kappa) else f"{v.fleiss_kappa:.3f}"
            table.add_row(v.criterion, v.tier or "all", str(v.n_items), percent(v.pass_rate, 1),
                          f"{percent(v.wilson_low, 1)}–{percent(v.wilson_high, 1)}", kappa)  # fmt: skip
        console.print(table)
    if agreement:
        table = Table(title="perception check: majority verdict = the item's gold label (Wilson 95%; Fleiss' κ)")
        for column in ("gold", "items", "agree", "rate", "95% CI", "κ"):
            table.add_column(column, justify="left" if column == "gold" else "right")
        for a in agreement:
            kappa = "n/a" if math.isnan(a.fleiss_kappa) else f"{a.fleiss_kappa:.3f}"
            table.add_row(a.gold or "all", str(a.n_items), str(a.agree), percent(a.rate, 1),
                          f"{percent(a.wilson_low, 1)}–{percent(a.wilson_high, 1)}", kappa)  # fmt: skip
        console.print(table)


def _ablation_dict(row: Any) -> dict[str, Any]:
    return {
        "tier": row.tier,
        "condition": row.condition,
        "hsr": row.hsr.to_dict(),
        "gain": None if row.gain is None else row.gain.to_dict(),
    }


def problems(lines: list[str]) -> None:
    """Print problem lines on stderr, one per line."""
    for line in lines:
        err_console.print(one_line(line, 1000), highlight=False, soft_wrap=True, markup=False)


def register(app: typer.Typer) -> None:
    """Add the ``softhate`` group (with the building commands) to the root application."""
    from verimod.cli import (  # noqa: F401 - registers standpoints, variants; generate, select; sheet
        softhate_build,
        softhate_generate,
        softhate_sheet,
    )

    app.add_typer(softhate_app, name="softhate", rich_help_panel="Protocols")
