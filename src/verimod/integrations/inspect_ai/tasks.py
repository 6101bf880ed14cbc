"""VARM as inspect_ai tasks: ``inspect eval verimod/varm_zero_shot --model …``.

The samples are built by verimod's own request builder (:func:`verimod.tasks.varm.evaluate.
prepare_run`), so an inspect sample sends exactly the messages ``verimod eval`` sends for the
same data, setting, shots and template: the system and user messages of the prompt template,
the k-shot examples drawn from the train data as verimod draws them. Each sample carries its
reference record in ``metadata["reference"]`` and its id on the user message
(``metadata["verimod_id"]``, for scripted models); the task's metadata record the prompt
version and sha256, the data path and sha256, the examples and the verimod and parser versions
(``verimod import inspect`` carries them into the run manifest).

Generation defaults are verimod's (temperature 0, seed 0, 512 new tokens); inspect's
``--temperature``, ``--max-tokens`` … override them. Task arguments (``-T name=value``): ``data``
(any reference source: JSONL, ``hf:NAME[:SPLIT]``, a ``datasets`` folder, Parquet; default the
varm-open test split, as verimod eval), ``split``, ``limit``, ``shots``, ``train``, ``prompt_template`` and, for
:func:`varm`, ``setting``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, GenerateConfig
from inspect_ai.solver import generate

from verimod import __version__
from verimod.integrations.inspect_ai.scorer import first_epoch, varm_scorer
from verimod.models.base import ModelRequest
from verimod.tasks.varm.evaluate import EvalSettings, PreparedRun, prepare_run
from verimod.tasks.varm.parser import PARSER_VERSION
from verimod.tasks.varm.prompts import DEFAULT_SHOTS

#: The key of the sample id on each sample's user message.
ID_KEY = "verimod_id"


def _messages(request: ModelRequest) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    for message in request.messages:
        if message.role == "system":
            messages.append(ChatMessageSystem(content=message.content))
        elif message.role == "user":
            messages.append(ChatMessageUser(content=message.content, metadata={ID_KEY: request.sample_id}))
        else:  # verimod's VARM templates have no assistant turns
            raise ValueError(f"unexpected {message.role} message in a VARM prompt")
    return messages


def task_metadata(settings: EvalSettings, prepared: PreparedRun) -> dict[str, Any]:
    """What a run manifest needs to know about how the samples were made."""
    template = prepared.template
    return {
        "verimod": {
            "setting": settings.setting,
            "prompt": {"version": template.version, "sha256": template.sha256, "file": settings.prompt_template},
            "data": prepared.data,
            "limit": settings.limit,
            "shots": len(prepared.examples),
            "examples": [e.id for e in prepared.examples],
            "params": settings.params.model_dump(),
            "verimod_version": __version__,
            "parser_version": PARSER_VERSION,
        }
    }


def varm_task(settings: EvalSettings) -> Task:
    """The inspect task of a VARM evaluation described by verimod's ``settings``."""
    prepared = prepare_run(settings)
    samples = [
        Sample(
            id=reference.id, input=_messages(request), metadata={"reference": reference.model_dump(exclude_none=True)}
        )
        for reference, request in zip(prepared.references, prepared.requests, strict=True)
    ]
    params = settings.params
    return Task(
        dataset=MemoryDataset(samples, name=f"varm:{prepared.data['path']}"),
        solver=generate(),
        scorer=varm_scorer(),
        config=GenerateConfig(temperature=params.temperature, max_tokens=params.max_tokens, seed=params.seed),
        epochs=Epochs(1, first_epoch()),
        metadata=task_metadata(settings, prepared),
        version=PARSER_VERSION,
    )


def _settings(
    setting: str,
    data: str | None,
    split: str | None,
    limit: int | None,
    shots: int,
    train: str | None,
    prompt_template: str | None,
) -> EvalSettings:
    return EvalSettings(
        model="inspect",
        setting=setting,
        shots=int(shots),
        prompt_template=prompt_template,
        data=data,
        split=split,
        train=train,
        limit=None if limit is None else int(limit),
    )


@task
def varm(
    setting: str = "zero-shot",
    data: str | None = None,
    split: str | None = None,
    limit: int | None = None,
    shots: int = DEFAULT_SHOTS,
    train: str | None = None,
    prompt_template: str | None = None,
) -> Task:
    """VARM: anchored moderation rationales, parsed and scored by verimod (``-T setting=…``)."""
    return varm_task(_settings(setting, data, split, limit, shots, train, prompt_template))


def _fixed_setting(setting: str) -> Callable[..., Task]:
    """The registered task of one setting without examples (zero-shot, taxonomy)."""

    def fixed(
        data: str | None = None,
        split: str | None = None,
        limit: int | None = None,
        prompt_template: str | None = None,
    ) -> Task:
        return varm_task(_settings(setting, data, split, limit, 0, None, prompt_template))

    fixed.__doc__ = f"VARM, {setting} prompt."
    return task(name=f"varm_{setting.replace('-', '_')}")(fixed)  # type: ignore[no-any-return]


varm_zero_shot = _fixed_setting("zero-shot")
varm_taxonomy = _fixed_setting("taxonomy")


@task
def varm_k_shot(
    data: str | None = None,
    split: str | None = None,
    limit: int | None = None,
    shots: int = DEFAULT_SHOTS,
    train: str | None = None,
    prompt_template: str | None = None,
) -> Task:
    """VARM, k-shot prompt (examples drawn from ``train`` as ``verimod eval`` draws them)."""
    return varm_task(_settings("k-shot", data, split, limit, shots, train, prompt_template))
