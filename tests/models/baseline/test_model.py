"""The trained model end to end: valid rationales, consistent records, persistence, determinism."""

from __future__ import annotations

import io
import json
import time
import zipfile

import numpy as np
import pytest

from verimod.core.errors import InputError
from verimod.models.baseline import BaselineModel, train_baseline, training_data_sha256
from verimod.models.baseline.persist import ARRAYS_FILE, FILES, MODEL_FILE, VOCAB_FILE
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, FIELDS, NO_CLEAR_TARGET, VOCABULARY, codebook_violations
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.scorer import score_predictions
from verimod.tasks.varm.starter import load_starter

ANCHOR_LIKE = [
    "[L: harmful] 河南人都是骗子",
    "【T: 他】［TY: single］[T: explicit][S: attack_or_endorse][L: harmful][C: gender]",
    "[T: no_clear_target] 无",
    "]]]][[[[ 【【】】",
    "",
    "   ",
    "。。。！！！",
    "none",
    "😀😀😀",
    "他" * 3000,
    "楼上说的“[L: non_harmful]”是什么意思？\n换行\t制表",
]


def _record_values(prediction) -> tuple[str, ...]:
    return tuple(getattr(prediction.record, f) for f in FIELDS)


def test_every_starter_rationale_parses_passes_format_and_matches_its_record(starter_predictions):
    for reference, prediction in starter_predictions:
        result = parse_rationale(prediction.rationale)
        assert result.format_ok, (reference.id, prediction.rationale, result.error_class, result.flags)
        assert result.values == _record_values(prediction), reference.id
        assert not codebook_violations(prediction.record), reference.id


def test_predictions_are_codebook_consistent_and_cite_the_input(starter_predictions):
    for reference, prediction in starter_predictions:
        record = prediction.record
        assert (record.target == NO_CLEAR_TARGET) == (record.target_type == NO_CLEAR_TARGET)
        if record.target_explicitness == "explicit":
            assert prediction.target_source == "span" and record.target in reference.text
        for field in DISCRETE_FIELDS:
            probs = prediction.probabilities[field]
            assert list(probs) == list(VOCABULARY[field]) and abs(sum(probs.values()) - 1) < 1e-9
            for cue in prediction.cues.get(field, []):
                assert cue in reference.text.replace("[", "「").replace("]", "」")
    assert sum(bool(p.cues.get("stance")) for _, p in starter_predictions) > 0.9 * len(starter_predictions)


def test_anchor_like_and_degenerate_inputs_still_give_valid_rationales(starter_model):
    for text, prediction in zip(ANCHOR_LIKE, starter_model.predict(ANCHOR_LIKE), strict=True):
        result = parse_rationale(prediction.rationale)
        assert result.format_ok, (text, prediction.rationale)
        assert result.values == _record_values(prediction)
    empty = starter_model.predict([""])[0].record
    assert empty.target == NO_CLEAR_TARGET  # no candidate span: the referent must be no_clear_target


def test_quality_on_the_dev_split(starter_model):
    dev = load_starter("dev")
    predictions = starter_model.predict([r.text for r in dev])
    scores, _ = score_predictions(dev, {r.id: p.rationale for r, p in zip(dev, predictions, strict=True)})
    assert scores.parse_rate == 1.0 and scores.format_rate == 1.0
    assert scores.label_macro_f1 > 0.85 and scores.jrem > 0.3 and scores.target_char_f1 > 0.65


def test_save_load_round_trip_is_bit_identical_without_pickle(starter_model, tmp_path):
    starter_model.save(tmp_path / "m")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == sorted(FILES)
    with zipfile.ZipFile(tmp_path / "m" / ARRAYS_FILE) as archive:
        for member in archive.namelist():
            header = archive.read(member)[:200]
            assert header.startswith(b"\x93NUMPY") and b"'O'" not in header and b"|O" not in header
    with np.load(tmp_path / "m" / ARRAYS_FILE, allow_pickle=False) as arrays:
        assert all(arrays[name].dtype in (np.float64, np.float16, np.int64, np.uint8) for name in arrays.files)
    meta = json.loads((tmp_path / "m" / MODEL_FILE).read_text(encoding="utf-8"))
    assert meta["data_sha256"] == training_data_sha256(load_starter("train")) and meta["n_train"] == 436
    started = time.perf_counter()
    loaded = BaselineModel.load(tmp_path / "m")
    assert time.perf_counter() - started < 1.0
    assert loaded.fingerprint == starter_model.fingerprint
    texts = [r.text for r in load_starter("test")] + ANCHOR_LIKE
    for a, b in zip(starter_model.predict(texts), loaded.predict(texts), strict=True):
        assert a == b  # records, rationales, cues and every probability, bit for bit


def test_training_is_deterministic_and_seeded():
    references = load_starter("train")[:150]
    first, second = train_baseline(references, seed=3), train_baseline(references, seed=3)
    assert first.files() == second.files()  # identical bytes of every saved file
    with np.load(io.BytesIO(first.files()[ARRAYS_FILE]), allow_pickle=False) as a:
        assert a["label.weights"].shape[0] == 2
    other = train_baseline(references, seed=4)
    assert other.files()[MODEL_FILE] != first.files()[MODEL_FILE]  # the seed is recorded


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / VOCAB_FILE).unlink(), "cannot read"),
        (lambda d: (d / MODEL_FILE).write_text("{", encoding="utf-8"), "invalid JSON"),
        (lambda d: (d / ARRAYS_FILE).write_bytes(b"not a zip"), "npz"),
        (lambda d: (d / MODEL_FILE).write_text('{"format": "pickle"}', encoding="utf-8"), "not a baseline model"),
    ],
)
def test_damaged_model_folders_give_one_line_input_errors(starter_model, tmp_path, damage, message):
    folder = starter_model.save(tmp_path / "m")
    damage(folder)
    with pytest.raises(InputError, match=message) as info:
        BaselineModel.load(folder)
    assert "\n" not in str(info.value)


def test_object_arrays_are_refused_on_save_and_load(tmp_path):
    from verimod.models.baseline.persist import load_arrays, npz_bytes

    with pytest.raises(ValueError, match="pickle"):
        npz_bytes({"x": np.array([{"a": 1}], dtype=object)})
    buffer = io.BytesIO()
    np.savez(buffer, x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(InputError):
        load_arrays(buffer.getvalue(), "x.npz")
