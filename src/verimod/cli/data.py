"""``verimod data``: data-set construction — normalize, dedup, split, leakage, agree, convert.

Every option is checked before any file is read (:mod:`verimod.cli.data_options`), and every
command follows one rule for empty input: a file without a data record (empty, a header or blank
lines only, or every record skipped by ``--on-error skip``) is an error, exit code 2, and no
output is written.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.table import Table

from verimod.cli import data_ray
from verimod.cli.common import QuietOption, bad_input_exits, console
from verimod.cli.data_options import (
    EncodingOpt,
    FormatOpt,
    OnErrorOpt,
    ReportOpt,
    SeedOpt,
    TextField,
    Threshold,
    WorkersOpt,
    check_encoding,
    emit_report,
    format_score,
    load_table,
    texts_of,
)
from verimod.cli.data_ray import DEFAULT_SHARD_MB, RayJob, RayOpt, ShardMbOpt
from verimod.core.errors import InputError, one_line
from verimod.data.jsonl import write_jsonl
from verimod.data.neardup import cross_pairs, deduplicate
from verimod.data.split import resolve_sizes, sizes_are_counts, split_records, strata_of

data_app = typer.Typer(
    help="Data-set construction: normalize, dedup, split, leakage, agree, convert, profile, export.",
    no_args_is_help=True,
)


def _pair_rows(
    pairs: list[tuple[int, int, float]], left: list[tuple[int, dict[str, Any]]], right: list[tuple[int, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Pairs as JSON rows: the line and id of each side and the exact score (full precision)."""
    return [
        {
            "line_a": left[i][0],
            "line_b": right[j][0],
            "id_a": left[i][1].get("id"),
            "id_b": right[j][1].get("id"),
            "score": score,
        }
        for i, j, score in pairs
    ]


