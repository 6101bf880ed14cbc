"""``verimod train sft | merge`` from the command line: bad input, and (slow) a real CoT-SFT run
of Qwen2.5-Coder-0.5B on the starter set — dev loss falls, the adapter loads, generates and is
compared with zero-shot of the same base model, and the merged model matches the adapter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import write_lines
from verimod.tasks.varm.starter import load_starter


def test_cli_bad_input_is_one_line_and_exit_2(cli, tmp_path: Path):
    rows = [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter("dev")[:2]]
    rows[1].pop("cot")
    no_cot = write_lines(tmp_path / "refs.jsonl", rows)
    wrong_split = cli("train", "sft", "--model", tmp_path / "absent", "--out", tmp_path / "o", "--train", no_cot)
    assert wrong_split.exit_code == 2 and "no records with split 'train'" in wrong_split.stderr
    result = cli("train", "sft", "--model", tmp_path / "absent", "--out", tmp_path / "o", "--train", no_cot,
                 "--train-split", "dev")  # fmt: skip
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert "\n" not in message and "refs.jsonl" in message and "cot" in message
    bad_rank = cli("train", "sft", "--model", "m", "--out", tmp_path / "o", "--lora-r", "0")
    assert bad_rank.exit_code == 2 and "--lora-r" in bad_rank.stderr
    missing = cli("train", "sft", "--model", tmp_path / "absent", "--out", tmp_path / "o")
    assert missing.exit_code == 2 and "--model" in missing.stderr and "absent" in missing.stderr
    device = cli("train", "sft", "--model", tmp_path / "absent", "--out", tmp_path / "o", "--device", "tpu")
    assert device.exit_code == 2 and "--device" in device.stderr and "\n" not in device.stderr.strip()
    merge = cli("train", "merge", "--model", "m", "--adapter", tmp_path, "--out", tmp_path / "m")
    assert merge.exit_code == 2 and "adapter_config.json" in merge.stderr


def test_missing_training_packages_are_one_line(cli, tmp_path, monkeypatch):
    import verimod.train.sft_loop as loop
    from verimod.models._local import require_module

    def without_peft(module: str, extra: str, purpose: str):
        if module == "peft":
            require_module("verimod_no_such_package", extra, purpose)
        return require_module(module, extra, purpose)

    monkeypatch.setattr(loop, "require_module", without_peft)
    result = cli("train", "sft", "--model", tmp_path / "absent", "--out", tmp_path / "o")
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert "\n" not in message and 'pip install ".[train]" in the verimod folder' in message


# -- a tiny random model: progress lines, the training prompt checked at eval time -----------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.train.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_plain_progress_off_a_terminal_and_the_prompt_checked_at_eval(cli, tiny, tmp_path, monkeypatch):
    """Off a terminal (a log file, CI) train sft writes plain step lines; an eval of the adapter
    with another prompt warns with both prompt hashes, with the training prompt it does not; the
    manifest keeps the adapter's absolute path even when it was given relative."""
    from tests.train.tiny_model import OTHER_PROMPT, write_prompt
    from verimod.tasks.varm.prompts import load_prompt

    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    prompt, other = write_prompt(tmp_path), write_prompt(tmp_path, OTHER_PROMPT, "other.json")
    train, dev = _records_file(tmp_path / "train.jsonl", "train", 8), _records_file(tmp_path / "dev.jsonl", "dev", 2)
    result = cli("train", "sft", "--model", tiny, "--out", "sft", "--train", train, "--dev", dev, "--prompt-template",
                 prompt, "--max-steps", "4", "--eval-every", "2", "--batch-size", "2", "--grad-accum", "1",
                 "--lora-r", "4", "--max-length", "512")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    steps = [line for line in result.stderr.splitlines() if line.startswith("step ")]
    assert [line.split(" · ")[0] for line in steps] == [f"step {k}/4" for k in (1, 2, 3, 4)]
    assert " · dev " in steps[1] and "dev –" in steps[0] and "loss " in steps[0]
    adapter = (tmp_path / "sft" / "adapter").resolve()
    assert f"--adapter {adapter}" in result.stdout  # the printed command works from anywhere

    data = _records_file(tmp_path / "data.jsonl", "test", 1)
    args = ("eval", "--model", f"hf:{tiny}", "--adapter", "sft/adapter", "--data", data, "--max-tokens", "4",
            "--runs-dir", "runs", "--no-cache", "--quiet")  # fmt: skip
    mismatched = cli(*args, "--prompt-template", other)
    assert mismatched.exit_code == 0, mismatched.stderr
    trained_hash, eval_hash = load_prompt("zero-shot", prompt).sha256, load_prompt("zero-shot", other).sha256
    assert trained_hash in mismatched.stderr and eval_hash in mismatched.stderr and "warning:" in mismatched.stderr
    matched = cli(*args, "--prompt-template", prompt)
    assert matched.exit_code == 0 and "warning:" not in matched.stderr
    manifests = [json.loads(m.read_text(encoding="utf-8")) for m in (tmp_path / "runs").glob("*/manifest.json")]
    assert len(manifests) == 2
    assert {m["backend_options"]["adapter"] for m in manifests} == {str(adapter)}


