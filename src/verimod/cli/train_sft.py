"""``verimod train sft | merge``: CoT-SFT of a chat model on reference rationales (LoRA), and
merging the adapter for serving."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from verimod.cli.common import EncodingOption, QuietOption, bad_input_exits, console, emit_json, err_console, safe
from verimod.cli.train import select_split, train_app
from verimod.core.errors import InputError
from verimod.models.base import BackendError
from verimod.tasks.varm.io import load_references
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.starter import load_starter
from verimod.train.sft_loop import StepReport


def _records(path: Path | None, split: str, encoding: str | None, option: str) -> list[VarmReference]:
    """The records of ``split`` in ``path`` (every record when it has no splits); the starter
    set's split when no file is given. Records must carry a reference rationale."""
    if path is None:
        return load_starter(split)
    records = select_split(load_references(path, encoding), split, path)
    missing = [r for r in records if r.cot is None]
    if missing:
        message = f"CoT-SFT needs reference rationales; {len(missing)} record(s) have none (first: {missing[0].id!r})"
        raise InputError.at(str(path), None, "cot", message)
    if not records:
        raise InputError.at(option, None, None, f"{path} has no records")
    return records


def _progress(quiet: bool) -> tuple[Callable[[StepReport], None], Progress | None]:
    """The step callback: a progress bar on a terminal, else (a log file, CI, a pipe) one plain
    line at the first step, every evaluation, every 5 % of the steps and the last step —
    ``step 12/240 · loss 1.2345 · dev 1.1111 · lr 2.00e-04 · 35 s``; nothing with --quiet."""
    started = time.monotonic()
    last_dev = ["–"]

    def dev_text(report: StepReport) -> str:
        if report.dev_loss is not None:
            last_dev[0] = f"{report.dev_loss:.4f}"
        return last_dev[0]

    if quiet:
        return (lambda report: None), None
    if not err_console.is_terminal:

        def line(report: StepReport) -> None:
            dev = dev_text(report)
            every = max(1, report.total // 20)
            if report.step in (1, report.total) or report.dev_loss is not None or report.step % every == 0:
                err_console.print(
                    f"step {report.step}/{report.total} · loss {report.loss:.4f} · dev {dev} · "
                    f"lr {report.learning_rate:.2e} · {time.monotonic() - started:.0f} s",
                    highlight=False, markup=False, soft_wrap=True,
                )  # fmt: skip

        return line, None
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        TextColumn("loss {task.fields[loss]}  dev {task.fields[dev]}"), console=err_console,
    )  # fmt: skip
    task = progress.add_task("CoT-SFT steps", total=None, loss="–", dev="–")

    def bar(report: StepReport) -> None:
        if not progress.live.is_started:  # shown from the first step on: setup errors stay one line
            progress.start()
        progress.update(
            task, completed=report.step, total=report.total, loss=f"{report.loss:.4f}", dev=dev_text(report)
        )

    return bar, progress


