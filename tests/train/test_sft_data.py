"""CoT-SFT data: prompt masking with a real (small, locally trained) BPE tokenizer and a ChatML
chat template, batching, the configuration's step arithmetic, (the CLI's bad-input exits are in tests/cli)."""

from __future__ import annotations

import pytest

from verimod.models.base import ChatMessage
from verimod.tasks.varm.prompts import load_prompt
from verimod.tasks.varm.starter import load_starter
from verimod.train.sft_config import LORA_TARGETS, SftConfig, lora_targets
from verimod.train.sft_data import IGNORE_INDEX, batches, encode_example, encode_references, references_sha256

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer():
    """A byte-level BPE trained on the starter texts, with ChatML special tokens."""
    pytest.importorskip("transformers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    records = load_starter()
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=["<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    core.train_from_iterator([r.text for r in records] + [r.cot or "" for r in records], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|im_end|>")
    fast.chat_template = CHATML
    return fast


def test_prompt_tokens_are_masked_and_rationale_tokens_are_not(tokenizer):
    template = load_prompt("zero-shot")
    for reference in load_starter("dev")[:10]:
        messages = template.render(reference)
        example = encode_example(tokenizer, reference.id, messages, reference.cot)
        chat = [{"role": m.role, "content": m.content} for m in messages]
        prompt = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        n_prompt = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        assert len(example.input_ids) == len(example.labels)
        assert all(label == IGNORE_INDEX for label in example.labels[:n_prompt])
        completion_labels = example.labels[n_prompt:]
        assert completion_labels and all(label != IGNORE_INDEX for label in completion_labels)
        assert list(completion_labels) == list(example.input_ids[n_prompt:])
        assert example.n_supervised == len(completion_labels)
        assert tokenizer.decode(completion_labels) == reference.cot + "<|im_end|>\n"
        assert tokenizer.decode(example.input_ids[:n_prompt]) == prompt


def test_templates_that_cannot_be_masked_are_refused(tokenizer):
    messages = (ChatMessage(role="user", content="评论"),)
    rewriting = tokenizer.__class__(tokenizer_object=tokenizer.backend_tokenizer, eos_token="<|im_end|>")
    rewriting.chat_template = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}" + (
        "{% if add_generation_prompt %}PROMPT-ONLY{% endif %}"
    )
    with pytest.raises(ValueError, match="does not extend the prompt"):
        encode_example(rewriting, "x", messages, "理由")
    rewriting.chat_template = None
    with pytest.raises(ValueError, match="no chat template"):
        encode_example(rewriting, "x", messages, "理由")


def test_long_examples_are_left_out_by_id(tokenizer):
    records = load_starter("dev")[:6]
    template = load_prompt("zero-shot")
    lengths = {r.id: len(encode_example(tokenizer, r.id, template.render(r), r.cot).input_ids) for r in records}
    limit = sorted(lengths.values())[2]
    encoded = encode_references(tokenizer, records, template, limit)
    assert [e.id for e in encoded.examples] == [r.id for r in records if lengths[r.id] <= limit]
    assert encoded.too_long == [r.id for r in records if lengths[r.id] > limit]


def test_collate_pads_right_with_ignored_labels(tokenizer):
    pytest.importorskip("torch")
    from verimod.train.sft_data import SftExample, collate

    a = SftExample("a", (5, 6, 7), (IGNORE_INDEX, 6, 7))
    b = SftExample("b", (8,), (8,))
    batch = collate([a, b], pad_id=0)
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [[IGNORE_INDEX, 6, 7], [8, IGNORE_INDEX, IGNORE_INDEX]]
    assert [[e.id for e in chunk] for chunk in batches([a, b, a], [2, 0, 1], 2)] == [["a", "a"], ["b"]]


def test_step_arithmetic_fingerprint_and_lora_targets():
    config = SftConfig(model="m", batch_size=4, grad_accum=3, epochs=2)
    # 23 examples → ⌈23/4⌉ = 6 micro-batches → ⌈6/3⌉ = 2 steps per epoch → 4 steps
    assert (config.steps_per_epoch(23), config.total_steps(23)) == (2, 4)
    assert config.model_copy(update={"max_steps": 3}).total_steps(23) == 3
    assert SftConfig(model="m", batch_size=1, grad_accum=1, epochs=1).total_steps(7) == 7
    assert config.fingerprint() == SftConfig(model="m", batch_size=4, grad_accum=3, epochs=2).fingerprint()
    assert config.fingerprint() != config.model_copy(update={"learning_rate": 1e-4}).fingerprint()
    assert lora_targets("qwen2") == list(LORA_TARGETS["qwen2"])
    assert lora_targets("unknown-arch") == "all-linear"
    assert lora_targets("qwen2", ("q_proj",)) == ["q_proj"]


def test_data_digest_sees_rationales():
    records = load_starter("dev")[:3]
    changed = [records[0].model_copy(update={"cot": records[0].cot + "。"}), *records[1:]]
    assert references_sha256(records) == references_sha256(list(records))
    assert references_sha256(records) != references_sha256(changed)