# -- slow: a real CoT-SFT run -------------------------------------------------------------------


def _records_file(path: Path, split: str, n: int) -> Path:
    return write_lines(path, [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter(split)[:n]])


#: Training examples: one epoch of TRAIN_ITEMS sequences in STEPS optimizer steps of two (batch 1,
#: gradient accumulation 2: one sequence in memory at a time), the dev loss taken every EVERY steps.
TRAIN_ITEMS, STEPS, EVERY = 24, 12, 4


@pytest.mark.slow
def test_sft_then_eval_beside_zero_shot_then_merge(cli, tmp_path: Path, monkeypatch) -> None:
    """A dozen LoRA steps on the starter train split: the dev loss falls; the adapter loads
    through the hf backend, generates, is scored and compared with zero-shot of the same base;
    the merged model gives the adapter's logits."""
    from tests.helpers.memory import release_memory
    from tests.models.local_model import hf_dir_or_skip
    from tests.train.test_sft_real import short_prompt
    from verimod.train.sft_data import references_sha256

    base = hf_dir_or_skip()
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    train, dev, prompt = (
        _records_file(tmp_path / "train.jsonl", "train", TRAIN_ITEMS),
        _records_file(tmp_path / "dev.jsonl", "dev", 2),
        short_prompt(tmp_path),
    )
    out = tmp_path / "sft"
    options = {"--prompt-template": prompt, "--max-steps": STEPS, "--batch-size": 1, "--grad-accum": 2,
               "--eval-every": EVERY, "--lora-r": 8, "--max-length": 512}  # fmt: skip
    flat = [str(x) for pair in options.items() for x in pair]
    result = cli("train", "sft", "--model", base, "--out", out, "--train", train, "--dev", dev, *flat, "--json", "-")
    release_memory()  # the trained model holds reference cycles; one model in memory at a time
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    dev_losses = [h["dev_loss"] for h in summary["history"] if "dev_loss" in h]
    assert len(dev_losses) == 1 + STEPS // EVERY and summary["steps"] == STEPS
    assert summary["best_dev_loss"] == min(dev_losses[1:]) < dev_losses[0]
    adapter = out / "adapter"
    info = json.loads((adapter / "verimod_training.json").read_text(encoding="utf-8"))
    assert info["train_sha256"] == references_sha256(load_starter("train")[:TRAIN_ITEMS])
    assert info["config"]["prompt_template"] == str(prompt) and (adapter / "adapter_config.json").is_file()

    runs = tmp_path / "runs"
    common = ("--data", dev, "--prompt-template", prompt, "--limit", "2", "--max-tokens", "48", "--runs-dir", runs)
    tuned = cli("eval", "--model", f"hf:{base}", "--adapter", adapter, *common, "--json", "-")
    assert tuned.exit_code == 0, tuned.stderr
    zero = cli("eval", "--model", f"hf:{base}", *common, "--json", "-")
    assert zero.exit_code == 0, zero.stderr
    release_memory()
    run_dirs = sorted(runs.iterdir())
    assert len(run_dirs) == 2
    for run in run_dirs:
        samples = [json.loads(x) for x in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
        assert len(samples) == 2 and all(s["output"] for s in samples)
    for metrics in (json.loads(tuned.stdout), json.loads(zero.stdout)):
        assert 0.0 <= metrics["parse_rate"] <= 1.0
    compared = cli("runs", "compare", *run_dirs, "--format", "json")
    assert compared.exit_code == 0, compared.stderr
    models = {row["run"]: row["model"] for row in json.loads(compared.stdout)}
    assert sorted(models.values()) == sorted([f"hf:{base}", f"hf:{base} + LoRA {adapter}"])
    assert [run.name for run in run_dirs if "-lora-" in run.name] == [r for r, m in models.items() if "LoRA" in m]

    merged = tmp_path / "merged"
    assert (
        cli("train", "merge", "--model", base, "--adapter", adapter, "--out", merged, "--dtype", "float32").exit_code
        == 0
    )
    release_memory()
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    ids = tokenizer("评论：小县城公务员离了编制啥也不是。", return_tensors="pt")
    with torch.inference_mode():  # one model at a time
        with_adapter = PeftModel.from_pretrained(
            AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32), str(adapter)
        )(**ids).logits
        release_memory()
        plain = AutoModelForCausalLM.from_pretrained(merged, dtype=torch.float32)(**ids).logits
        release_memory()
    assert (with_adapter - plain).abs().max().item() < 1e-3
