"""``verimod export lm-eval DIR``: VARM as lm-evaluation-harness tasks.

The folder holds, for each prompt setting, ``<prefix>_<setting>.yaml`` (``varm_zero_shot`` …,
all tagged ``<prefix>``), the hook module ``verimod_varm.py`` (it binds
:mod:`verimod.integrations.lm_eval.hooks` to this folder), ``verimod_export.json`` (each
setting's prompt template, its sha256 and k-shot examples; the data's path, sha256 and item
count; the verimod and parser versions), the evaluated references as ``data/test.parquet``
and a README with the command. The items, prompts and examples are those ``verimod eval``
builds for the same options (:func:`verimod.tasks.varm.evaluate.prepare_run`).

With ``hub=True`` the tasks read the data set named by ``data`` (``hf:NAME:SPLIT``) instead
of a Parquet copy, so the folder stays small; the items must then be the whole split (no
``split`` filter, no ``limit``).

Generation: greedy (``do_sample: false``, ``temperature: 0``), ``max_gen_toks`` = ``max_tokens``
and no stop sequence (``until: []``; lm-eval would otherwise stop at a blank line, inside a
rationale). Run with ``--apply_chat_template`` so the model gets the system and user messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from verimod import __version__
from verimod.core.errors import InputError
from verimod.data.hf import HF_PREFIX, parse_hf_source
from verimod.data.hf_export import write_parquet
from verimod.integrations.lm_eval.hooks import METRIC_KEYS, SYSTEM_COLUMN, USER_COLUMN
from verimod.tasks.varm.evaluate import EvalSettings, PreparedRun, prepare_run
from verimod.tasks.varm.parser import PARSER_VERSION
from verimod.tasks.varm.prompts import SETTINGS

MODULE: Final = "verimod_varm"
EXPORT_FILE: Final = "verimod_export.json"
_FUNCTION = "__VERIMOD_FUNCTION__"
_TASK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class LmEvalExport:
    """What :func:`export_lm_eval` wrote."""

    folder: Path
    tasks: list[str]
    items: int
    data_file: Path | None


def _suffix(setting: str) -> str:
    return setting.replace("-", "_")


def _module_text(settings: Sequence[str]) -> str:
    docs = "".join(
        f"\n\ndef process_docs_{_suffix(s)}(dataset):\n"
        f'    """The documents with their {s} prompt columns."""\n'
        f'    return hooks.process_docs(dataset, _EXPORT, "{s}")\n'
        for s in settings
    )
    aggregations = "".join(f'{key} = hooks.AGGREGATIONS["{key}"]\n' for key in METRIC_KEYS)
    return (
        f'"""lm-evaluation-harness hooks of the VARM tasks in this folder, written by\n'
        f"`verimod export lm-eval` (verimod {__version__}): verimod renders the prompts, parses\n"
        f'the generations and scores them. Needs verimod installed where lm-eval runs."""\n\n'
        f"from pathlib import Path\n\n"
        f"from verimod.integrations.lm_eval import hooks\n\n"
        f'_EXPORT = Path(__file__).with_name("{EXPORT_FILE}")\n'
        f"{docs}\n\n"
        f"process_results = hooks.process_results\n"
        f"{aggregations}"
    )


