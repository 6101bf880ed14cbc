"""``verimod eval``: evaluate a moderation model on a VARM data set (the main job)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.table import Table

from verimod.cli.backend_options import train_baseline_if_needed
from verimod.cli.common import EncodingOption, QuietOption, bad_input_exits, console, err_console
from verimod.cli.progress import RunProgress
from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig
from verimod.core.errors import InputError
from verimod.core.registry import UnknownNameError
from verimod.core.runs import RunStore, resolve_run_dir
from verimod.models.base import (
    BackendError,
    BackendOptions,
    GenerationParams,
    ModelBackend,
    ModelRequest,
    StructuredOutput,
)
from verimod.models.registry import create_backend
from verimod.report.tables import percent, varm_scores_table
from verimod.tasks.varm.evaluate import (
    REPEAT_METRICS,
    EvalSettings,
    execute,
    prepare_run,
    resume_run,
    score_run,
    settings_of,
    start_run,
)
from verimod.tasks.varm.prompts import DEFAULT_SHOTS, SETTINGS, PromptTemplate
from verimod.tasks.varm.scorer import VarmScores
from verimod.train.adapter_check import prompt_mismatch

#: exit codes (README, "Evaluating a model"): 0 every sample answered; 1 every sample failed;
#: 2 bad input (or the run is in use by another process); 3 some samples failed (scores written);
#: 130 Ctrl-C, 143 SIGTERM (the run is marked interrupted and can be resumed)
EXIT_ALL_FAILED = 1
EXIT_SOME_FAILED = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


def _json_option(value: str | None, name: str) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        data = json.loads(Path(value[1:]).read_text(encoding="utf-8") if value.startswith("@") else value)
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError.at(name, None, None, f"not valid JSON (or @file): {exc}") from None
    if not isinstance(data, dict):
        raise InputError.at(name, None, None, "must be a JSON object")
    return data


def _backend(settings: EvalSettings) -> ModelBackend:
    try:
        return create_backend(settings.model, settings.backend_options)
    except UnknownNameError as exc:
        raise InputError.at("--model", None, None, str(exc)) from None
    except BackendError as exc:
        raise InputError.at("--model", None, None, str(exc)) from None
    except ImportError as exc:
        raise InputError.at("--model", None, None, f"{exc}") from None


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be: the run stops the same way."""


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM stops the command as Ctrl-C does (raised as :class:`_Terminated`)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _sigterm_cancels(task: asyncio.Task[Any] | None) -> Iterator[Callable[[], bool]]:
    """Inside a running event loop: SIGTERM cancels ``task`` (as asyncio does with Ctrl-C), so
    every request task ends cleanly instead of one of them dying with the exception. Yields a
    function telling whether SIGTERM came; the previous handler is restored on the way out."""
    loop = asyncio.get_running_loop()
    came = False

    def cancel() -> None:
        nonlocal came
        came = True
        if task is not None:
            task.cancel()

    previous = signal.getsignal(signal.SIGTERM)
    try:
        loop.add_signal_handler(signal.SIGTERM, cancel)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or not POSIX
        yield lambda: came
        return
    try:
        yield lambda: came
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, previous)  # asyncio leaves the default (death) behind


def _run(
    store: RunStore,
    backend: ModelBackend,
    requests: Sequence[ModelRequest],
    template: PromptTemplate,
    use_cache: bool,
    quiet: bool,
) -> int:
    """Send the requests with a progress bar; return how many answers the cache gave.
    Ctrl-C or SIGTERM marks the run interrupted (resumable) and exits 130 or 143."""
    cache = ResponseCache() if use_cache else None
    hits = 0
    terminated = False

    async def send(progress: RunProgress) -> None:
        nonlocal hits, terminated
        with _sigterm_cancels(asyncio.current_task()) as signalled:
            try:
                stats = await execute(store, backend, requests, template, cache, progress.advance)
                hits = stats.cache_hits
            finally:
                terminated = signalled()
                await backend.aclose()

    try:
        with RunProgress(len(requests), f"{store.manifest.model} · {store.manifest.setting_label}", quiet) as progress:
            try:
                asyncio.run(send(progress))
            except asyncio.CancelledError:
                if not terminated:
                    raise
                raise _Terminated() from None
    except KeyboardInterrupt as stop:
        store.manifest.status = "interrupted"
        store.save_manifest()
        store.release()
        what = "terminated" if isinstance(stop, _Terminated) else "interrupted"
        typer.echo(f"{what}; resume with: verimod eval --resume {store.directory}", err=True)
        raise typer.Exit(EXIT_TERMINATED if isinstance(stop, _Terminated) else EXIT_INTERRUPTED) from None
    finally:
        if cache is not None:
            cache.close()
    return hits


