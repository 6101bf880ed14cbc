"""CoT-SFT plumbing on a tiny random model built in the test (``tests/train/tiny_model.py``):
the training time of a resumed run adds up over its segments. (What the training achieves is
tested on the real model in ``test_sft_real.py``.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.train.tiny_model import build_tiny_model, write_prompt
from verimod.tasks.varm.starter import load_starter
from verimod.train.sft_checkpoint import checkpoint_identity, latest_checkpoint


class Interrupt(Exception):
    """Stands for the process being killed."""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_training_seconds_add_up_across_resumes(tiny: Path, tmp_path: Path) -> None:
    from verimod.train.sft_config import SftConfig
    from verimod.train.sft_loop import StepReport, train_sft

    config = SftConfig(model=str(tiny), prompt_template=str(write_prompt(tmp_path)), lora_r=4, batch_size=2,
                       grad_accum=1, max_steps=6, eval_every=2, max_length=512, seed=1)  # fmt: skip
    train, dev = load_starter("train")[:8], load_starter("dev")[:2]

    def kill_at(step: int):
        def hook(report: StepReport) -> None:
            if report.step == step:
                raise Interrupt

        return hook

    out = tmp_path / "run"
    with pytest.raises(Interrupt):
        train_sft(config, train, dev, out, on_step=kill_at(3))
    first = latest_checkpoint(out)
    assert first is not None and first.name == "step-2"
    after_first = checkpoint_identity(first)["seconds"]
    assert after_first > 0
    with pytest.raises(Interrupt):
        train_sft(config, train, dev, out, resume=True, on_step=kill_at(5))
    second = latest_checkpoint(out)
    assert second is not None and second.name == "step-4"
    after_second = checkpoint_identity(second)
    assert after_second["seconds"] > after_first and after_second["segments"] == 2
    result = train_sft(config, train, dev, out, resume=True)
    assert result.steps == 6
    summary = json.loads((out / "training.json").read_text(encoding="utf-8"))
    assert summary["segments"] == 3 and summary["resumed_from"] == 4
    assert 0 < summary["seconds_this_run"] < summary["seconds"]
    assert summary["seconds"] == pytest.approx(after_second["seconds"] + summary["seconds_this_run"], abs=2e-3)
