"""The ``hf:`` backend: fast checks of specs, options, errors and the shared helpers, and slow
ones that run the real Qwen2.5-Coder-0.5B-Instruct model de-quantised from its GGUF file
(see ``local_model.py``), with and without a LoRA adapter."""

from __future__ import annotations

import asyncio
import copy
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.memory import release_memory
from tests.models.local_model import assert_cut_at_stop_string, hf_dir_or_skip
from verimod.models import (
    BackendError,
    BackendOptions,
    ChatMessage,
    GenerationParams,
    ModelRequest,
    ModelResponse,
    StructuredOutput,
    backends,
    create_backend,
)
from verimod.models._local import SerialRunner, check_extra_body, check_options, sha256_tree, truncate_at_stop
from verimod.models.hf import HfBackend, local_model_path

SYSTEM = "你是内容审核员。请用两三句话分析评论是否有害，并说明理由。"
COMMENTS = (
    "评论：小县城公务员也就靠个编制，离了编制啥也不是。这条评论是否有害？为什么？",
    "评论：今天天气真好，我们去公园散步吧。这条评论是否有害？为什么？",
    "评论：有人说外地人都是骗子，这种说法太偏激了。这条评论是否有害？为什么？",
)


def request(user: str = COMMENTS[0], sample_id: str = "s1", **params: object) -> ModelRequest:
    """A short Chinese moderation request; keyword arguments set generation parameters."""
    settings: dict[str, object] = {"max_tokens": 24, "temperature": 0.0, **params}
    return ModelRequest(
        sample_id=sample_id,
        messages=(ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=user)),
        params=GenerationParams.model_validate(settings),
    )


def ok(result: ModelResponse | BackendError) -> ModelResponse:
    assert isinstance(result, ModelResponse), result
    return result


# -- fast: helpers, specs, options, errors -------------------------------------------------


def test_truncate_at_stop_cuts_at_the_earliest_stop() -> None:
    assert truncate_at_stop("有害。理由：贬低\n职业", ["\n", "理由"]) == ("有害。", True)
    assert truncate_at_stop("无害", ["。"]) == ("无害", False)
    assert truncate_at_stop("abc", ["", "c"]) == ("ab", True)
    assert truncate_at_stop("abc", []) == ("abc", False)


def test_sha256_tree_sees_content_and_names(tmp_path: Path) -> None:
    (tmp_path / "adapter_config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "adapter_model.safetensors").write_bytes(b"\x00" * 10)
    first = sha256_tree(tmp_path)
    (tmp_path / "adapter_model.safetensors").write_bytes(b"\x00" * 9 + b"\x01")
    assert sha256_tree(tmp_path) != first and len(first) == 64


def test_check_options_and_extra_body() -> None:
    check_options(BackendOptions(device="cpu", request_timeout_s=5), "hf", {"device"})
    with pytest.raises(BackendError, match="context_size"):
        check_options(BackendOptions(context_size=1024), "hf", {"device"})
    assert check_extra_body({"top_k": 5}, "hf", {"top_k"}) == {"top_k": 5}
    with pytest.raises(BackendError, match=r"foo; accepted: top_k"):
        check_extra_body({"foo": 1}, "hf", {"top_k"})


def test_prefix_is_registered_and_local_paths_are_told_from_hub_ids(tmp_path: Path) -> None:
    assert backends.get("hf") is HfBackend
    assert local_model_path("Qwen/Qwen2.5-0.5B-Instruct") is None
    assert local_model_path("./models/qwen") == Path("./models/qwen")
    assert local_model_path(str(tmp_path)) == tmp_path


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (BackendOptions(context_size=2048), "context_size"),
        (BackendOptions(base_urls=("http://127.0.0.1:1",)), "base_urls"),
    ],
)
def test_options_it_cannot_honour_are_refused(options: BackendOptions, message: str) -> None:
    with pytest.raises(BackendError, match=message) as caught:
        create_backend("hf:/does/not/matter", options)
    assert caught.value.kind == "client"


def test_missing_model_folder_and_adapter_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="hf model folder not found"):
        create_backend(f"hf:{tmp_path / 'nope'}")
    with pytest.raises(BackendError, match="LoRA adapter folder not found"):
        create_backend(f"hf:{tmp_path}", BackendOptions(adapter=str(tmp_path / "no-adapter")))


