"""CoT-SFT on the real Qwen2.5-Coder-0.5B (de-quantised from its GGUF file, see
``tests/models/local_model.py``): prompt masking with the real tokenizer, and a run killed after
its first checkpoint that, resumed, ends exactly where the uninterrupted run ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.memory import release_memory
from tests.models.local_model import hf_dir_or_skip
from verimod.tasks.varm.prompts import load_prompt
from verimod.tasks.varm.starter import load_starter
from verimod.train.errors import TrainingInputError
from verimod.train.sft_checkpoint import latest_checkpoint
from verimod.train.sft_config import SftConfig
from verimod.train.sft_data import IGNORE_INDEX, encode_example
from verimod.train.sft_loop import StepReport, train_sft

#: A short prompt keeps the CPU steps short; training and evaluation must use the same one.
SHORT_PROMPT = {
    "version": "test-short-1",
    "system": "你是内容审核员。",
    "user": "评论：$text\n写出带六个锚点的审核理由。",
}


def short_prompt(folder: Path) -> Path:
    path = folder / "short_prompt.json"
    path.write_text(json.dumps(SHORT_PROMPT, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def base_dir() -> Path:
    return hf_dir_or_skip()


@pytest.mark.slow
def test_real_tokenizer_masks_exactly_the_prompt(base_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    template = load_prompt("zero-shot")
    for reference in load_starter("dev")[:5]:
        messages = template.render(reference)
        example = encode_example(tokenizer, reference.id, messages, reference.cot)
        prompt = tokenizer.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages], tokenize=False, add_generation_prompt=True
        )
        n_prompt = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        assert set(example.labels[:n_prompt]) == {IGNORE_INDEX}
        assert IGNORE_INDEX not in example.labels[n_prompt:]
        assert tokenizer.decode(example.labels[n_prompt:]) == reference.cot + "<|im_end|>\n"


class Interrupt(Exception):
    """Stands for the process being killed."""


@pytest.mark.slow
def test_a_resumed_run_ends_where_the_uninterrupted_run_ends(base_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    config = SftConfig(
        model=str(base_dir), prompt_template=str(short_prompt(tmp_path)), lora_r=8, batch_size=1, grad_accum=2,
        max_steps=4, eval_every=2, max_length=512, seed=3,
    )  # fmt: skip
    train, dev = load_starter("train")[:8], load_starter("dev")[:2]
    straight = train_sft(config, train, dev, tmp_path / "a")
    release_memory()  # one model in memory at a time (see tests/helpers/memory.py)

    def kill_at_step_3(report: StepReport) -> None:
        if report.step == 3:
            raise Interrupt

    with pytest.raises(Interrupt):
        train_sft(config, train, dev, tmp_path / "b", on_step=kill_at_step_3)
    release_memory()
    checkpoint = latest_checkpoint(tmp_path / "b")
    assert checkpoint is not None and checkpoint.name == "step-2"
    with pytest.raises(TrainingInputError, match="--resume"):
        train_sft(config, train, dev, tmp_path / "b")
    with pytest.raises(TrainingInputError, match="configuration differs"):
        train_sft(config.model_copy(update={"learning_rate": 1e-3}), train, dev, tmp_path / "b", resume=True)
    resumed = train_sft(config, train, dev, tmp_path / "b", resume=True)
    release_memory()

    assert resumed.resumed_from == 2 and straight.resumed_from is None
    assert (resumed.steps, resumed.best_step) == (straight.steps, straight.best_step) == (4, straight.best_step)
    for a, b in zip(straight.history, resumed.history, strict=True):
        assert a.keys() == b.keys()
        assert {k: pytest.approx(v, abs=1e-6) for k, v in a.items()} == b
    weights_a = load_file(str(tmp_path / "a" / "adapter" / "adapter_model.safetensors"))
    weights_b = load_file(str(tmp_path / "b" / "adapter" / "adapter_model.safetensors"))
    assert weights_a.keys() == weights_b.keys() and weights_a
    for name, tensor in weights_a.items():
        assert (tensor - weights_b[name]).abs().max().item() <= 1e-6, name
    # the step-0 dev loss comes before any update; the run's losses are real numbers
    assert straight.initial_dev_loss is not None and straight.initial_dev_loss > 0
    info = json.loads((tmp_path / "a" / "adapter" / "verimod_training.json").read_text(encoding="utf-8"))
    assert info["config"]["lora_r"] == 8 and info["best_step"] == straight.best_step
