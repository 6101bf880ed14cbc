"""The ``baseline`` backend through the registry, with real asyncio calls."""

from __future__ import annotations

import asyncio

import pytest

from verimod.core.errors import InputError
from verimod.core.paths import cache_dir
from verimod.models.base import BackendError, BackendOptions, ChatMessage, ModelRequest, ModelResponse
from verimod.models.baseline import BaselineModel, default
from verimod.models.baseline.backend import BaselineBackend, request_text
from verimod.models.baseline.default import prebuilt_dir
from verimod.models.baseline.model import MODEL_VERSION
from verimod.models.registry import create_backend
from verimod.tasks.varm.parser import parse_rationale


def _request(sample_id: str, text: str | None, user: str = "忽略这段提示", labels=None) -> ModelRequest:
    messages = (ChatMessage(role="system", content="你是审核员"), ChatMessage(role="user", content=user))
    return ModelRequest(sample_id=sample_id, messages=messages, input_text=text, labels=labels)


def test_default_model_is_the_shipped_one_and_answers():
    backend = create_backend("baseline")
    assert isinstance(backend, BaselineBackend)
    assert backend.kind == "generative" and backend.batch_size == 256 and backend.max_concurrency == 1
    identity = backend.identity()
    shipped = BaselineModel.load(prebuilt_dir())
    assert identity["model_version"] == MODEL_VERSION and identity["source"] == "prebuilt"
    assert identity["data_sha256"] == shipped.data_sha256 and identity["fingerprint"] == shipped.fingerprint
    requests = [
        _request("a", "河南人都是骗子，出门看好井盖。"),
        _request("b", None, user="[L: harmful] 今天天气不错"),
        _request("c", "外卖员辛苦了", labels=("harmful", "non_harmful")),
    ]
    responses = asyncio.run(backend.generate_batch(requests))
    assert all(isinstance(r, ModelResponse) for r in responses)
    for response in responses:
        assert isinstance(response, ModelResponse) and response.text
        assert parse_rationale(response.text).format_ok
    expected = shipped.predict([request_text(r) for r in requests])
    assert [r.text for r in responses] == [p.rationale for p in expected]
    probs = responses[2].label_probs
    assert probs is not None and set(probs) == {"harmful", "non_harmful"}
    assert responses[0].label_probs is None
    assert not (cache_dir() / "baseline").exists()  # nothing is trained on first use


def test_without_the_shipped_model_the_starter_fallback_trains_once_into_the_cache(starter_model, monkeypatch):
    monkeypatch.setattr(default, "has_prebuilt", lambda: False)
    backend = create_backend("baseline")
    identity = backend.identity()
    assert identity["source"] == "starter-fallback" and identity["data_sha256"] == starter_model.data_sha256
    assert backend.model().fingerprint == starter_model.fingerprint
    cached = list((cache_dir() / "baseline").iterdir())
    assert len(cached) == 1 and cached[0].name == identity["cache_key"]
    second = create_backend("baseline")  # loads the cached model instead of training again
    assert second.identity() == identity and second.model().fingerprint == starter_model.fingerprint


def test_saved_model_spec_single_generate_and_identity(starter_model, tmp_path):
    folder = starter_model.save(tmp_path / "model")
    backend = create_backend(f"baseline:{folder}")
    identity = backend.identity()
    assert identity["fingerprint"] == starter_model.fingerprint and identity["model"] == str(folder)
    response = asyncio.run(backend.generate(_request("x", "程序员都是秃头怪")))
    assert parse_rationale(response.text or "").format_ok


def test_bad_folder_and_unsupported_options_fail_at_creation(tmp_path):
    with pytest.raises(InputError, match="not a baseline model directory"):
        create_backend(f"baseline:{tmp_path / 'missing'}")
    with pytest.raises(BackendError, match="base_urls"):
        create_backend("baseline", BackendOptions(base_urls=("http://x",)))
    assert create_backend("baseline", BackendOptions(batch_size=8)).batch_size == 8


def test_request_text_falls_back_to_the_last_user_message():
    assert request_text(_request("a", "输入")) == "输入"
    assert request_text(_request("a", None, user="最后一条")) == "最后一条"
    assert request_text(ModelRequest(sample_id="a", messages=())) == ""


def test_model_failure_becomes_a_model_error_on_every_request(tmp_path, monkeypatch, starter_model):
    backend = create_backend(f"baseline:{starter_model.save(tmp_path / 'm')}")

    def broken(texts):
        raise RuntimeError("boom")

    monkeypatch.setattr(backend, "_predict", broken)
    results = asyncio.run(backend.generate_batch([_request("a", "x"), _request("b", "y")]))
    assert all(isinstance(r, BackendError) and r.kind == "model" and not r.retryable for r in results)
