"""``verimod softhate generate | select``: the reverse-AMT searches (one per standpoint, in
parallel, resumable, with the Relevance-Theory hyper-parameters as options recorded in every
trace and in ``generate.json``) and the Stage-3 selection with its annotator check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from pydantic import ValidationError

from verimod.cli.backend_options import ApiKeyEnv, BaseUrl, Concurrency, NoCache, run_with_backend
from verimod.cli.common import QuietOption, bad_input_exits
from verimod.cli.softhate import annotator_names, choice, say, softhate_app
from verimod.cli.softhate_build import (
    ExplicitThreshold,
    Generator,
    Language,
    Lm,
    Nli,
    NoSafety,
    Safety,
    SafetyPositive,
    SafetyRule,
    Scorers,
    load_models,
)
from verimod.core.engine import EngineConfig
from verimod.core.errors import InputError
from verimod.core.resumable import AppendLog
from verimod.data.jsonl import atomic_write, write_jsonl


def _floats(option: str, text: str, count: int) -> tuple[float, ...]:
    """``count`` comma-separated non-negative numbers, or an input error naming ``option``."""
    try:
        values = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise InputError.at(option, None, None, f"expected {count} comma-separated numbers, got {text!r}") from None
    if len(values) != count or min(values) < 0:
        raise InputError.at(option, None, None, f"expected {count} comma-separated non-negative numbers, got {text!r}")
    return values


def _pass_all(_text: str) -> bool:
    return True


@softhate_app.command("generate")
def generate(
    standpoints_path: Annotated[Path, typer.Argument(help="Standpoints (JSONL: id, text, target).")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for searches.jsonl and softbase.jsonl.")],
    generator: Generator,
    nli: Nli,
    lm: Lm = None,
    lm_top_k: Annotated[int, typer.Option(help="HTTP scorer LMs: alternatives per token (entropy bound).")] = 20,
    safety: Safety = None,
    no_safety: NoSafety = False,
    safety_rule: SafetyRule = "bagging",
    safety_positive: SafetyPositive = "hateful,hate",
    explicit_threshold: ExplicitThreshold = 0.95,
    loci: Annotated[str, typer.Option(help="auto (one per standpoint, seeded) | all | comma-separated loci.")] = "auto",
    beam: Annotated[int, typer.Option(help="Beam size B.")] = 3,
    candidates: Annotated[int, typer.Option(help="(P, M) candidates K₁ of step 1.")] = 5,
    decomposition_candidates: Annotated[
        int | None, typer.Option(help="(E, D) candidates K₂ per beam entry (default: --candidates).")
    ] = None,
    temperature: Annotated[float, typer.Option(help="Generator temperature.")] = 0.0,
    max_tokens: Annotated[int, typer.Option(help="Maximum new tokens per generator call.")] = 200,
    epsilon: Annotated[float, typer.Option(help="ε of edge = log(Effect / (Cost + ε)).")] = 0.05,
    gamma_var: Annotated[float, typer.Option(help="γ_var: penalty on the scorer LMs' variance.")] = 0.2,
    tau_ent: Annotated[float, typer.Option(help="τ_ent: least P(entail) of an admissible edge.")] = 0.6,
    tau_contr: Annotated[float, typer.Option(help="τ_contr: largest P(contradict) of an admissible edge.")] = 0.4,
    cost_weights: Annotated[
        str, typer.Option(help="Cost weights of resistance, surprisal, entropy, redundancy.")
    ] = "0.25,0.25,0.25,0.25",
    chain_weights: Annotated[str | None, typer.Option(help="λ₁,λ₂ of Ψ (default 1/T each).")] = None,
    structured: Annotated[bool, typer.Option("--structured", help="JSON-schema output from the generator.")] = False,
    language: Language = "en",
    seed: Annotated[int, typer.Option(help="Seed of the locus choice and of generation.")] = 0,
    parallel: Annotated[int, typer.Option(help="Searches at once (requests stay within --max-concurrency).")] = 8,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: Concurrency = 16,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Reverse-AMT generation: one relevance-guided beam search per standpoint (and locus) over
    (P, M) then (E, D) candidates, --parallel at a time. Every candidate, score and rejection
    goes to searches.jsonl as each search finishes; the winners to softbase.jsonl (each paired
    with its standpoint, so with its seed's Hard item); the settings to generate.json.
    Resumable: finished searches are not repeated, and a folder made with other settings is
    refused.

    Example: [bold]verimod softhate generate sp.jsonl -o sh/ -g gguf:m.gguf --nli gguf:m.gguf --no-safety[/bold]

    Example: [bold]verimod softhate generate sp.jsonl -o sh/ -g openai:qwen --nli openai:nli --lm openai:qwen
    --base-url http://gpu:8000/v1 --safety hfcls:guard --tau-ent 0.7[/bold]
    """
    from verimod.tasks.softhate.generate import base_item
    from verimod.tasks.softhate.prompts import softhate_prompts, target_name
    from verimod.tasks.softhate.schema import Locus, SearchConfig, SearchTrace, Standpoint
    from verimod.tasks.softhate.scoring import CostWeights, ScoringConfig
    from verimod.tasks.softhate.searches import finished_searches, plan_searches, run_searches

    with bad_input_exits():
        choice("--language", language, ("en", "zh"))
        standpoints = load_models(standpoints_path, Standpoint)
        for line, standpoint in enumerate(standpoints, start=1):
            try:
                target_name(standpoint.target, cast(Any, language))
            except ValueError as exc:
                raise InputError.at(str(standpoints_path), line, "target", str(exc)) from None
        if loci in ("auto", "all"):
            wanted: Any = loci
        else:
            wanted = [n.strip() for n in loci.split(",") if n.strip()]
            for name in wanted:
                choice("--loci", name, tuple(locus.value for locus in Locus))
        try:
            plan = plan_searches(standpoints, wanted, seed)
        except ValueError as exc:
            raise InputError.at(str(standpoints_path), None, "id", str(exc)) from None
        weights = _floats("--cost-weights", cost_weights, 4)
        lambdas = _floats("--chain-weights", chain_weights, 2) if chain_weights else None
        try:
            scoring = ScoringConfig(
                epsilon=epsilon, gamma_var=gamma_var, tau_ent=tau_ent, tau_contr=tau_contr,
                weights=CostWeights(resistance=weights[0], surprisal=weights[1], entropy=weights[2],
                                    redundancy=weights[3]),
            )  # fmt: skip
            config = SearchConfig(
                beam_size=beam, premise_candidates=candidates,
                decomposition_candidates=decomposition_candidates or candidates, temperature=temperature,
                max_tokens=max_tokens, structured_output=structured, language=cast(Any, language), seed=seed,
                chain_weights=cast(Any, lambdas), scoring=scoring,
            )  # fmt: skip
        except ValidationError as exc:
            error = exc.errors()[0]
            option = "--" + str(error["loc"][-1]).replace("_", "-") if error["loc"] else "--beam"
            raise InputError.at(option, None, None, str(error["msg"])) from None
        if parallel < 1:
            raise InputError.at("--parallel", None, None, f"must be at least 1, got {parallel}")
        searches = out_dir / "searches.jsonl"
        done = finished_searches(searches, config)
        scorers = Scorers(base_url, api_key_env, max_concurrency)
        gen = scorers.backend(generator, "--generator")
        nli_scorer = scorers.nli(nli, language)
        lm_scorers = scorers.lms(lm or [], gen, lm_top_k)
        safety_filter = (
            scorers.safety(safety or [], no_safety, safety_rule, explicit_threshold, safety_positive) or _pass_all
        )
    todo = [(s, locus) for s, locus in plan if (s.id, locus) not in done]
    engine = EngineConfig(max_concurrency=max_concurrency)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {
        "command": "softhate generate",
        "standpoints": str(standpoints_path),
        "n_standpoints": len(standpoints),
        "searches_planned": len(plan),
        "loci": loci,
        "seed": seed,
        "language": language,
        "config": config.model_dump(mode="json"),
        "prompt_version": softhate_prompts().version,
        "generator": gen.spec,
        "nli": nli_scorer.name,
        "lms": [scorer.name for scorer in lm_scorers],
        "safety": {"models": safety or [], "rule": safety_rule, "explicit_threshold": explicit_threshold}
        if safety
        else None,
        "engine": engine.model_dump(mode="json"),
        "parallel": parallel,
    }
    atomic_write(out_dir / "generate.json", [json.dumps(manifest, ensure_ascii=False, indent=2).encode() + b"\n"])

    async def run_all(cache: Any) -> None:
        try:
            await scorers.probe(cache)
            with AppendLog(searches) as log:

                def write(trace: SearchTrace) -> None:
                    log.write(trace.model_dump(mode="json"))
                    if not quiet:
                        reason = f" ({trace.reason})" if trace.reason else ""
                        say(f"{trace.standpoint.id}/{trace.locus.value}: {trace.outcome}{reason}")

                await run_searches(
                    todo, generator=gen, nli=nli_scorer, lms=lm_scorers, safety=safety_filter, config=config,
                    on_trace=write, parallel=parallel, engine=engine, cache=cache,
                )  # fmt: skip
        finally:
            await scorers.aclose()

    with bad_input_exits():
        run_with_backend(run_all, scorers.backends, not no_cache)
    planned = {(s.id, locus) for s, locus in plan}
    traces = [t for key, t in finished_searches(searches).items() if key in planned]
    order = {key: i for i, key in enumerate((s.id, locus) for s, locus in plan)}
    traces.sort(key=lambda t: order[(t.standpoint.id, t.locus)])
    items = [item for t in traces if (item := base_item(t)) is not None]
    write_jsonl(out_dir / "softbase.jsonl", (i.model_dump(mode="json") for i in items))
    if not quiet:
        say(f"{len(plan)} searches ({len(todo)} run now): {len(items)} winners → {out_dir / 'softbase.jsonl'}; "
            f"{len(traces) - len(items)} without an admissible chain (see {searches})")  # fmt: skip