def _repeats_table(repeats: dict[str, Any]) -> Table:
    """Mean ± sample sd (min – max) of the headline metrics over the repeats."""
    table = Table(title=f"over {repeats['count']} repeats (%)", show_header=True, header_style="bold")
    for column in ("metric", "mean", "sd", "min", "max"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for name in REPEAT_METRICS:
        row = repeats["metrics"][name]
        table.add_row(name, *(percent(row[key]) for key in ("mean", "sd", "min", "max")))
    return table


def _transport_overrides(
    store: RunStore,
    base_url: list[str] | None,
    api_key_env: str | None,
    max_concurrency: int | None,
    timeout: float | None,
    retries: int | None,
    retry_after_max: float | None,
) -> EvalSettings:
    """A resumed run's settings, with the options that cannot change an answer overridden
    (where the server is, its key, how hard to push it); recorded in the manifest."""
    manifest = store.manifest
    engine = manifest.engine | {
        k: v
        for k, v in {
            "max_concurrency": max_concurrency,
            "request_timeout_s": timeout,
            "max_retries": retries,
            "retry_after_max_s": retry_after_max,
        }.items()
        if v is not None
    }
    options = manifest.backend_options | {
        k: v
        for k, v in {
            "base_urls": tuple(base_url or ()) or None,
            "api_key_env": api_key_env,
            "request_timeout_s": timeout,
        }.items()
        if v is not None
    }
    manifest.engine = EngineConfig.model_validate(engine).model_dump()
    manifest.backend_options = BackendOptions.model_validate(options).model_dump()
    store.save_manifest()
    return settings_of(manifest)


def eval_command(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="Model spec: baseline | openai:NAME | gguf:PATH | hf:PATH-OR-ID | hfcls:PATH-OR-ID | scripted:FILE.",
        ),
    ] = "baseline",
    data: Annotated[
        str | None,
        typer.Option(
            help="References: a bundled set (varm-open, starter), JSONL, Parquet, datasets folder or "
            "hf:NAME[:SPLIT] (default: varm-open, the open set of real comments)."
        ),
    ] = None,
    split: Annotated[str | None, typer.Option(help="Only items of this split (a bundled set's default: test).")] = None,
    setting: Annotated[str, typer.Option(help=f"Prompt setting: {' | '.join(SETTINGS)}.")] = "zero-shot",
    shots: Annotated[int, typer.Option(help="Examples for k-shot.")] = DEFAULT_SHOTS,
    train: Annotated[
        str | None,
        typer.Option(
            help="k-shot examples (default: the train split of the evaluated bundled set, else starter train)."
        ),
    ] = None,
    prompt_template: Annotated[str | None, typer.Option(help="Your own prompt template (JSON).")] = None,
    limit: Annotated[int | None, typer.Option(help="Evaluate only the first N items.")] = None,
    repeats: Annotated[
        int,
        typer.Option(
            help="Samples per item, for --temperature > 0: repeat r is sent with seed + r; the scores give "
            "the mean and spread over repeats."
        ),
    ] = 1,
    disputed: Annotated[
        str,
        typer.Option(
            help="Items whose annotators dispute the source's label (varm-open: meta.disputed): keep (scored "
            "against the source), drop, or reading (scored against the annotators' reading)."
        ),
    ] = "keep",
    base_url: Annotated[
        list[str] | None, typer.Option("--base-url", help="OpenAI-compatible server URL (repeat for replicas).")
    ] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding the API key.")] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (0: greedy).")] = 0.0,
    top_p: Annotated[float | None, typer.Option(help="Nucleus sampling.")] = None,
    seed: Annotated[int, typer.Option(help="Generation seed.")] = 0,
    max_tokens: Annotated[int, typer.Option(help="Maximum new tokens.")] = 512,
    stop: Annotated[list[str] | None, typer.Option("--stop", help="Stop string (repeatable).")] = None,
    json_schema: Annotated[str | None, typer.Option(help="Structured output: a JSON schema (JSON or @file).")] = None,
    regex: Annotated[
        str | None, typer.Option(help="Structured output: a regular expression (server support needed).")
    ] = None,
    extra_body: Annotated[str | None, typer.Option(help="Extra request-body fields (JSON or @file).")] = None,
    constrain: Annotated[
        str,
        typer.Option(
            help="Constrained decoding: none, or anchors (the model can only write free text with the six "
            "anchors in order and admissible values; gguf: GBNF, hf: token mask, openai: the server's "
            "structured-output field)."
        ),
    ] = "none",
    max_concurrency: Annotated[int | None, typer.Option(help="Requests in flight at most [default: 32].")] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds per request attempt to a server [default: 120]; in-process models are not timed out."
        ),
    ] = None,
    retries: Annotated[int | None, typer.Option(help="Retries of a failed request [default: 6].")] = None,
    retry_after_max: Annotated[
        float | None,
        typer.Option(
            help="Longest wait, in seconds, for a server's Retry-After (honoured as sent up to this) [default: 120]."
        ),
    ] = None,
    adapter: Annotated[str | None, typer.Option(help="LoRA adapter directory (hf).")] = None,
    threads: Annotated[int | None, typer.Option(help="CPU threads (gguf, hf).")] = None,
    context_size: Annotated[int | None, typer.Option(help="Context size (gguf).")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Batch size (hf).")] = None,
    device: Annotated[str | None, typer.Option(help="Device (hf): cpu, cuda, cuda:1 …")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache.")] = False,
    runs_dir: Annotated[
        Path, typer.Option(help="Where run directories are created (and --resume ids are looked up).")
    ] = Path("runs"),
    resume: Annotated[
        Path | None,
        typer.Option(
            help="Complete an interrupted or failed run: its directory, id or id prefix (--base-url, --api-key-env, "
            "--max-concurrency, --timeout, --retries and --retry-after-max may be given anew; nothing else changes)."
        ),
    ] = None,
    json_out: Annotated[str | None, typer.Option("--json", help="Write the metrics as JSON ('-': stdout).")] = None,
    leakage_check: Annotated[
        bool,
        typer.Option(
            "--leakage-check/--no-leakage-check",
            help="Warn when the texts near-duplicate the training texts of a baseline model.",
        ),
    ] = True,
    encoding: EncodingOption = None,
    quiet: QuietOption = False,
) -> None:
    """Evaluate a model: prompts → model → anchored rationales → parsed records → scores.

    With no arguments: the embedded baseline model on the test split of varm-open, the bundled
    open reference set of real Chinese comments (1,650 items).

    Example: [bold]verimod eval --model openai:qwen2.5-7b-instruct --base-url http://localhost:8000/v1
    --setting taxonomy --data test.jsonl --limit 200[/bold]

    Sampling, three answers per item, on a fleet of two servers: [bold]verimod eval --model openai:qwen2.5-7b-instruct
    --base-url http://gpu1:8000/v1 --base-url http://gpu2:8000/v1 --temperature 0.7 --repeats 3[/bold]

    Exit codes: 0 every sample answered; 1 every sample failed; 2 bad input, or the run is in use by
    another process; 3 some samples failed (scored as wrong, scores written); 130 Ctrl-C, 143 SIGTERM
    (the run is interrupted and resumable).

    Constrained: [bold]verimod eval --model gguf:qwen2.5-0.5b-instruct-q4_k_m.gguf --constrain anchors[/bold]
    """
    with _sigterm_as_interrupt():
        try:
            with bad_input_exits():
                if resume is not None:
                    store, requests, template = resume_run(resolve_run_dir(resume, runs_dir))
                    settings = _transport_overrides(
                        store, base_url, api_key_env, max_concurrency, timeout, retries, retry_after_max
                    )
                else:
                    settings = _settings(
                        model=model,
                        setting=setting,
                        shots=shots,
                        prompt_template=prompt_template,
                        data=data,
                        split=split,
                        train=train,
                        limit=limit,
                        repeats=repeats,
                        disputed=disputed,
                        constrain=constrain,
                        encoding=encoding,
                        temperature=temperature,
                        top_p=top_p,
                        seed=seed,
                        max_tokens=max_tokens,
                        stop=stop,
                        json_schema=json_schema,
                        regex=regex,
                        extra_body=extra_body,
                        max_concurrency=max_concurrency,
                        timeout=timeout,
                        retries=retries,
                        retry_after_max=retry_after_max,
                        base_url=base_url,
                        api_key_env=api_key_env,
                        adapter=adapter,
                        threads=threads,
                        context_size=context_size,
                        batch_size=batch_size,
                        device=device,
                    )
                    prepared = prepare_run(settings, spool_folder=runs_dir)
                backend = _backend(settings)
                train_baseline_if_needed(backend, quiet)
                if resume is None:
                    store = start_run(settings, prepared, backend, runs_dir)
                    requests, template = prepared.requests, prepared.template
                mismatch = prompt_mismatch(settings.backend_options.adapter, template.sha256)
                if mismatch is not None:
                    err_console.print(mismatch, highlight=False, markup=False, soft_wrap=True)
                if leakage_check and hasattr(backend, "leakage_warning"):  # models that know their training texts
                    warning = backend.leakage_warning(
                        [r.sample_id for r in requests], [r.input_text or "" for r in requests]
                    )
                    if warning:
                        typer.echo(f"warning: {warning}", err=True)
                if not quiet:
                    status = err_console if json_out == "-" else console  # stdout holds only the JSON then
                    status.print(f"run {store.directory}: {len(requests)} sample(s) to request", highlight=False)
                hits = _run(store, backend, requests, template, not no_cache, quiet)
                scores, _ = score_run(store, keep_items=False)
                stored = store.scores() or {}
                store.release()
        except _Terminated:  # before or after the requests: the run (if any) is resumable
            typer.echo("terminated", err=True)
            raise typer.Exit(EXIT_TERMINATED) from None
    _report(store, scores, stored.get("repeats"), hits, settings.params.temperature, json_out, quiet)


def _settings(
    *,
    model: str,
    setting: str,
    shots: int,
    prompt_template: str | None,
    data: str | None,
    split: str | None,
    train: str | None,
    limit: int | None,
    repeats: int,
    disputed: str,
    constrain: str,
    encoding: str | None,
    temperature: float,
    top_p: float | None,
    seed: int,
    max_tokens: int,
    stop: list[str] | None,
    json_schema: str | None,
    regex: str | None,
    extra_body: str | None,
    max_concurrency: int | None,
    timeout: float | None,
    retries: int | None,
    retry_after_max: float | None,
    base_url: list[str] | None,
    api_key_env: str | None,
    adapter: str | None,
    threads: int | None,
    context_size: int | None,
    batch_size: int | None,
    device: str | None,
) -> EvalSettings:
    """The settings of a new run from the command-line options (a bad value: :class:`InputError`
    naming the option)."""
    try:
        structured = None
        if json_schema is not None or regex is not None:
            structured = StructuredOutput(json_schema=_json_option(json_schema, "--json-schema"), regex=regex)
        return EvalSettings(
            model=model,
            setting=setting,
            shots=shots,
            prompt_template=prompt_template,
            data=data,
            split=split,
            train=train,
            limit=limit,
            repeats=repeats,
            disputed=disputed,  # type: ignore[arg-type]  # checked by the model
            constrain=constrain,
            encoding=encoding,
            params=GenerationParams(
                temperature=temperature,
                top_p=top_p,
                max_tokens=max_tokens,
                seed=seed,
                stop=tuple(stop or ()),
                structured=structured,
                extra_body=_json_option(extra_body, "--extra-body") or {},
            ),
            engine=EngineConfig(
                max_concurrency=32 if max_concurrency is None else max_concurrency,
                max_retries=6 if retries is None else retries,
                request_timeout_s=120.0 if timeout is None else timeout,
                retry_after_max_s=120.0 if retry_after_max is None else retry_after_max,
            ),
            backend_options=BackendOptions(
                base_urls=tuple(base_url or ()),
                api_key_env=api_key_env,
                request_timeout_s=120.0 if timeout is None else timeout,
                adapter=str(Path(adapter).expanduser().resolve()) if adapter else None,
                threads=threads,
                context_size=context_size,
                batch_size=batch_size,
                device=device,
            ),
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        option = "--" + str(error["loc"][-1]).replace("_", "-")
        raise InputError.at(option, None, None, f"{error['msg']} (got {error.get('input')!r})") from None


def _report(
    store: RunStore,
    scores: VarmScores,
    repeats: dict[str, Any] | None,
    cache_hits: int,
    temperature: float,
    json_out: str | None,
    quiet: bool,
) -> None:
    """Print or write the scores, warn about cached samples, and exit with the run's code."""
    manifest = store.manifest
    if json_out is not None:
        payload = scores.model_dump() | ({"repeats": repeats} if repeats else {})
        text = json.dumps(payload, ensure_ascii=False, indent=2)
        if json_out == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(json_out).write_text(text + "\n", encoding="utf-8")
    if not quiet and json_out != "-":
        title = f"{manifest.model_label} · {manifest.setting_label}" + (" · repeat 0" if repeats else "")
        console.print(varm_scores_table(scores, title=title))
        if repeats:
            console.print(_repeats_table(repeats))
        console.print(f"status {manifest.status}; run directory: {store.directory}", highlight=False)
    if cache_hits and temperature > 0:
        typer.echo(
            f"warning: {cache_hits} answer(s) came from the response cache: at temperature {temperature:g} these "
            "are earlier samples, not new ones; pass another --seed for new samples, or --no-cache",
            err=True,
        )
    if manifest.status == "failed":
        typer.echo(
            f"error: every sample failed ({manifest.counts.errors} errors, see {store.directory}/samples.jsonl); "
            f"fix the cause and resume with: verimod eval --resume {store.directory}",
            err=True,
        )
        raise typer.Exit(EXIT_ALL_FAILED)
    if manifest.status == "completed_with_errors":
        typer.echo(
            f"error: {manifest.counts.errors} sample(s) failed and are scored as wrong (exit code "
            f"{EXIT_SOME_FAILED}); retry them with: verimod eval --resume {store.directory}",
            err=True,
        )
        raise typer.Exit(EXIT_SOME_FAILED)


def register(app: typer.Typer) -> None:
    """Add ``eval`` to the root application."""
    app.command("eval", rich_help_panel="Evaluate")(eval_command)
