"""The leakage index: exact, near and approximate matches; bundled sources; eval's warning."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from verimod.cli.app import app
from verimod.models.baseline.leakage import (
    LeakageIndex,
    bundled_keys,
    describe_bundled,
    leakage_message,
    minhash,
    text_key,
)
from verimod.tasks.varm.starter import load_starter

STORED = "这条评论是用户自己的训练数据，模型可以把它原样保存下来以便精确比较。"
HASHED = "这条评论来自不能再分发的公开数据集，模型只保存它的哈希值和最小哈希签名。"


def test_keys_and_signatures_are_deterministic():
    assert text_key(" 蓋 子 ") == "盖子"
    assert np.array_equal(minhash(HASHED), minhash(HASHED)) and minhash(HASHED).dtype == np.uint8
    assert (minhash(HASHED) == minhash(STORED)).mean() < 0.5


def test_signature_agreement_estimates_the_jaccard_similarity():
    """Each of the 16 values must come from its own permutation: the share of agreeing values
    tracks the 3-gram Jaccard similarity (an affine hash without wrap-around would make all 16
    pick the same 3-gram, and any two texts sharing it would agree fully)."""
    rng = np.random.default_rng(1)
    alphabet = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    unrelated, half = [], []
    for _ in range(60):
        base = "".join(rng.choice(alphabet, 60))
        other = "".join(rng.choice(alphabet, 60))
        unrelated.append((minhash(base) == minhash(other)).mean())
        grams_base = {base[i : i + 3] for i in range(58)}
        mixed = base[:30] + other[:30]
        grams_mixed = {mixed[i : i + 3] for i in range(58)}
        jaccard = len(grams_base & grams_mixed) / len(grams_base | grams_mixed)
        half.append((minhash(base) == minhash(mixed)).mean() - jaccard)
    assert np.mean(unrelated) < 0.05  # chance agreement of 8-bit values: 1/256
    assert abs(np.mean(half)) < 0.08  # unbiased estimate of the Jaccard similarity (about 0.34 here)
    assert np.std(half) < 0.25  # 16 independent values: about 0.12; one value repeated 16 times: about 0.47


def test_exact_near_and_approximate_matches():
    index = LeakageIndex.build([STORED], [HASHED])
    assert index.texts == [text_key(STORED)] and index.hashes.size == 1 and index.size == 2
    assert HASHED not in json.dumps(index.texts, ensure_ascii=False)  # the hashed text is not kept
    texts = [
        STORED,  # identical to a stored text
        STORED.replace("原样", "原封"),  # one word changed: fuzz.ratio ≥ 95 with the stored text
        HASHED,  # identical to a hashed text: exact by its hash
        HASHED.replace("签名", "指纹"),  # near a hashed text: only the MinHash signature can tell
        "完全无关的一句话，讲的是今天的天气和晚饭吃什么。",
    ]
    matches = {m.index: m for m in index.check(texts)}
    assert [matches[i].kind for i in (0, 1, 2, 3)] == ["exact", "near", "exact", "approximate"]
    assert matches[1].score >= 95 and 0.75 <= matches[3].score <= 1.0
    assert 4 not in matches


def test_bundled_sources_are_read_back_and_checked_exactly():
    train = load_starter("train")
    source = describe_bundled("starter", "train", [r.text for r in train])
    keys, notes = bundled_keys([source])
    assert len(keys) == len(train) and notes == []
    changed = describe_bundled("starter", "train", [r.text for r in train[:-1]])
    keys, notes = bundled_keys([changed])
    assert keys == [] and "not shipped unchanged" in notes[0]
    index = LeakageIndex(bundled=[source])
    message = leakage_message(index, ["a", "b"], [train[0].text, "无关的文本内容"])
    assert message is not None and message.startswith("leakage: 1 of 2 evaluated texts")
    assert "1 identical" in message and "e.g. a" in message
    assert leakage_message(index, ["b"], ["无关的文本内容"]) is None


def test_eval_warns_about_leakage_by_default_and_can_be_told_not_to(starter_model, tmp_path):
    folder = starter_model.save(tmp_path / "model")
    data = tmp_path / "data.jsonl"
    rows = load_starter("train")[:5] + load_starter("test")[:5]
    data.write_text("".join(json.dumps(r.model_dump(exclude_none=True), ensure_ascii=False) + "\n" for r in rows))
    runner = CliRunner()
    args = ["eval", "--model", f"baseline:{folder}", "--data", str(data), "--runs-dir", str(tmp_path / "runs")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "warning: leakage: 5 of 10 evaluated texts near-duplicate the model's training texts" in result.stderr
    quiet = runner.invoke(app, [*args, "--no-leakage-check"])
    assert quiet.exit_code == 0 and "leakage" not in quiet.stderr