def test_missing_packages_say_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(BackendError, match=r"install the 'hf' extra: pip install \"\.\[hf\]\"") as caught:
        create_backend(f"hf:{tmp_path}")
    assert caught.value.kind == "client"
    assert "\n" not in str(caught.value)


def test_unknown_hub_id_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch", reason="torch is not installed")
    pytest.importorskip("transformers", reason="transformers is not installed; pip install -e '.[hf]'")
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(BackendError, match="cannot load model") as caught:
        create_backend("hf:verimod-tests/no-such-model")
    assert caught.value.kind == "client"
    assert "\n" not in str(caught.value)


# -- fast: the anchor grammar's token mask on a tiny random model ---------------------------


@pytest.fixture(scope="module")
def tiny_bytes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HfBackend]:
    """A one-layer random Qwen2 with a byte-level tokenizer (tests/train/tiny_model.py)."""
    from tests.train.tiny_model import build_tiny_model

    folder = build_tiny_model(tmp_path_factory.mktemp("tiny-bytes") / "model", tokens="bytes")
    created = create_backend(f"hf:{folder}", BackendOptions(threads=1, batch_size=4))
    assert isinstance(created, HfBackend)
    yield created
    asyncio.run(created.aclose())


def anchors_request(sample_id: str, **params: object) -> ModelRequest:
    from verimod.tasks.varm.grammar import structured_output

    settings: dict[str, object] = {"temperature": 1.0, "max_tokens": 3000, "structured": structured_output("anchors")}
    return request("评论：你好", sample_id=sample_id, **{**settings, **params})


def test_a_random_model_under_the_anchor_mask_writes_parseable_records(tiny_bytes: HfBackend) -> None:
    """Sampling at temperature 1 from random weights: without the mask nothing parses; with it
    (two rows of one batch, each its own matcher) every output is in the grammar and parses."""
    from verimod.tasks.varm.grammar import anchor_grammar
    from verimod.tasks.varm.parser import parse_rationale

    free = ok(asyncio.run(tiny_bytes.generate(anchors_request("free", structured=None, max_tokens=200, seed=1))))
    assert not parse_rationale(free.text or "").ok
    results = asyncio.run(tiny_bytes.generate_batch([anchors_request(f"s{i}", seed=i) for i in range(2)]))
    for response in map(ok, results):
        assert response.finish_reason == "stop", response
        assert anchor_grammar().matches(response.text or ""), response.text
        assert parse_rationale(response.text or "").ok


def test_an_output_cut_by_max_tokens_under_the_mask_reports_length(tiny_bytes: HfBackend) -> None:
    from verimod.tasks.varm.parser import parse_rationale

    response = ok(asyncio.run(tiny_bytes.generate(anchors_request("cut", seed=3, max_tokens=12))))
    assert response.finish_reason == "length" and response.completion_tokens == 12
    assert not parse_rationale(response.text or "").ok


def test_an_invalid_regex_fails_alone_with_a_one_line_client_error(tiny_bytes: HfBackend) -> None:
    bad = request(structured=StructuredOutput(regex="(unclosed"), sample_id="bad", max_tokens=2)
    results = asyncio.run(tiny_bytes.generate_batch([bad, request(max_tokens=2)]))
    assert isinstance(results[0], BackendError) and results[0].kind == "client"
    assert "not a valid constraint" in str(results[0]) and "\n" not in str(results[0])
    assert ok(results[1]).completion_tokens == 2


def test_a_tokenizer_llguidance_cannot_read_is_a_clear_client_error(tmp_path: Path) -> None:
    from tests.train.tiny_model import build_tiny_model

    folder = build_tiny_model(tmp_path / "model", tokens="chars")  # word-level: one token per character
    backend = create_backend(f"hf:{folder}", BackendOptions(threads=1))
    try:
        results = asyncio.run(backend.generate_batch([anchors_request("s1")]))
    finally:
        asyncio.run(backend.aclose())
    assert isinstance(results[0], BackendError) and results[0].kind == "client"
    assert "cannot read the tokenizer" in str(results[0]) and "\n" not in str(results[0])