def _task_yaml(
    name: str, prefix: str, setting: str, dataset: dict[str, Any], max_tokens: int, meta: dict[str, Any]
) -> str:
    config: dict[str, Any] = {
        "task": name,
        "tag": [prefix],
        **dataset,
        "output_type": "generate_until",
        "process_docs": f"{_FUNCTION}{MODULE}.process_docs_{_suffix(setting)}",
        "description": SYSTEM_COLUMN,
        "doc_to_text": USER_COLUMN,
        "doc_to_target": "id",
        "process_results": f"{_FUNCTION}{MODULE}.process_results",
        "num_fewshot": 0,
        "generation_kwargs": {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": max_tokens},
        "metric_list": [
            {"metric": key, "aggregation": f"{_FUNCTION}{MODULE}.{key}", "higher_is_better": True}
            for key in METRIC_KEYS
        ],
        "metadata": {"version": 1.0, "verimod": meta},
    }
    text = yaml.safe_dump(config, allow_unicode=True, sort_keys=False, width=1000)
    return text.replace(_FUNCTION, "!function ")  # the placeholder is only ever a whole value


def _prepared(setting: str, base: EvalSettings) -> PreparedRun:
    return prepare_run(base.model_copy(update={"setting": setting}))


def export_lm_eval(
    folder: str | Path,
    *,
    settings: Sequence[str] = SETTINGS,
    data: str | None = None,
    split: str | None = None,
    limit: int | None = None,
    shots: int = 4,
    train: str | None = None,
    prompt_template: str | None = None,
    max_tokens: int = 512,
    prefix: str = "varm",
    hub: bool = False,
    overwrite: bool = False,
) -> LmEvalExport:
    """Write the lm-eval task folder (see the module docstring)."""
    if not _TASK_NAME.match(prefix):
        raise InputError.at("--prefix", None, None, f"{prefix!r} is not a task name (letters, digits, _)")
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown or not settings:
        raise InputError.at("--setting", None, None, f"choose among {', '.join(SETTINGS)}; got {unknown or 'none'}")
    if max_tokens < 1:
        raise InputError.at("--max-tokens", None, None, f"must be at least 1, got {max_tokens}")
    hub_name: tuple[str, str] | None = None
    if hub:
        source, hub_split = parse_hf_source(data) if data and data.startswith(HF_PREFIX) else ("", None)
        if not source or hub_split is None or split is not None or limit is not None:
            message = "needs --data hf:NAME:SPLIT (the whole split: no --split, no --limit)"
            raise InputError.at("--hub", None, None, message)
        hub_name = (source, hub_split)
    out = Path(folder)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise InputError.at(str(out), None, None, "is not empty; pass --overwrite to replace an earlier export")
    base = EvalSettings(data=data, split=split, limit=limit, shots=shots, train=train, prompt_template=prompt_template)
    prepared = {setting: _prepared(setting, base) for setting in dict.fromkeys(settings)}
    first = next(iter(prepared.values()))
    out.mkdir(parents=True, exist_ok=True)
    data_file: Path | None = None
    if hub_name is not None:
        dataset: dict[str, Any] = {"dataset_path": hub_name[0], "test_split": hub_name[1]}
    else:
        data_file = write_parquet(first.references, out / "data" / "test.parquet")
        dataset = {
            "dataset_path": "parquet",
            "dataset_kwargs": {"data_files": {"test": str(data_file.resolve())}},
            "test_split": "test",
        }
    export: dict[str, Any] = {
        "verimod_version": __version__,
        "parser_version": PARSER_VERSION,
        "data": first.data,
        "settings": {
            setting: {
                "template": run.template.model_dump(),
                "prompt_sha256": run.template.sha256,
                "examples": [e.model_dump(exclude_none=True) for e in run.examples],
            }
            for setting, run in prepared.items()
        },
    }
    (out / EXPORT_FILE).write_text(json.dumps(export, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    (out / f"{MODULE}.py").write_text(_module_text(list(prepared)), encoding="utf-8")
    tasks = []
    for setting, run in prepared.items():
        name = f"{prefix}_{_suffix(setting)}"
        meta = {
            "setting": setting,
            "prompt_version": run.template.version,
            "prompt_sha256": run.template.sha256,
            "examples": [e.id for e in run.examples],
            "data_sha256": run.data.get("sha256"),
            "items": len(run.references),
            "verimod_version": __version__,
            "parser_version": PARSER_VERSION,
        }
        (out / f"{name}.yaml").write_text(
            _task_yaml(name, prefix, setting, dataset, max_tokens, meta), encoding="utf-8"
        )
        tasks.append(name)
    (out / "README.md").write_text(_readme(out, tasks, prefix), encoding="utf-8")
    return LmEvalExport(out, tasks, len(first.references), data_file)


def _readme(out: Path, tasks: Sequence[str], prefix: str) -> str:
    return (
        f"# VARM tasks for lm-evaluation-harness\n\n"
        f"Written by `verimod export lm-eval` (verimod {__version__}). Tasks: {', '.join(tasks)} "
        f"(tag `{prefix}`). verimod renders the prompts, parses the generations and scores them, so\n"
        f"the numbers equal `verimod score` on the same outputs.\n\n"
        f"```bash\n"
        f"lm_eval --model hf --model_args pretrained=Qwen/Qwen2.5-7B-Instruct \\\n"
        f"    --include_path {out} --tasks {prefix} --apply_chat_template --log_samples --output_path out/\n"
        f"```\n\n"
        f"`{EXPORT_FILE}` records the prompt templates (with their sha256), the k-shot examples and the\n"
        f"data's sha256. The data path in the YAML files is absolute: export again after moving the data.\n"
    )
