"""``verimod export lm-eval DIR``: verimod's protocols as task definitions of other tools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verimod.cli.common import EncodingOption, QuietOption, bad_input_exits, console
from verimod.tasks.varm.prompts import DEFAULT_SHOTS, SETTINGS

export_app = typer.Typer(help="verimod's protocols as tasks of other evaluation tools.", no_args_is_help=True)


@export_app.command("lm-eval")
def export_lm_eval_command(
    out: Annotated[Path, typer.Argument(help="The folder to write (lm-eval's --include_path).")],
    setting: Annotated[
        list[str] | None, typer.Option("--setting", help=f"Prompt setting (repeatable): {' | '.join(SETTINGS)}.")
    ] = None,
    data: Annotated[
        str | None,
        typer.Option(help="References: JSONL, Parquet, datasets folder or hf:NAME[:SPLIT] (default: starter)."),
    ] = None,
    split: Annotated[str | None, typer.Option(help="Only items of this split (starter default: test).")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N items.")] = None,
    shots: Annotated[int, typer.Option(help="Examples for k-shot.")] = DEFAULT_SHOTS,
    train: Annotated[str | None, typer.Option(help="Train data for k-shot examples (default: starter train).")] = None,
    prompt_template: Annotated[str | None, typer.Option(help="Your own prompt template (JSON).")] = None,
    max_tokens: Annotated[int, typer.Option(help="max_gen_toks of the tasks.")] = 512,
    prefix: Annotated[str, typer.Option(help="Task name prefix and tag.")] = "varm",
    hub: Annotated[
        bool, typer.Option("--hub", help="Read the hub data set named by --data hf:NAME:SPLIT instead of a copy.")
    ] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an earlier export in the folder.")] = False,
    encoding: EncodingOption = None,
    quiet: QuietOption = False,
) -> None:
    """Export VARM as lm-evaluation-harness tasks: one YAML per prompt setting (varm_zero_shot,
    varm_taxonomy, varm_k_shot; tag varm), the items as Parquet, and a small hook module whose
    prompts and metrics are verimod's (the numbers equal verimod score on the same outputs).

    Example: [bold]verimod export lm-eval lm_tasks/ --data test.jsonl[/bold] then
    [bold]lm_eval --model hf --model_args pretrained=Qwen/Qwen2.5-7B-Instruct --include_path lm_tasks/
    --tasks varm --apply_chat_template[/bold]
    """
    from verimod.integrations.lm_eval.export import export_lm_eval

    with bad_input_exits():
        result = export_lm_eval(
            out,
            settings=setting or SETTINGS,
            data=data,
            split=split,
            limit=limit,
            shots=shots,
            train=train,
            prompt_template=prompt_template,
            max_tokens=max_tokens,
            prefix=prefix,
            hub=hub,
            overwrite=overwrite,
        )
    if not quiet:
        console.print(
            f"{', '.join(result.tasks)} ({result.items} items) → {result.folder}; run: lm_eval --include_path "
            f"{result.folder} --tasks {prefix} --apply_chat_template --model …",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Add the ``export`` group to the root application."""
    app.add_typer(export_app, name="export", rich_help_panel="Evaluate")