@data_app.command("normalize")
def normalize(
    source: Annotated[Path, typer.Argument(help="Input file (CSV, TSV, JSON, JSONL, Parquet).")],
    out: Annotated[Path, typer.Argument(help="Output: the kept, normalised records (JSONL).")],
    text_field: TextField = "text",
    label_field: Annotated[
        str,
        typer.Option(help="The label column: duplicates whose labels differ are reported as conflicts ('' for none)."),
    ] = "label",
    config_file: Annotated[
        Path | None, typer.Option("--config", help="A JSON file of normalisation options (NormalizeConfig).")
    ] = None,
    min_length: Annotated[
        int | None,
        typer.Option(
            min=0, help="Remove texts shorter than this (an emoticon such as [酷] counts one) [default: 0: off]."
        ),
    ] = None,
    emoji: Annotated[bool | None, typer.Option("--emoji/--keep-emoji", help="Remove emoji [default: keep].")] = None,
    emoticons: Annotated[
        bool | None, typer.Option("--emoticons/--keep-emoticons", help="Remove [哈哈]-style emoticons [default: keep].")
    ] = None,
    t2s: Annotated[
        bool | None,
        typer.Option("--t2s/--no-t2s", help="Traditional → Simplified (OpenCC; verimod[data]) [default: no-t2s]."),
    ] = None,
    topics: Annotated[
        Literal["unwrap", "keep", "remove"] | None,
        typer.Option(help="#话题#: unwrap, keep or remove [default: unwrap]."),
    ] = None,
    punctuation: Annotated[
        Literal["keep", "ascii", "cjk"] | None, typer.Option(help="Punctuation: keep, ascii or cjk [default: keep].")
    ] = None,
    identifiers: Annotated[
        bool,
        typer.Option("--identifiers/--keep-identifiers", help="Replace phones, e-mails, IDs, QQ/WeChat, @handles."),
    ] = True,
    spam: Annotated[bool, typer.Option("--spam/--keep-spam", help="Remove advertisements and spam.")] = True,
    duplicates: Annotated[bool, typer.Option("--dedup/--keep-duplicates", help="Remove exact duplicates.")] = True,
    keep_original: Annotated[str | None, typer.Option(help="Also keep the original text in this field.")] = None,
    rejects: Annotated[Path | None, typer.Option(help="Write removed records with their reason (JSONL).")] = None,
    conflicts: Annotated[
        Path | None,
        typer.Option(
            help="Write every copy of each duplicate text whose labels differ (JSONL; the first copy is kept)."
        ),
    ] = None,
    report_out: ReportOpt = None,
    fmt: FormatOpt = None,
    encoding: EncodingOpt = "auto",
    on_error: OnErrorOpt = "fail",
    ray_address: RayOpt = None,
    shard_mb: ShardMbOpt = DEFAULT_SHARD_MB,
    quiet: QuietOption = False,
) -> None:
    """Normalise texts (NFKC keeping Chinese punctuation, markup and URLs out, identifiers to
    placeholders, whitespace) and remove empty, symbol-only, spam and duplicate records — every
    change and removal counted, removed records kept in --rejects, duplicates with conflicting
    labels counted and kept in --conflicts. No length floor unless --min-length is given.

    Example: [bold]verimod data normalize raw.csv clean.jsonl --text-field TEXT --rejects rejects.jsonl[/bold]

    On a Ray cluster (OUT and --rejects become folders of parts):
    [bold]verimod data normalize raw.jsonl clean/ --ray auto --rejects rejects/[/bold]
    """
    from verimod.data.normalize import NormalizeConfig, Normalizer

    with bad_input_exits():
        options: dict[str, Any] = {}
        if config_file is not None:
            try:
                options = json.loads(config_file.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise InputError.at(str(config_file), None, None, f"not a readable JSON file: {exc}") from None
            if not isinstance(options, dict):
                raise InputError.at(str(config_file), None, None, "expected a JSON object of options")
        flags = {
            "min_length": min_length,
            "emoji": emoji,
            "emoticons": emoticons,
            "t2s": t2s,
            "topics": topics,
            "punctuation": punctuation,
            "keep_original": keep_original,
        }
        options.update({k: v for k, v in flags.items() if v is not None})
        if not identifiers:
            options.update(
                dict.fromkeys(("emails", "id_cards", "phones", "landlines", "qq", "wechat", "mentions"), False)
            )
        options["drop_spam"] = options.get("drop_spam", True) and spam
        options["drop_duplicates"] = options.get("drop_duplicates", True) and duplicates
        try:
            config = NormalizeConfig.model_validate(options)
            normalizer = Normalizer(config, text_field, str(source), label_field or None)
        except (ValueError, ImportError) as exc:
            raise InputError.at(str(config_file or "options"), None, None, one_line(str(exc))) from None
        if ray_address is not None:
            job = RayJob(ray_address, source, fmt, encoding, on_error, shard_mb, quiet)
            run = data_ray.normalize(job, out, config, text_field, label_field or None, rejects, conflicts is not None)
            report, found, kept, removed = run.report, run.conflicts, run.kept, run.removed
            counts = run.sharded.counts()
        else:
            loaded = load_table(source, fmt, encoding, on_error)
            kept, removed = [], []
            try:
                for line, row in loaded.rows:
                    record, rejected = normalizer.process(row, line)
                    if rejected is None:
                        kept.append((line, record))
                    else:
                        removed.append(
                            {"line": line, "reason": rejected.reason, "detail": rejected.detail, "record": record}
                        )
            except ImportError as exc:  # OpenCC missing: one line, exit 2
                raise InputError.at("--t2s", None, None, one_line(str(exc))) from None
            report, found, counts = normalizer.finish(), normalizer.conflicts, loaded.counts()
            write_jsonl(out, (record for _, record in kept))
            if rejects is not None:
                write_jsonl(rejects, removed)
    if conflicts is not None:
        write_jsonl(conflicts, _conflict_rows(found, kept, removed, label_field))
    emit_report({**report.model_dump(mode="json"), **counts}, report_out)
    if not quiet and report_out != "-":
        for text in report.lines():
            console.print(text, highlight=False)
        if report.duplicate_conflicts and conflicts is None:
            console.print("  (--conflicts FILE writes every copy of those texts with its label)", highlight=False)


def _conflict_rows(
    found: list[Any], kept: list[tuple[int, dict[str, Any]]], removed: list[dict[str, Any]], label_field: str
) -> list[dict[str, Any]]:
    """Every copy of each text with conflicting labels: the kept one first, then the removed ones,
    groups numbered in the order of their kept copy."""
    kept_at = dict(kept)
    removed_at = {row["line"]: row["record"] for row in removed}
    groups: dict[int, list[int]] = {}
    for conflict in found:
        groups.setdefault(conflict.kept_line, []).append(conflict.line)
    rows = []
    for number, (first, others) in enumerate(sorted(groups.items()), 1):
        rows.append(
            {
                "group": number,
                "line": first,
                "kept": True,
                "label": kept_at[first].get(label_field),
                "record": kept_at[first],
            }
        )
        rows += [
            {
                "group": number,
                "line": line,
                "kept": False,
                "label": removed_at[line].get(label_field),
                "record": removed_at[line],
            }
            for line in others
        ]
    return rows


@data_app.command("dedup")
def dedup(
    source: Annotated[Path, typer.Argument(help="Input file (CSV, TSV, JSON, JSONL, Parquet).")],
    threshold: Threshold = 95.0,
    text_field: TextField = "text",
    rule: Annotated[
        Literal["first", "longest"], typer.Option(help="Which text of a component to keep: first or longest.")
    ] = "first",
    out: Annotated[Path | None, typer.Option(help="Write the kept records (JSONL).")] = None,
    pairs_out: Annotated[Path | None, typer.Option("--pairs", help="Write the near-duplicate pairs (JSONL).")] = None,
    report_out: ReportOpt = None,
    workers: WorkersOpt = 1,
    fmt: FormatOpt = None,
    encoding: EncodingOpt = "auto",
    on_error: OnErrorOpt = "fail",
    ray_address: RayOpt = None,
    shard_mb: ShardMbOpt = DEFAULT_SHARD_MB,
    quiet: QuietOption = False,
) -> None:
    """Exact near-duplicate join: every pair with fuzz.ratio ≥ threshold (the same pairs as
    comparing all pairs, computed sub-quadratically), components, and one record kept per
    component (rule first: the first occurrence; longest: the longest text, ties first).

    Example: [bold]verimod data dedup comments.csv --text-field TEXT --threshold 95 --out kept.jsonl[/bold]

    On a Ray cluster (--out and --pairs become folders of parts; --workers: threads per task):
    [bold]verimod data dedup crawl.jsonl --ray auto --out kept/ --pairs pairs/[/bold]
    """
    with bad_input_exits():
        if ray_address is not None:
            job = RayJob(ray_address, source, fmt, encoding, on_error, shard_mb, quiet)
            run = data_ray.dedup(job, threshold, text_field, rule, out, pairs_out, workers)
            r, counts = run.report, run.sharded.counts()
        else:
            loaded = load_table(source, fmt, encoding, on_error)
            result = deduplicate(texts_of(source, loaded.rows, text_field), threshold, rule=rule, workers=workers)
            rows = loaded.rows
            if pairs_out is not None:
                write_jsonl(pairs_out, _pair_rows(result.pairs, rows, rows))
            if out is not None:
                write_jsonl(out, (row for (_, row), keep in zip(rows, result.keep, strict=True) if keep))
            r, counts = result.report, loaded.counts()
    emit_report({**dataclasses.asdict(r), **counts}, report_out)
    if not quiet and report_out != "-":
        console.print(
            f"{r.texts} texts ({r.distinct} distinct): {r.pairs} near-duplicate pairs at ≥ {r.threshold:g}, "
            f"{r.components} components, {r.dropped} dropped (rule {r.rule}); "
            f"{r.compared:,} comparisons instead of {r.distinct * (r.distinct - 1) // 2:,}; {r.seconds:.2f} s",
            highlight=False,
        )


def _split_plan(sizes: str, names: str | None) -> tuple[list[float], list[str]]:
    """The split sizes and names, checked before any data is read."""
    try:
        size_list = [float(part) for part in sizes.split(",")]
    except ValueError:
        raise InputError.at("--sizes", None, None, f"not a comma-separated list of numbers: {sizes!r}") from None
    try:
        sizes_are_counts(size_list)
    except ValueError as exc:
        raise InputError.at("--sizes", None, None, str(exc)) from None
    if names:
        name_list = [name.strip() for name in names.split(",")]
    else:
        name_list = ["train", "test"] if len(size_list) == 2 else ["train", "dev", "test"][: len(size_list)]
    if len(name_list) != len(size_list) or len(set(name_list)) != len(name_list) or not all(name_list):
        raise InputError.at("--names", None, None, f"give {len(size_list)} distinct non-empty names, one per size")
    return size_list, name_list


@data_app.command("split")
def split(
    source: Annotated[Path, typer.Argument(help="Input file (CSV, TSV, JSON, JSONL, Parquet).")],
    sizes: Annotated[str, typer.Option(help="Split sizes: counts (5600,800,1600) or fractions (0.7,0.1,0.2).")],
    names: Annotated[str | None, typer.Option(help="Split names (default: train,dev,test / train,test).")] = None,
    stratify: Annotated[
        str, typer.Option(help="Fields whose value combinations keep their shares.")
    ] = "label,category",
    seed: SeedOpt = 0,
    threshold: Threshold = 95.0,
    tolerance: Annotated[
        float, typer.Option(min=0.0, help="Largest stratum drift (points) before it is reported.")
    ] = 1.0,
    text_field: TextField = "text",
    out: Annotated[Path | None, typer.Option(help="Write every record with its 'split' (JSONL).")] = None,
    out_dir: Annotated[Path | None, typer.Option(help="Write one JSONL file per split into this folder.")] = None,
    report_out: ReportOpt = None,
    fmt: FormatOpt = None,
    encoding: EncodingOpt = "auto",
    on_error: OnErrorOpt = "fail",
    ray_address: RayOpt = None,
    shard_mb: ShardMbOpt = DEFAULT_SHARD_MB,
    quiet: QuietOption = False,
) -> None:
    """Leakage-free stratified split: every near-duplicate component in one split, stratum
    shares kept within the tolerance where feasible, deterministic per seed.

    Example: [bold]verimod data split varm.jsonl --sizes 5600,800,1600 --stratify label,category
    --seed 13 --out-dir splits/[/bold]

    On a Ray cluster (--out and each split of --out-dir become folders of parts):
    [bold]verimod data split crawl.jsonl --sizes 0.8,0.1,0.1 --ray auto --out-dir splits/[/bold]
    """
    with bad_input_exits():
        size_list, name_list = _split_plan(sizes, names)
        fields = [f for f in stratify.split(",") if f]

        def counts_for(n: int) -> list[int]:
            try:
                return resolve_sizes(size_list, n)
            except ValueError as exc:
                raise InputError.at("--sizes", None, None, f"{exc} in {source}") from None

        if ray_address is not None:
            job = RayJob(ray_address, source, fmt, encoding, on_error, shard_mb, quiet)
            run = data_ray.split(
                job, name_list, fields, seed, threshold, tolerance, text_field, out, out_dir, counts_for
            )
            report, counts = run.report, run.sharded.counts()
        else:
            loaded = load_table(source, fmt, encoding, on_error)
            texts = texts_of(source, loaded.rows, text_field)
            counts_for(len(texts))
            strata = strata_of([r for _, r in loaded.rows], fields)
            assigned, report = split_records(texts, strata, size_list, name_list, seed, threshold, tolerance, fields)
            records = [{**row, "split": name} for (_, row), name in zip(loaded.rows, assigned, strict=True)]
            if out is not None:
                write_jsonl(out, records)
            if out_dir is not None:
                for name in name_list:
                    write_jsonl(out_dir / f"{name}.jsonl", (r for r in records if r["split"] == name))
            counts = loaded.counts()
    emit_report({**report.model_dump(), **counts}, report_out)
    if not quiet and report_out != "-":
        table = Table(title=f"split of {source.name} (seed {seed}, components at ≥ {threshold:g}; % per stratum)")
        table.add_column("stratum")
        table.add_column("all", justify="right")
        for name in name_list:
            table.add_column(name, justify="right")
        table.add_row("size", str(report.n), *(f"{report.sizes[n]} / {report.requested[n]}" for n in name_list))
        for stratum, share in report.overall_pp.items():
            table.add_row(stratum, f"{share:.1f}", *(f"{report.shares_pp[n][stratum]:.1f}" for n in name_list))
        console.print(table)
        for drift in report.unbalanced:
            console.print(
                f"could not balance: {drift.split} {drift.stratum}: {drift.share_pp:.1f}% vs "
                f"{drift.overall_pp:.1f}% ({drift.drift_pp:+.1f} pp)",
                highlight=False,
            )


@data_app.command("leakage")
def leakage(
    first: Annotated[Path, typer.Argument(help="First file, e.g. train.")],
    second: Annotated[Path, typer.Argument(help="Second file, e.g. test.")],
    threshold: Threshold = 95.0,
    text_field: TextField = "text",
    pairs_out: Annotated[Path | None, typer.Option("--pairs", help="Write the pairs (JSONL).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the pairs as JSON.")] = False,
    workers: WorkersOpt = 1,
    fmt: FormatOpt = None,
    encoding: EncodingOpt = "auto",
    on_error: OnErrorOpt = "fail",
    quiet: QuietOption = False,
) -> None:
    """Near-duplicate pairs across two files (exit code 1 when there is any; --format,
    --encoding and --on-error apply to both files).

    Example: [bold]verimod data leakage train.jsonl test.jsonl --threshold 95[/bold]
    """
    with bad_input_exits():
        left = load_table(first, fmt, encoding, on_error)
        right = load_table(second, fmt, encoding, on_error)
        texts_a, texts_b = texts_of(first, left.rows, text_field), texts_of(second, right.rows, text_field)
        found = _pair_rows(cross_pairs(texts_a, texts_b, threshold, workers), left.rows, right.rows)
    if pairs_out is not None:
        write_jsonl(pairs_out, found)
    if as_json:
        sys.stdout.write(json.dumps(found, ensure_ascii=False, indent=2) + "\n")
    elif not quiet:
        for pair in found[:50]:
            console.print(
                f"{first}:{pair['line_a']} ~ {second}:{pair['line_b']}  fuzz.ratio {format_score(pair['score'])}",
                highlight=False,
            )
        more = " (first 50 shown; --pairs FILE writes all)" if len(found) > 50 else ""
        console.print(f"{len(found)} near-duplicate pair(s) across the two files at ≥ {threshold:g}{more}")
    if found:
        raise typer.Exit(1)


@data_app.command("agree")
def agree(
    source: Annotated[Path, typer.Argument(help="Annotations JSONL (several annotators per item).")],
    bootstrap: Annotated[
        int, typer.Option(min=0, help="Bootstrap resamples of items for the 95% CIs (0: none).")
    ] = 1000,
    seed: SeedOpt = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    encoding: Annotated[
        str | None,
        typer.Option(
            "--encoding", callback=check_encoding, help="Input encoding: a codec name or auto (default UTF-8)."
        ),
    ] = None,
) -> None:
    """Inter-annotator agreement per field: Krippendorff's α, Fleiss' κ, raw agreement (with
    bootstrap CIs), Cohen's κ per annotator pair, and mean pairwise character-F1 of the target.

    Example: [bold]verimod data agree annotations.jsonl --bootstrap 1000[/bold]
    """
    from verimod.tasks.varm.agreement import agreement_report, agreement_table, pairwise_table

    with bad_input_exits():
        report = agreement_report(source, bootstrap=bootstrap, seed=seed, encoding=encoding)
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    console.print(agreement_table(report))
    console.print(pairwise_table(report))


@data_app.command("convert")
def convert_command(
    source: Annotated[Path | None, typer.Argument(help="The public data file to convert.")] = None,
    out: Annotated[Path | None, typer.Argument(help="Output: VARM references (JSONL).")] = None,
    adapter: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="The adapter: cold, swsr, toxicn, state-toxicn, mhc, sghatecheck, jade, safetybench-zh, hatecheck, "
            "varm-bench, generic, … (--list).",
        ),
    ] = None,
    column_map: Annotated[
        str | None,
        typer.Option(
            "--map", help="generic/varm-bench column map, e.g. 'text=content; label=toxic:1=harmful,0=non_harmful'"
        ),
    ] = None,
    settings: Annotated[
        list[str] | None, typer.Option("--set", help="An adapter option KEY=VALUE (repeatable; see --list).")
    ] = None,
    encoding: EncodingOpt = "auto",
    on_error: OnErrorOpt = "fail",
    as_json: Annotated[bool, typer.Option("--json", help="Print the conversion summary as JSON.")] = False,
    list_adapters: Annotated[bool, typer.Option("--list", help="List the adapters and their options.")] = False,
    quiet: QuietOption = False,
) -> None:
    """Convert a public data set into VARM references carrying the fields it annotates
    (partial references; score them with verimod score, check them with validate --partial).

    Example: [bold]verimod data convert --from cold ../data/cold/test.csv cold_test.jsonl[/bold]
    """
    from verimod.core.registry import UnknownNameError
    from verimod.data.adapters import adapter_options, adapters, convert, describe

    if list_adapters:
        for name in adapters.names():
            listed = ", ".join(
                f"{k}={v!r}" for k, v in adapter_options(name).items() if k not in ("encoding", "on_error")
            )
            console.print(f"{name}: {describe(name)}\n    options: {listed or '-'}", highlight=False)
        return
    with bad_input_exits():
        if adapter is None or source is None or out is None:
            raise InputError.at(
                "convert", None, None, "give --from NAME, the input file and the output file (or --list)"
            )
        try:
            adapters.get(adapter)
        except UnknownNameError as exc:
            raise InputError.at("--from", None, None, str(exc)) from None
        options: dict[str, Any] = {"encoding": None if encoding == "utf-8" else encoding, "on_error": on_error}
        if column_map is not None:
            options["column_map"] = column_map
        for item in settings or []:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise InputError.at("--set", None, None, f"expected KEY=VALUE, got {item!r}")
            options[key.strip().replace("-", "_")] = value
        result = convert(adapter, source, **options)
    write_jsonl(out, (r.model_dump(mode="json", exclude_none=True) for r in result.references))
    summary = result.summary()
    if as_json:
        sys.stdout.write(json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
        return
    if quiet:
        return
    console.print(
        f"{source} → {out}: read {summary['read']}, converted {summary['converted']} (encoding {summary['encoding']})",
        highlight=False,
    )
    for reason, count in summary["skipped"].items():
        console.print(f"  skipped {count}: {reason}", highlight=False)
    console.print("  fields: " + ", ".join(f"{f} {n}" for f, n in summary["fields"].items()), highlight=False)
    for note in summary["notes"]:
        console.print(f"  note: {one_line(note)}", highlight=False)
    for conflict in summary["conflicts"]:
        console.print(f"  convention conflict: {one_line(conflict)}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``data`` group to the root application."""
    from verimod.cli import data_export, data_profile  # noqa: F401 - register data export, data profile

    app.add_typer(data_app, name="data", rich_help_panel="Build data sets")
