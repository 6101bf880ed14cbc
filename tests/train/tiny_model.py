"""A tiny causal LM built here, for tests of the CoT-SFT plumbing that need a real transformers
model but not a good one: a one-layer Qwen2 with random weights (seeded) and a character-level
tokenizer with a ChatML template, written to a folder like any local model. Nothing is
downloaded; building it takes about a second. Quality claims need the real model
(``tests/models/local_model.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verimod.tasks.varm.starter import load_starter

SPECIALS = ("<unk>", "<pad>", "<|im_start|>", "<|im_end|>")
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
#: A short prompt (the characters of every prompt are in the vocabulary).
PROMPT = {"version": "tiny-1", "system": "你是内容审核员。", "user": "评论：$text\n写出带六个锚点的审核理由。"}
OTHER_PROMPT = {"version": "tiny-2", "system": "你是审核员。", "user": "评论：$text\n请写理由。"}


def write_prompt(folder: Path, prompt: dict[str, str] = PROMPT, name: str = "prompt.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(prompt, ensure_ascii=False), encoding="utf-8")
    return path


def build_tiny_model(folder: Path, tokens: str = "chars") -> Path:
    """Write the tiny model and tokenizer to ``folder`` (skips without the train extra).

    ``tokens="chars"``: one word-level token per character of the starter set and prompts;
    ``tokens="bytes"``: a byte-level BPE tokenizer without merges (one token per UTF-8 byte, as
    GPT-2 / Qwen tokenizers spell bytes), which any text can be written in and which token-mask
    engines such as llguidance read like a real model's."""
    torch = pytest.importorskip("torch", reason="CoT-SFT tests need the train extra: pip install -e '.[train]'")
    transformers = pytest.importorskip("transformers", reason="CoT-SFT tests need the train extra")
    tokenizers = pytest.importorskip("tokenizers", reason="CoT-SFT tests need the train extra")
    pytest.importorskip("peft", reason="CoT-SFT tests need the train extra")
    if tokens == "bytes":
        alphabet = sorted(tokenizers.pre_tokenizers.ByteLevel.alphabet())
        vocab = {token: k for k, token in enumerate([*alphabet, *SPECIALS])}
        model = tokenizers.Tokenizer(tokenizers.models.BPE(vocab, [], unk_token=None))
        model.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        model.decoder = tokenizers.decoders.ByteLevel()
    else:
        texts = [json.dumps(PROMPT, ensure_ascii=False), json.dumps(OTHER_PROMPT, ensure_ascii=False), CHAT_TEMPLATE]
        for split in ("train", "dev", "test"):
            texts += [f"{r.text}{r.cot or ''}{r.context or ''}" for r in load_starter(split)]
        chars = sorted(set("".join(texts)) | set("\n assistantusersystem"))
        vocab = {token: k for k, token in enumerate([*SPECIALS, *chars])}
        model = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
        model.pre_tokenizer = tokenizers.pre_tokenizers.Split(tokenizers.Regex(r"[\s\S]"), "isolated")
        model.decoder = tokenizers.decoders.Fuse()
    model.add_special_tokens(list(SPECIALS))
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=model, unk_token="<unk>", pad_token="<pad>", eos_token="<|im_end|>",
        bos_token=None, chat_template=CHAT_TEMPLATE,
    )  # fmt: skip
    config = transformers.Qwen2Config(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=4096, pad_token_id=vocab["<pad>"],
        eos_token_id=vocab["<|im_end|>"], bos_token_id=None, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(0)
    transformers.Qwen2ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
