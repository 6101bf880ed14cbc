"""``verimod softhate standpoints | variants`` and the scorers shared with ``generate``
(:mod:`verimod.cli.softhate_generate`): building SoftHateBench items.

Scorers are chosen by spec: ``--nli gguf:PATH`` asks a local model the NLI question and reads
the three labels' token log-probabilities; any other backend spec is asked through the engine
(``label_probs`` of a classifier, else the answer text). ``--lm`` (repeatable) are the scorer
LMs — surprisal and next-token entropy need per-token log-probabilities: a GGUF file, an
``openai:NAME[@URL]`` server that gives them (vLLM, llama.cpp server; checked before the run)
or ``table:FILE``; without one, the generator scores with its own GGUF file or server.
``--safety SPEC[=THRESHOLD]`` (repeatable) builds the safety-filter ensemble; generation
refuses to run without one unless ``--no-safety`` says so explicitly.
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
from verimod.tasks.softhate.bounded import BoundedBackend

Record = TypeVar("Record", bound=BaseModel)

Generator = Annotated[str, typer.Option("--generator", "-g", help="Generator model spec.")]
Nli = Annotated[str, typer.Option("--nli", help="NLI scorer: gguf:PATH (log-probabilities) or a backend spec.")]
Lm = Annotated[
    list[str] | None,
    typer.Option(
        "--lm",
        help="Scorer LM (repeatable): a GGUF file, openai:NAME[@URL] (a vLLM or llama.cpp server's "
        "token log-probabilities), or table:FILE of scores.",
    ),
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

    def __init__(self, base_url: list[str] | None, api_key_env: str | None, bound: int | None = None) -> None:
        """``bound``: at most this many requests in flight on each model, across all callers."""
        self._base_url, self._api_key_env, self._bound = base_url, api_key_env, bound
        self.backends: list[ModelBackend] = []
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._llamas: dict[Path, Any] = {}
        self.http_lms: list[Any] = []

    def backend(self, spec: str, option: str) -> ModelBackend:
        """A backend of ``spec``, closed with the others."""
        backend = backend_from_options(spec, self._base_url, self._api_key_env, option)
        self.backends.append(backend)
        return backend if self._bound is None else BoundedBackend(backend, self._bound)

    def nli(self, spec: str, language: str) -> Any:
        """The NLI scorer of ``--nli``."""
        from verimod.tasks.softhate.scorers import BackendNliScorer, LlamaCppNliScorer

        if spec.startswith("gguf:"):
            return LlamaCppNliScorer(
                self._llama(Path(spec.removeprefix("gguf:")), "--nli"), language=cast(Any, language)
            )
        return BackendNliScorer(self.backend(spec, "--nli"), language=cast(Any, language))

    def lms(self, specs: Sequence[str], generator: ModelBackend, top_k: int = 20) -> list[Any]:
        """The scorer LMs of ``--lm`` (default: the generator's own GGUF file, or the generator's
        server when it is an ``openai:`` model)."""
        if specs:
            return [self._lm(spec, top_k) for spec in specs]
        generator = getattr(generator, "inner", generator)  # a BoundedBackend's own backend
        path = getattr(generator, "path", None)
        if generator.prefix == "openai":
            return [self._http_lm(generator, top_k)]
        if generator.prefix != "gguf" or not isinstance(path, Path):
            raise InputError.at("--lm", None, None, "give a scorer LM (GGUF file, openai:NAME or table:FILE)")
        return [self._llama(path, "--lm")]

    def _lm(self, spec: str, top_k: int) -> Any:
        if spec.startswith("table:"):
            return _lm_table(Path(spec.removeprefix("table:")))
        if spec.startswith("openai:"):
            name, _, url = spec.partition("@")
            urls = [url] if url else self._base_url
            backend = backend_from_options(name, urls, self._api_key_env, "--lm")
            self.backends.append(backend)
            return self._http_lm(backend, top_k)
        return self._llama(Path(spec), "--lm")

    def _http_lm(self, backend: ModelBackend, top_k: int) -> Any:
        from verimod.tasks.softhate.http_scorer import HttpLanguageScorer

        try:
            scorer = HttpLanguageScorer(backend, top_k=top_k, limit=self._bound)
        except ValueError as exc:
            raise InputError.at("--lm-top-k", None, None, str(exc)) from None
        self.http_lms.append(scorer)
        return scorer

    async def probe(self, cache: Any) -> None:
        """Check that every HTTP scorer LM's server gives log-probabilities (an
        :class:`~verimod.core.errors.InputError` naming ``--lm`` otherwise) and give it the cache."""
        from verimod.tasks.softhate.scorers import ScoringError

        for scorer in self.http_lms:
            scorer.cache = cache
            try:
                await scorer.probe()
            except ScoringError as exc:
                raise InputError.at("--lm", None, None, str(exc)) from None

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
        scorers = Scorers(base_url, api_key_env, max_concurrency)
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
        int | None,
        typer.Option(help="Keep seeds that more than this many detectors agree on (default: the paper's > 7/11)."),
    ] = None,
    per: Annotated[
        str, typer.Option(help="seed: one standpoint per verified seed (the paper) | group: one medoid per group.")
    ] = "seed",
    polarity: Annotated[
        str, typer.Option(help="hate: hostile standpoints of hate seeds | non_hate: claims of non-hate controls.")
    ] = "hate",
    nli: Annotated[str | None, typer.Option("--nli", help="NLI scorer of the bidirectional entailment check.")] = None,
    no_check: Annotated[bool, typer.Option("--no-check", help="Skip the bidirectional entailment check.")] = False,
    min_group: Annotated[int, typer.Option(help="Groups with fewer extracted standpoints are dropped.")] = 20,
    threshold: Annotated[float, typer.Option(help="Entailment both ways must reach this probability.")] = 0.6,
    groups: Annotated[
        Path | None, typer.Option(help="Target-group taxonomy (JSON; default: the bundled one of --language).")
    ] = None,
    fuzzy_cutoff: Annotated[
        float, typer.Option(help="Fuzzy target matching: least rapidfuzz ratio (0 turns it off).")
    ] = 85.0,
    language: Language = "en",
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: Concurrency = 16,
    no_cache: NoCache = False,
    quiet: QuietOption = False,
) -> None:
    """Detector vote (more than 7/11 by default), standpoint and target extraction by an LLM,
    target groups resolved through the taxonomy (exact, rewritten, demonym, fuzzy), groups of
    fewer than --min-group dropped, and the bidirectional entailment check. --per seed keeps one
    standpoint per verified seed (id sp-<seed id>, paired with the seed's Hard item); --per
    group one medoid per group. --polarity non_hate builds the non-hate controls from non-hate
    seeds (the vote keeps seeds the detectors agree are not hate). Writes extractions.jsonl,
    targets.jsonl (how every target phrase resolved), standpoints.jsonl, hard.jsonl and
    selection.json (counts, members, drops, every check).

    Example: [bold]verimod softhate standpoints seeds.jsonl -o sh/ --extract-with openai:big --nli openai:nli[/bold]

    Example: [bold]verimod softhate standpoints cold_seeds.jsonl -o sh/ --extract-with openai:big --nli openai:nli
    --language zh --votes d1.jsonl --votes d2.jsonl[/bold]
    """
    from verimod.tasks.softhate.detection_runs import load_judgements
    from verimod.tasks.softhate.groups import load_group_taxonomy
    from verimod.tasks.softhate.items import load_items, plain_record, write_plain_items
    from verimod.tasks.softhate.seed_selection import strict_majority
    from verimod.tasks.softhate.seed_standpoints import select_seed_standpoints
    from verimod.tasks.softhate.seeds import SeedItem
    from verimod.tasks.softhate.standpoints import (
        entailment_from_nli,
        extract_standpoints,
        extraction_to_record,
        select_group_standpoints,
    )

    with bad_input_exits():
        choice("--language", language, ("en", "zh"))
        choice("--per", per, ("seed", "group"))
        choice("--polarity", polarity, ("hate", "non_hate"))
        if nli is None and not no_check:
            raise InputError.at("--nli", None, None, "give --nli SPEC for the entailment check, or --no-check")
        taxonomy = load_group_taxonomy(groups, cast(Any, language), fuzzy_cutoff or None)
        seeds = [s for s in load_items([seeds_path]) if s.item.gold == polarity]
        counts: dict[str, Any] = {f"{polarity} seeds": len(seeds)}
        if votes:
            lines = [j for path in votes for j in load_judgements(path) if j.run == 0]
            detectors = sorted({j.model for j in lines})
            label = {(j.model, j.item_id): ("invalid" if j.error else j.label) for j in lines}
            agree = (lambda v: v) if polarity == "hate" else (lambda v: {"non_hate": "hate"}.get(v or "", "non_hate"))
            matrix = [[agree(label.get((d, s.id))) for s in seeds] for d in detectors]
            try:
                vote = strict_majority(matrix, more_than)
            except ValueError as exc:
                raise InputError.at("--more-than", None, None, str(exc)) from None
            seeds = [s for s, keep in zip(seeds, vote.keep.tolist(), strict=True) if keep]
            counts |= {"detectors": len(detectors), "more than": vote.more_than, "kept by the vote": len(seeds)}
        scorers = Scorers(base_url, api_key_env, max_concurrency)
        extractor = scorers.backend(extract_with, "--extract-with")
        nli_scorer = None if nli is None else scorers.nli(nli, language)
    by_id = {s.id: s for s in seeds}
    seed_items = [SeedItem(s.id, s.text, cast(Any, polarity), "seeds", s.item.group) for s in seeds]
    engine = EngineConfig(max_concurrency=max_concurrency)

    async def run_all(cache: Any) -> Any:
        try:
            extractions = await extract_standpoints(
                seed_items, extractor, language=cast(Any, language), polarity=cast(Any, polarity), engine=engine,
                cache=cache,
            )  # fmt: skip
            entailment = None if nli_scorer is None else entailment_from_nli(nli_scorer)
            selection: Any
            if per == "seed":
                selection = await select_seed_standpoints(
                    extractions, taxonomy, entailment=entailment, min_group=min_group, threshold=threshold,
                    gold=cast(Any, polarity), concurrency=max_concurrency,
                )  # fmt: skip
            else:
                selection = await select_group_standpoints(
                    extractions, taxonomy, entailment=entailment, min_group=min_group, threshold=threshold
                )
            return extractions, selection
        finally:
            await scorers.aclose()

    with bad_input_exits():
        try:
            extractions, selection = run_with_backend(run_all, scorers.backends, not no_cache)
        except ValueError as exc:  # seed ids that give one standpoint id
            raise InputError.at(str(seeds_path), None, "id", str(exc)) from None
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / "extractions.jsonl", (extraction_to_record(e) for e in extractions))
    if per == "group":  # the medoid standpoints carry the polarity's gold too
        selection.standpoints[:] = [s.model_copy(update={"gold": polarity}) for s in selection.standpoints]
    write_jsonl(
        out_dir / "standpoints.jsonl", (s.model_dump(mode="json", exclude_none=True) for s in selection.standpoints)
    )
    resolutions = getattr(selection, "resolutions", None)
    if resolutions is not None:
        write_jsonl(out_dir / "targets.jsonl", resolutions)
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
        "standpoints": len(selection.standpoints),
        "groups dropped": len(selection.dropped),
    }
    if resolutions is not None:
        counts["resolved by"] = selection.method_counts()
    report = {"counts": counts, "members": selection.members, "dropped": selection.dropped, "checks": selection.checks}
    (out_dir / "selection.json").write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if not quiet:
        say(f"{len(selection.standpoints)} standpoints → {out_dir / 'standpoints.jsonl'}; "
            f"{json.dumps(counts, ensure_ascii=False)}")  # fmt: skip
        for group, reason in selection.dropped.items():
            say(f"  dropped {group}: {reason}")