@softhate_app.command("select")
def select(
    base_paths: Annotated[list[Path], typer.Argument(help="Softbase items (softbase.jsonl from generate).")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for selected.jsonl and stage3.json.")],
    top: Annotated[int, typer.Option(help="Items kept per group: the top min(top, N_c) by Ψ.")] = 300,
    hard: Annotated[
        Path | None, typer.Option("--hard", help="Hard items (hard.jsonl): the selected seeds' ones are kept too.")
    ] = None,
    annotators: Annotated[
        str, typer.Option(help="Annotators of the check sheet, comma-separated.")
    ] = "annotator1,annotator2,annotator3",
    sheet: Annotated[
        list[Path] | None, typer.Option("--sheet", help="Filled check sheets: admit the items that pass.")
    ] = None,
    quiet: QuietOption = False,
) -> None:
    """Stage 3: in every Level-2 group keep the top min(--top, N_c) softbase items by Ψ and write
    the annotator-check sheet (coherence, policy compliance, validity per item and annotator).
    With --sheet (the filled sheets), keep only the items that pass every criterion by majority.
    With --hard, the Hard items of the kept seeds are written too (hard_selected.jsonl).

    Example: [bold]verimod softhate select sh/softbase.jsonl -o sh/ --hard sh/hard.jsonl[/bold]

    Example: [bold]verimod softhate select sh/softbase.jsonl -o sh/ --hard sh/hard.jsonl --sheet filled.csv[/bold]
    """
    from verimod.tasks.softhate.items import load_items, plain_record, write_plain_items
    from verimod.tasks.softhate.schema import GeneratedItem, Tier
    from verimod.tasks.softhate.selection import apply_check, check_rows, select_top
    from verimod.tasks.softhate.sheets import write_blank_sheet
    from verimod.tasks.softhate.verification import read_sheet

    with bad_input_exits():
        bases = [i for path in base_paths for i in load_models(path, GeneratedItem) if i.tier is Tier.SOFTBASE]
        if not bases:
            raise InputError.at(str(base_paths[0]), None, "tier", "no softbase item")
        if top < 1:
            raise InputError.at("--top", None, None, f"must be at least 1, got {top}")
        try:
            selection = select_top(bases, top)
        except ValueError as exc:
            raise InputError.at(str(base_paths[0]), None, None, str(exc)) from None
        names = annotator_names(annotators)
        kept = selection.items
        report: dict[str, Any] = {"top": top, **selection.to_dict()}
        if sheet:
            rows = [row for path in sheet for row in read_sheet(path)]
            outcome = apply_check(kept, rows, where=str(sheet[0]))
            kept = outcome.admitted
            report["check"] = {"admitted": len(kept), "passed": outcome.passed, "rejected": outcome.rejected}
        hard_items = load_items([hard]) if hard is not None else []
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / "selected.jsonl", (i.model_dump(mode="json") for i in kept))
    if hard is not None:
        pairs = {i.standpoint_id for i in kept}
        chosen = [plain_record(h, standpoint_id=h.item.pair) for h in hard_items if h.item.pair in pairs]
        write_plain_items(out_dir / "hard_selected.jsonl", chosen)
        report["hard_kept"] = len(chosen)
    if not sheet:
        write_blank_sheet(check_rows(kept, names), out_dir / "stage3_sheet.csv")
    (out_dir / "stage3.json").write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if not quiet:
        groups = len(selection.groups)
        what = "admitted after the check" if sheet else f"selected; fill {out_dir / 'stage3_sheet.csv'}"
        say(f"{len(kept)} of {len(bases)} softbase items in {groups} group(s) {what} → {out_dir / 'selected.jsonl'}")