# -- slow: the real model -------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_dir() -> Path:
    return hf_dir_or_skip()


@pytest.fixture(scope="module")
def backend(model_dir: Path) -> Iterator[HfBackend]:
    created = create_backend(f"hf:{model_dir}", BackendOptions(threads=2, batch_size=8))
    assert isinstance(created, HfBackend)
    yield created
    asyncio.run(created.aclose())
    release_memory()


@pytest.mark.slow
def test_batched_greedy_generation_equals_one_by_one(backend: HfBackend) -> None:
    requests = [request(text, sample_id=f"s{i}") for i, text in enumerate(COMMENTS)]
    batched = [ok(r) for r in asyncio.run(backend.generate_batch(requests))]
    alone = [asyncio.run(backend.generate(r)) for r in requests]
    assert [r.text for r in batched] == [r.text for r in alone]
    assert [r.prompt_tokens for r in batched] == [r.prompt_tokens for r in alone]
    assert [r.completion_tokens for r in batched] == [r.completion_tokens for r in alone]
    for response in batched:
        assert response.text and response.text.strip()
        assert response.prompt_tokens is not None and response.prompt_tokens > 10
        assert response.completion_tokens is not None and 1 <= response.completion_tokens <= 24
        assert response.finish_reason in {"stop", "length"}


@pytest.mark.slow
def test_seeded_sampling_is_reproducible(backend: HfBackend) -> None:
    sampled = request(temperature=0.9, seed=7, max_tokens=12)
    first = asyncio.run(backend.generate(sampled))
    second = asyncio.run(backend.generate(sampled))
    assert first.text and first.text == second.text


@pytest.mark.slow
def test_outputs_are_cut_at_the_first_stop_string(backend: HfBackend) -> None:
    assert_cut_at_stop_string(lambda stop: asyncio.run(backend.generate(request(stop=stop))))


@pytest.mark.slow
def test_invalid_requests_fail_alone(backend: HfBackend) -> None:
    structured = request(structured=StructuredOutput(regex="(unclosed"), sample_id="bad")
    results = asyncio.run(backend.generate_batch([structured, request(max_tokens=4)]))
    assert isinstance(results[0], BackendError) and results[0].kind == "client"
    assert ok(results[1]).text


@pytest.mark.slow
def test_identity(backend: HfBackend, model_dir: Path) -> None:
    identity = backend.identity()
    assert identity["backend"] == "hf"
    assert identity["model"] == str(model_dir)
    assert identity["dtype"] == "float32" and identity["device"] == "cpu"
    assert identity["adapter"] is None and identity["adapter_sha256"] is None


@pytest.mark.slow
def test_closing_during_generation_stops_it_before_dropping_the_model(backend: HfBackend) -> None:
    """aclose() stops the running generation after its current step and returns only once it
    has ended (issue #14). A shallow copy shares the loaded weights, so closing it leaves the
    module's backend usable."""
    closing = copy.copy(backend)
    closing._runner = SerialRunner("hf")  # its own lock and close state
    long_request = request(max_tokens=300, sample_id="long")

    async def main() -> tuple[bool, BaseException | ModelResponse, BaseException | ModelResponse]:
        call = asyncio.create_task(closing.generate(long_request))
        while closing._runner._stop is None:  # until the generation call is running
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.3)  # into the decoding steps
        await closing.aclose()
        done_at_close = call.done()
        first = (await asyncio.gather(call, return_exceptions=True))[0]
        later = (await asyncio.gather(closing.generate(request(max_tokens=2)), return_exceptions=True))[0]
        return done_at_close, first, later

    t0 = time.monotonic()
    done_at_close, first, later = asyncio.run(main())
    assert done_at_close
    assert isinstance(first, BackendError) and first.kind == "client"
    assert str(first) == "hf: generation stopped: the backend was closed"
    assert isinstance(later, BackendError) and str(later) == "hf: the backend is closed"
    assert time.monotonic() - t0 < 60  # 300 tokens on CPU would take minutes
    assert asyncio.run(backend.generate(request(max_tokens=2))).text is not None  # the original still works
