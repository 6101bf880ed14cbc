"""``verimod softhate standpoints | generate | variants``: building SoftHateBench items.

Scorers are chosen by spec: ``--nli gguf:PATH`` asks a local model the NLI question and reads
the three labels' token log-probabilities; any other backend spec is asked through the engine
(``label_probs`` of a classifier, else the answer text). ``--lm PATH`` (repeatable) are the
scorer LMs (GGUF files: surprisal and next-token entropy need per-token log-probabilities);
without one, a ``gguf:`` generator scores with its own file. ``--safety SPEC[=THRESHOLD]``
(repeatable) builds the safety-filter ensemble; generation refuses to run without one unless
``--no-safety`` says so explicitly.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer
from pydantic import BaseModel, ValidationError

from verimod.cli.backend_options import ApiKeyEnv, BaseUrl, Concurrency, NoCache, backend_from_options, run_with_backend
from verimod.cli.common import QuietOption, bad_input_exits
from verimod.cli.softhate import choice, say, softhate_app
from verimod.core.engine import EngineConfig
from verimod.core.errors import InputError
from verimod.core.resumable import AppendLog
from verimod.core.validation import validation_problems
from verimod.data.jsonl import read_jsonl, write_jsonl
from verimod.models.base import BackendError, ModelBackend

Record = TypeVar("Record", bound=BaseModel)

Generator = Annotated[str, typer.Option("--generator", "-g", help="Generator model spec.")]
Nli = Annotated[str, typer.Option("--nli", help="NLI scorer: gguf:PATH (log-probabilities) or a backend spec.")]
Lm = Annotated[
    list[str] | None,
    typer.Option("--lm", help="Scorer LM: a GGUF file, or table:FILE of scores (repeatable)."),
]
Safety = Annotated[list[str] | None, typer.Option("--safety", help="Safety classifier SPEC[=THRESHOLD] (repeatable).")]
NoSafety = Annotated[bool, typer.Option("--no-safety", help="Run without a safety filter (every text passes).")]
SafetyRule = Annotated[str, typer.Option(help="Ensemble vote: bagging | majority | quantile.")]
SafetyPositive = Annotated[
    str, typer.Option(help="Safety classifiers: their hate label(s), comma-separated (e.g. 'hate speech').")
]
ExplicitThreshold = Annotated[
    float, typer.Option(help="Hard rule: any classifier at or above this marks explicit hate.")
]
Language = Annotated[str, typer.Option(help="Prompt language: en | zh.")]


def load_models(path: Path, model: type[Record]) -> list[Record]:
    """Every line of a JSONL file as ``model``; the first bad line is an input error."""
    out = []
    for line, obj in read_jsonl(path):
        try:
            out.append(model.model_validate(obj))
        except ValidationError as exc:
            raise InputError(validation_problems(exc, model, str(path), line)[0]) from None
    if not out:
        raise InputError.at(str(path), None, None, "the file is empty")
    return out


class Scorers:
    """The backends and scorers of one command, closed together."""

    def __init__(self, base_url: list[str] | None, api_key_env: str | None) -> None:
        self._base_url, self._api_key_env = base_url, api_key_env
        self.backends: list[ModelBackend] = []
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._llamas: dict[Path, Any] = {}

    def backend(self, spec: str, option: str) -> ModelBackend:
        """A backend of ``spec``, closed with the others."""
        backend = backend_from_options(spec, self._base_url, self._api_key_env, option)
        self.backends.append(backend)
        return backend

    def nli(self, spec: str, language: str) -> Any:
        """The NLI scorer of ``--nli``."""
        from verimod.tasks.softhate.scorers import BackendNliScorer, LlamaCppNliScorer

        if spec.startswith("gguf:"):
            return LlamaCppNliScorer(
                self._llama(Path(spec.removeprefix("gguf:")), "--nli"), language=cast(Any, language)
            )
        return BackendNliScorer(self.backend(spec, "--nli"), language=cast(Any, language))

    def lms(self, specs: Sequence[str], generator: ModelBackend) -> list[Any]:
        """The scorer LMs of ``--lm`` (default: the generator's own GGUF file)."""
        if specs:
            return [self._lm(spec) for spec in specs]
        path = getattr(generator, "path", None)
        if generator.prefix != "gguf" or not isinstance(path, Path):
            raise InputError.at("--lm", None, None, "give a scorer LM (a GGUF file); the generator is not a gguf model")
        return [self._llama(path, "--lm")]

    def _lm(self, spec: str) -> Any:
        if spec.startswith("table:"):
            return _lm_table(Path(spec.removeprefix("table:")))
        return self._llama(Path(spec), "--lm")

    def _llama(self, path: Path, option: str) -> Any:
        """One loaded scorer per GGUF file, shared by --nli and --lm."""
        from verimod.tasks.softhate.scorers import LlamaCppScorer

        if path.resolve() in self._llamas:
            return self._llamas[path.resolve()]
        if not path.is_file():
            raise InputError.at(option, None, None, f"no such GGUF file: {path}")
        try:
            scorer = LlamaCppScorer(path)
        except (ImportError, BackendError) as exc:  # llama-cpp-python missing
            raise InputError.at(option, None, None, str(exc)) from None
        self._closers.append(scorer.aclose)
        self._llamas[path.resolve()] = scorer
        return scorer

    def safety(self, specs: Sequence[str], no_safety: bool, rule: str, explicit_threshold: float, positive: str) -> Any:
        """The safety filter of ``--safety`` (None with ``--no-safety``); a classifier's P(hate)
        sums its ``positive`` labels."""
        from verimod.tasks.softhate.filters import FilterModel, SafetyFilter, backend_scorer

        if not specs:
            if not no_safety:
                raise InputError.at("--safety", None, None, "give --safety SPEC (repeatable), or --no-safety")
            return None
        choice("--safety-rule", rule, ("bagging", "majority", "quantile"))
        models = []
        for spec in specs:
            name, _, threshold = spec.partition("=")
            try:
                limit = float(threshold) if threshold else 0.5
                labels = tuple(p.strip() for p in positive.split(",") if p.strip())
                scorer = backend_scorer(self.backend(name, "--safety"), positive=labels)
                models.append(FilterModel(name, scorer, limit))
            except ValueError as exc:
                raise InputError.at("--safety", None, None, f"{spec}: {exc}") from None
        return SafetyFilter(models, rule=cast(Any, rule), explicit_threshold=explicit_threshold, on_error="raise")

    async def aclose(self) -> None:
        """Close every scorer (the backends are closed by the caller)."""
        for close in self._closers:
            await close()


def _lm_table(path: Path) -> Any:
    """A scorer LM answering from precomputed scores: JSONL lines ``{"key", "surprisal",
    "entropy"}`` keyed like the search's requests (``<candidate id>/lm``)."""
    from verimod.tasks.softhate.scorers import StaticLanguageScorer

    table: dict[str, tuple[float, float]] = {}
    for line, row in read_jsonl(path):
        key = row.get("key")
        if not isinstance(key, str) or not key:
            raise InputError.at(str(path), line, "key", "must be a non-empty string")
        values = []
        for name in ("surprisal", "entropy"):
            value = row.get(name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InputError.at(str(path), line, name, "must be a non-negative number")
            values.append(float(value))
        table[key] = (values[0], values[1])
    return StaticLanguageScorer(table, name=f"table:{path.name}")


def _pass_all(_text: str) -> bool:
    return True


@softhate_app.command("generate")
def generate(
    standpoints_path: Annotated[Path, typer.Argument(help="Standpoints (JSONL: id, text, target).")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for searches.jsonl and softbase.jsonl.")],
    generator: Generator,
    nli: Nli,
    lm: Lm = None,
    safety: Safety = None,
    no_safety: NoSafety = False,
    safety_rule: SafetyRule = "bagging",
    safety_positive: SafetyPositive = "hateful,hate",
    explicit_threshold: ExplicitThreshold = 0.95,
    loci: Annotated[str, typer.Option(help="auto (one per standpoint, seeded) | all | comma-separated loci.")] = "auto",
    beam: Annotated[int, typer.Option(help="Beam size B.")] = 3,
    candidates: Annotated[int, typer.Option(help="Candidates per generation step.")] = 5,
    max_tokens: Annotated[int, typer.Option(help="Maximum new tokens per generator call.")] = 200,
    structured: Annotated[bool, typer.Option("--structured", help="JSON-schema output from the generator.")] = False,
    language: Language = "en",
    seed: Annotated[int, typer.Option(help="Seed of the locus choice and of generation.")] = 0,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: Concurrency = 16,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Reverse-AMT generation: for each standpoint and locus, a relevance-guided beam search over
    (P, M) then (E, D) candidates; every candidate, score and rejection goes to searches.jsonl,
    the winners to softbase.jsonl. Resumable: finished searches are not repeated.

    Example: [bold]verimod softhate generate sp.jsonl -o sh/ -g gguf:m.gguf --nli gguf:m.gguf --no-safety[/bold]
    """
    from verimod.tasks.softhate.generate import base_item, choose_locus, generate_amt
    from verimod.tasks.softhate.schema import Locus, SearchConfig, Standpoint

    with bad_input_exits():
        choice("--language", language, ("en", "zh"))
        standpoints = load_models(standpoints_path, Standpoint)
        if loci in ("auto", "all"):
            plan = (
                [(s, choose_locus(s.id, seed)) for s in standpoints]
                if loci == "auto"
                else [(s, locus) for s in standpoints for locus in Locus]
            )
        else:
            names = [n.strip() for n in loci.split(",") if n.strip()]
            for name in names:
                choice("--loci", name, tuple(locus.value for locus in Locus))
            plan = [(s, Locus(n)) for s in standpoints for n in names]
        try:
            config = SearchConfig(beam_size=beam, premise_candidates=candidates, decomposition_candidates=candidates,
                                  max_tokens=max_tokens, structured_output=structured, language=cast(Any, language),
                                  seed=seed)  # fmt: skip
        except ValidationError as exc:
            raise InputError.at("--beam", None, None, str(exc.errors()[0]["msg"])) from None
        scorers = Scorers(base_url, api_key_env)
        gen = scorers.backend(generator, "--generator")
        nli_scorer = scorers.nli(nli, language)
        lm_scorers = scorers.lms(lm or [], gen)
        safety_filter = (
            scorers.safety(safety or [], no_safety, safety_rule, explicit_threshold, safety_positive) or _pass_all
        )
    searches = out_dir / "searches.jsonl"
    done = {(t.standpoint.id, t.locus) for t in _traces(searches)}
    todo = [(s, locus) for s, locus in plan if (s.id, locus) not in done]
    engine = EngineConfig(max_concurrency=max_concurrency)

    async def run_all(cache: Any) -> None:
        try:
            with AppendLog(searches) as log:
                for standpoint, locus in todo:
                    trace = await generate_amt(
                        standpoint, locus, generator=gen, nli=nli_scorer, lms=lm_scorers, safety=safety_filter,
                        config=config, engine=engine, cache=cache,
                    )  # fmt: skip
                    log.write(trace.model_dump(mode="json"))
                    if not quiet:
                        say(
                            f"{standpoint.id}/{locus.value}: {trace.outcome}"
                            + (f" ({trace.reason})" if trace.reason else "")
                        )
        finally:
            await scorers.aclose()

    run_with_backend(run_all, scorers.backends, not no_cache)
    traces = [t for t in _traces(searches) if (t.standpoint.id, t.locus) in {(s.id, locus) for s, locus in plan}]
    items = [item for t in traces if (item := base_item(t)) is not None]
    write_jsonl(out_dir / "softbase.jsonl", (i.model_dump(mode="json") for i in items))
    if not quiet:
        say(f"{len(plan)} searches ({len(todo)} run now): {len(items)} winners → {out_dir / 'softbase.jsonl'}; "
            f"{len(traces) - len(items)} without an admissible chain (see {searches})")  # fmt: skip


def _traces(path: Path) -> list[Any]:
    """The search traces of ``searches.jsonl`` (none when absent); the last one of a key wins."""
    from verimod.tasks.softhate.schema import SearchTrace

    if not path.exists():
        return []
    latest = {}
    for trace in load_models(path, SearchTrace):
        latest[(trace.standpoint.id, trace.locus)] = trace
    return list(latest.values())


@softhate_app.command("variants")
def variants(
    base_paths: Annotated[list[Path], typer.Argument(help="Softbase items (softbase.jsonl from generate).")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for variants.jsonl and the items.")],
    generator: Generator,
    nli: Nli,
    kinds: Annotated[str, typer.Option(help="softgv, softhv (comma-separated).")] = "softgv,softhv",
    n: Annotated[int, typer.Option("--n", help="Candidates per variant (Best-of-N).")] = 5,
    safety: Safety = None,
    no_safety: NoSafety = False,
    safety_rule: SafetyRule = "bagging",
    safety_positive: SafetyPositive = "hateful,hate",
    explicit_threshold: ExplicitThreshold = 0.95,
    max_tokens: Annotated[int, typer.Option(help="Maximum new tokens per candidate.")] = 200,
    language: Language = "en",
    seed: Annotated[int, typer.Option(help="Generation seed.")] = 0,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: Concurrency = 16,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """GroupVague (the group named by a coded reference) and HostilityVague (a social-media post
    without the group's name, with self-justifying disclaimers) of each softbase item: N
    candidates, the best by similarity plus NLI entailment to the base. Resumable.

    Example: [bold]verimod softhate variants sh/softbase.jsonl -o sh/ -g openai:qwen --nli openai:nli --no-safety[/bold]
    """
    from verimod.tasks.softhate.schema import GeneratedItem, Tier, VariantConfig, VariantTrace
    from verimod.tasks.softhate.variants import generate_variant, variant_item

    with bad_input_exits():
        choice("--language", language, ("en", "zh"))
        wanted = [k.strip() for k in kinds.split(",") if k.strip()]
        for kind in wanted:
            choice("--kinds", kind, ("softgv", "softhv"))
        bases = [item for path in base_paths for item in load_models(path, GeneratedItem) if item.tier is Tier.SOFTBASE]
        if not bases:
            raise InputError.at(str(base_paths[0]), None, "tier", "no softbase item")
        try:
            config = VariantConfig(n_candidates=n, max_tokens=max_tokens, language=cast(Any, language), seed=seed)
        except ValidationError as exc:
            raise InputError.at("--n", None, None, str(exc.errors()[0]["msg"])) from None
        scorers = Scorers(base_url, api_key_env)
        gen = scorers.backend(generator, "--generator")
        nli_scorer = scorers.nli(nli, language)
        safety_filter = scorers.safety(safety or [], no_safety, safety_rule, explicit_threshold, safety_positive)
    log_path = out_dir / "variants.jsonl"
    done = {(t.base_id, t.kind) for t in (load_models(log_path, VariantTrace) if log_path.exists() else [])}
    todo = [(b, k) for b in bases for k in wanted if (b.id, k) not in done]
    engine = EngineConfig(max_concurrency=max_concurrency)

    async def run_all(cache: Any) -> None:
        try:
            with AppendLog(log_path) as log:
                for base, kind in todo:
                    trace = await generate_variant(
                        base, cast(Any, kind), generator=gen, nli=nli_scorer, safety=safety_filter, config=config,
                        engine=engine, cache=cache,
                    )  # fmt: skip
                    log.write(trace.model_dump(mode="json"))
        finally:
            await scorers.aclose()

    run_with_backend(run_all, scorers.backends, not no_cache)
    traces = {(t.base_id, t.kind): t for t in load_models(log_path, VariantTrace)} if todo or done else {}
    by_id = {b.id: b for b in bases}
    for kind in wanted:
        items = [
            item
            for (base_id, k), trace in traces.items()
            if k == kind and base_id in by_id and (item := variant_item(by_id[base_id], trace)) is not None
        ]
        write_jsonl(out_dir / f"{kind}.jsonl", (i.model_dump(mode="json") for i in items))
        if not quiet:
            say(f"{kind}: {len(items)} of {len(bases)} bases have a variant → {out_dir / f'{kind}.jsonl'}")


@softhate_app.command("standpoints")
def standpoints(
    seeds_path: Annotated[Path, typer.Argument(help="Seed items (seeds.jsonl from `softhate seeds`).")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for the standpoints and hard items.")],
    extract_with: Annotated[str, typer.Option("--extract-with", help="Model that extracts standpoint and target.")],
    votes: Annotated[
        list[Path] | None, typer.Option("--votes", help="Detector judgements of the seeds (repeatable).")
    ] = None,
    more_than: Annotated[
        int | None, typer.Option(help="Keep seeds that more than this many detectors call hate (default: n // 2).")
    ] = None,
    nli: Annotated[str | None, typer.Option("--nli", help="NLI scorer of the bidirectional entailment check.")] = None,
    no_check: Annotated[bool, typer.Option("--no-check", help="Skip the bidirectional entailment check.")] = False,
    min_group: Annotated[int, typer.Option(help="Groups with fewer extracted standpoints are dropped.")] = 20,
    threshold: Annotated[float, typer.Option(help="Entailment both ways must reach this probability.")] = 0.6,
    groups: Annotated[Path | None, typer.Option(help="Target-group taxonomy (JSON; default: the bundled one).")] = None,
    language: Language = "en",
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: Concurrency = 16,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Detector vote (strict majority), standpoint and target extraction by an LLM, target
    groups resolved through the taxonomy, and one medoid standpoint per group that entails
    its source sentence both ways. Writes extractions.jsonl, standpoints.jsonl, hard.jsonl
    (each standpoint's source comment) and selection.json (members, drops, every check).

    Example: [bold]verimod softhate standpoints seeds.jsonl -o sh/ --extract-with openai:big --nli openai:nli[/bold]
    """
    from verimod.tasks.softhate.detection_runs import load_judgements
    from verimod.tasks.softhate.groups import load_group_taxonomy
    from verimod.tasks.softhate.items import load_items, plain_record, write_plain_items
    from verimod.tasks.softhate.seed_selection import strict_majority
    from verimod.tasks.softhate.seeds import SeedItem
    from verimod.tasks.softhate.standpoints import (
        entailment_from_nli,
        extract_standpoints,
        extraction_to_record,
        select_group_standpoints,
    )

    with bad_input_exits():
        choice("--language", language, ("en", "zh"))
        if nli is None and not no_check:
            raise InputError.at("--nli", None, None, "give --nli SPEC for the entailment check, or --no-check")
        taxonomy = load_group_taxonomy(groups)
        seeds = [s for s in load_items([seeds_path]) if s.item.gold == "hate"]
        counts: dict[str, int] = {"hate seeds": len(seeds)}
        if votes:
            lines = [j for path in votes for j in load_judgements(path) if j.run == 0]
            detectors = sorted({j.model for j in lines})
            label = {(j.model, j.item_id): ("invalid" if j.error else j.label) for j in lines}
            matrix = [[label.get((d, s.id)) for s in seeds] for d in detectors]
            try:
                vote = strict_majority(matrix, more_than)
            except ValueError as exc:
                raise InputError.at("--more-than", None, None, str(exc)) from None
            seeds = [s for s, keep in zip(seeds, vote.keep.tolist(), strict=True) if keep]
            counts |= {"detectors": len(detectors), "more than": vote.more_than, "kept by the vote": len(seeds)}
        scorers = Scorers(base_url, api_key_env)
        extractor = scorers.backend(extract_with, "--extract-with")
        nli_scorer = None if nli is None else scorers.nli(nli, language)
    by_id = {s.id: s for s in seeds}
    seed_items = [SeedItem(s.id, s.text, "hate", "seeds", s.item.group) for s in seeds]
    engine = EngineConfig(max_concurrency=max_concurrency)

    async def run_all(cache: Any) -> Any:
        try:
            extractions = await extract_standpoints(
                seed_items, extractor, language=cast(Any, language), engine=engine, cache=cache
            )
            entailment = None if nli_scorer is None else entailment_from_nli(nli_scorer)
            selection = await select_group_standpoints(
                extractions, taxonomy, entailment=entailment, min_group=min_group, threshold=threshold
            )
            return extractions, selection
        finally:
            await scorers.aclose()

    extractions, selection = run_with_backend(run_all, scorers.backends, not no_cache)
    write_jsonl(out_dir / "extractions.jsonl", (extraction_to_record(e) for e in extractions))
    write_jsonl(
        out_dir / "standpoints.jsonl", (s.model_dump(mode="json", exclude_none=True) for s in selection.standpoints)
    )
    hard = []
    for standpoint in selection.standpoints:
        source = by_id.get(standpoint.source_id or "")
        if source is not None:
            target = standpoint.target
            hard.append(plain_record(source, domain=target.level1.value, group=target.level2,
                                     standpoint_id=standpoint.id))  # fmt: skip
    write_plain_items(out_dir / "hard.jsonl", hard)
    counts |= {
        "extracted": sum(1 for e in extractions if e.standpoint is not None),
        "extraction failed": sum(1 for e in extractions if e.standpoint is None),
        "groups kept": len(selection.standpoints),
        "groups dropped": len(selection.dropped),
    }
    report = {"counts": counts, "members": selection.members, "dropped": selection.dropped, "checks": selection.checks}
    (out_dir / "selection.json").write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if not quiet:
        say(f"{len(selection.standpoints)} standpoints → {out_dir / 'standpoints.jsonl'}; {json.dumps(counts)}")
        for group, reason in selection.dropped.items():
            say(f"  dropped {group}: {reason}")