@train_app.command("sft")
def sft(
    model: Annotated[str, typer.Option("--model", help="Base chat model: a transformers folder or hub id.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder: adapter/, checkpoints/, training.json.")],
    train: Annotated[
        Path | None, typer.Option("--train", help="Training references with rationales (default: the starter set).")
    ] = None,
    dev: Annotated[
        Path | None, typer.Option("--dev", help="Dev references for the dev loss (default: the starter set).")
    ] = None,
    train_split: Annotated[str, typer.Option(help="Split taken from --train when its records have splits.")] = "train",
    dev_split: Annotated[str, typer.Option(help="Split taken from --dev when its records have splits.")] = "dev",
    setting: Annotated[str, typer.Option(help="Prompt setting the model is trained with: zero-shot | taxonomy.")] = (
        "zero-shot"
    ),
    prompt_template: Annotated[
        Path | None, typer.Option(help="Your own prompt template (JSON, as for eval); evaluate with the same.")
    ] = None,
    lora_r: Annotated[int, typer.Option(help="LoRA rank r.")] = 16,
    lora_alpha: Annotated[float, typer.Option(help="LoRA alpha (scale alpha / r).")] = 32.0,
    lora_dropout: Annotated[float, typer.Option(help="LoRA dropout.")] = 0.05,
    target_modules: Annotated[
        str | None, typer.Option(help="Comma-separated module names (default: by architecture).")
    ] = None,
    learning_rate: Annotated[float, typer.Option("--lr", help="Peak learning rate (AdamW).")] = 2e-4,
    weight_decay: Annotated[float, typer.Option(help="AdamW weight decay.")] = 0.0,
    warmup_ratio: Annotated[float, typer.Option(help="Share of the steps with linear warm-up.")] = 0.03,
    epochs: Annotated[int, typer.Option(help="Passes over the training examples.")] = 3,
    max_steps: Annotated[int | None, typer.Option(help="Stop after this many optimizer steps.")] = None,
    batch_size: Annotated[int, typer.Option(help="Examples per micro-batch.")] = 4,
    grad_accum: Annotated[int, typer.Option(help="Micro-batches per optimizer step.")] = 4,
    max_length: Annotated[int, typer.Option(help="Longest example in tokens (longer ones are left out).")] = 1024,
    eval_every: Annotated[int, typer.Option(help="Dev loss (and a checkpoint) every K steps.")] = 50,
    patience: Annotated[int, typer.Option(help="Stop after this many evaluations without improvement.")] = 3,
    min_delta: Annotated[float, typer.Option(help="Smallest dev-loss decrease that counts.")] = 0.0,
    max_grad_norm: Annotated[float, typer.Option(help="Gradient clipping norm (0: none).")] = 1.0,
    gradient_checkpointing: Annotated[
        bool, typer.Option("--gradient-checkpointing", help="Trade compute for activation memory.")
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed: LoRA initialisation, data order, dropout.")] = 0,
    device: Annotated[str | None, typer.Option(help="cpu (default) or cuda / cuda:N (bfloat16).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the last checkpoint in --out.")] = False,
    json_out: Annotated[str | None, typer.Option("--json", help="Write the run summary as JSON ('-': stdout).")] = None,
    encoding: EncodingOption = None,
    quiet: QuietOption = False,
) -> None:
    """CoT-SFT: LoRA fine-tuning on (instruction + input → reference rationale), loss on the
    rationale only, cosine schedule with warm-up, dev loss every K steps, early stopping; the best
    adapter goes to OUT/adapter with its training config and data digests. Resumable.

    Evaluate it with [bold]verimod eval --model hf:BASE --adapter OUT/adapter[/bold].

    Example: [bold]verimod train sft --model /models/Qwen2.5-7B-Instruct --out sft/ --device cuda[/bold]
    """
    from verimod.train.errors import TrainingInputError
    from verimod.train.sft_config import SftConfig
    from verimod.train.sft_loop import train_sft

    with bad_input_exits():
        try:
            config = SftConfig(
                model=model, setting=setting, prompt_template=str(prompt_template) if prompt_template else None,
                lora_r=lora_r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                target_modules=tuple(t.strip() for t in target_modules.split(",") if t.strip())
                if target_modules else None,
                learning_rate=learning_rate, weight_decay=weight_decay, warmup_ratio=warmup_ratio, epochs=epochs,
                max_steps=max_steps, batch_size=batch_size, grad_accum=grad_accum, max_length=max_length,
                eval_every=eval_every, patience=patience, min_delta=min_delta,
                max_grad_norm=max_grad_norm or None, gradient_checkpointing=gradient_checkpointing, seed=seed,
            )  # fmt: skip
        except ValidationError as exc:
            error = exc.errors()[0]
            option = "--" + str(error["loc"][0]).replace("_", "-") if error["loc"] else "option"
            raise InputError.at(option, None, None, str(error["msg"])) from None
        train_refs = _records(train, train_split, encoding, "--train")
        dev_refs = _records(dev, dev_split, encoding, "--dev")
        if out.exists() and not out.is_dir():
            raise InputError.at(str(out), None, None, "--out must be a folder (a file of that name exists)")
        out.mkdir(parents=True, exist_ok=True)
        show, progress = _progress(quiet)
        try:
            result = train_sft(config, train_refs, dev_refs, out, device=device, resume=resume, on_step=show)
        except TrainingInputError as exc:
            raise InputError.at(exc.option, None, None, exc.message) from None
        except (ImportError, BackendError) as exc:  # a missing optional package
            raise InputError.at("--model", None, None, str(exc)) from None
        finally:
            if progress is not None and progress.live.is_started:
                progress.stop()
    summary = json.loads((out / "training.json").read_text(encoding="utf-8"))
    if json_out is not None:
        emit_json(json_out, summary)
    if quiet or json_out == "-":
        return
    ended = "stopped early" if result.stopped_early else "finished"
    console.print(
        f"{result.steps} of {result.total_steps} steps ({ended}) on {result.n_train} examples; dev loss "
        f"{result.initial_dev_loss:.4f} → best {result.best_dev_loss:.4f} at step {result.best_step}",
        highlight=False,
    )
    skipped = sum(len(v) for v in result.too_long.values())
    if skipped:
        console.print(f"{skipped} example(s) longer than --max-length left out (listed in training.json)")
    adapter = result.adapter.resolve()
    console.print("Adapter: ", safe(str(adapter), 1000), highlight=False, soft_wrap=True)
    console.print(
        f"Evaluate: verimod eval --model hf:{model} --adapter {adapter}", highlight=False, markup=False, soft_wrap=True
    )


@train_app.command("merge")
def merge(
    model: Annotated[str, typer.Option("--model", help="Base model: a transformers folder or hub id.")],
    adapter: Annotated[Path, typer.Option("--adapter", help="LoRA adapter folder (from train sft).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the merged model (safetensors + tokenizer).")],
    dtype: Annotated[
        str, typer.Option(help="Saved weights: auto (the base model's) | float32 | bfloat16 | float16.")
    ] = ("auto"),
    quiet: QuietOption = False,
) -> None:
    """Merge a LoRA adapter into its base model and save a plain transformers folder that any
    server loads (vLLM: [bold]vllm serve OUT[/bold]).

    Example: [bold]verimod train merge --model /models/Qwen2.5-7B-Instruct --adapter sft/adapter --out merged/[/bold]
    """
    from verimod.train.errors import TrainingInputError
    from verimod.train.merge import merge_adapter

    with bad_input_exits():
        try:
            folder = merge_adapter(model, adapter, out, dtype)
        except TrainingInputError as exc:
            raise InputError.at(exc.option, None, None, exc.message) from None
        except (ImportError, BackendError) as exc:  # a missing optional package
            raise InputError.at("--model", None, None, str(exc)) from None
    if not quiet:
        console.print("Merged model: ", safe(str(folder), 1000), highlight=False)
