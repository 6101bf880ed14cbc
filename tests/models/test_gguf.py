"""The ``gguf:`` backend: fast checks of specs, options and errors, and slow ones that run
the real Qwen2.5-Coder-0.5B-Instruct Q4_K_M model (see ``local_model.py``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.memory import release_memory
from tests.models.local_model import GGUF_NAME, GGUF_SHA256, GGUF_SIZE, assert_cut_at_stop_string, gguf_or_skip
from verimod.models import (
    BackendError,
    BackendOptions,
    ChatMessage,
    GenerationParams,
    ModelRequest,
    StructuredOutput,
    backends,
    create_backend,
    split_spec,
)
from verimod.models.gguf import GgufBackend

SYSTEM = "你是内容审核员。请用两三句话分析评论是否有害，并说明理由。"
COMMENT = "评论：小县城公务员也就靠个编制，离了编制啥也不是。这条评论是否有害？为什么？"


def request(*, user: str = COMMENT, sample_id: str = "s1", **params: object) -> ModelRequest:
    """A short Chinese moderation request; keyword arguments set generation parameters."""
    settings: dict[str, object] = {"max_tokens": 32, "temperature": 0.0, **params}
    return ModelRequest(
        sample_id=sample_id,
        messages=(ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=user)),
        params=GenerationParams.model_validate(settings),
    )


# -- fast: no model -------------------------------------------------------------------------


def test_prefix_is_registered_and_spec_splits() -> None:
    assert backends.get("gguf") is GgufBackend
    assert split_spec("gguf:/models/qwen.gguf") == ("gguf", "/models/qwen.gguf")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (BackendOptions(batch_size=4), "batch_size must be 1"),
        (BackendOptions(adapter="/some/lora"), "adapter"),
        (BackendOptions(base_urls=("http://127.0.0.1:1",)), "base_urls"),
        (BackendOptions(api_key_env="KEY"), "api_key_env"),
        (BackendOptions(device="tpu"), "device"),
    ],
)
def test_options_it_cannot_honour_are_refused(options: BackendOptions, message: str) -> None:
    with pytest.raises(BackendError, match=message) as caught:
        create_backend("gguf:/does/not/matter.gguf", options)
    assert caught.value.kind == "client"


def test_batch_size_one_is_accepted_as_far_as_the_file_check() -> None:
    with pytest.raises(BackendError, match="not found"):
        create_backend("gguf:/nonexistent/model.gguf", BackendOptions(batch_size=1, threads=2, context_size=2048))


def test_missing_model_file_is_one_clear_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(BackendError) as caught:
        create_backend(f"gguf:{missing}")
    assert caught.value.kind == "client"
    assert str(caught.value) == f"GGUF model file not found: {missing}"
    assert caught.value.__cause__ is None and caught.value.__context__ is None


def test_empty_spec_names_the_expected_form() -> None:
    with pytest.raises(BackendError, match=r"gguf:/path/to/model\.gguf"):
        create_backend("gguf:")


def test_missing_llama_cpp_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` raise ImportError
    with pytest.raises(BackendError, match=r"install the 'local' extra: pip install \"\.\[local\]\"") as caught:
        create_backend(f"gguf:{model}")
    assert caught.value.kind == "client"
    assert "\n" not in str(caught.value)


def test_corrupt_model_file_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed; pip install -e '.[local]'")
    model = tmp_path / "broken.gguf"
    model.write_bytes(b"not a gguf file at all" * 100)
    with pytest.raises(BackendError, match="cannot load GGUF model") as caught:
        create_backend(f"gguf:{model}")
    assert caught.value.kind == "client"


# -- slow: the real model -------------------------------------------------------------------


@pytest.fixture(scope="module")
def backend() -> Iterator[GgufBackend]:
    path = gguf_or_skip()
    created = create_backend(f"gguf:{path}", BackendOptions(threads=2, context_size=2048))
    assert isinstance(created, GgufBackend)
    yield created
    asyncio.run(created.aclose())
    release_memory()


@pytest.mark.slow
def test_generates_deterministic_text_with_token_counts(backend: GgufBackend) -> None:
    first = asyncio.run(backend.generate(request(seed=1)))
    second = asyncio.run(backend.generate(request(seed=1)))
    assert first.text and first.text.strip()
    assert first.text == second.text
    assert first.prompt_tokens is not None and first.prompt_tokens > 10
    assert first.completion_tokens is not None and 1 <= first.completion_tokens <= 32
    assert first.finish_reason in {"stop", "length"}
    assert first.model == GGUF_NAME


@pytest.mark.slow
def test_seeded_sampling_is_reproducible(backend: GgufBackend) -> None:
    sampled = request(temperature=0.9, top_p=0.95, seed=7, max_tokens=16)
    first = asyncio.run(backend.generate(sampled))
    second = asyncio.run(backend.generate(sampled))
    assert first.text and first.text == second.text


@pytest.mark.slow
def test_concurrent_calls_are_serialised_and_match_sequential_ones(backend: GgufBackend) -> None:
    other = "评论：今天天气真好，我们去公园散步吧。这条评论是否有害？为什么？"

    async def both() -> list[str | None]:
        results = await backend.generate_batch([request(), request(user=other, sample_id="s2")])
        return [r.text if not isinstance(r, BackendError) else None for r in results]

    together = asyncio.run(both())
    alone = [asyncio.run(backend.generate(request())).text, asyncio.run(backend.generate(request(user=other))).text]
    assert together == alone


@pytest.mark.slow
def test_stop_strings_are_honoured(backend: GgufBackend) -> None:
    assert_cut_at_stop_string(lambda stop: asyncio.run(backend.generate(request(stop=stop))))


@pytest.mark.slow
def test_json_schema_output_is_valid_json(backend: GgufBackend) -> None:
    schema = {
        "type": "object",
        "properties": {"label": {"type": "string", "enum": ["harmful", "non_harmful"]}},
        "required": ["label"],
    }
    response = asyncio.run(backend.generate(request(max_tokens=48, structured=StructuredOutput(json_schema=schema))))
    value = json.loads(response.text or "")
    assert value["label"] in {"harmful", "non_harmful"}


@pytest.mark.slow
def test_regex_output_is_a_client_error(backend: GgufBackend) -> None:
    with pytest.raises(BackendError, match="regex") as caught:
        asyncio.run(backend.generate(request(structured=StructuredOutput(regex="有害|无害"))))
    assert caught.value.kind == "client" and not caught.value.retryable


@pytest.mark.slow
def test_unknown_extra_body_key_is_a_client_error(backend: GgufBackend) -> None:
    with pytest.raises(BackendError, match="logit_bias") as caught:
        asyncio.run(backend.generate(request(extra_body={"logit_bias": {}})))
    assert caught.value.kind == "client"


@pytest.mark.slow
def test_prompt_longer_than_the_context_is_a_client_error(backend: GgufBackend) -> None:
    with pytest.raises(BackendError, match="context window") as caught:
        asyncio.run(backend.generate(request(user="测试内容，" * 1500)))
    assert caught.value.kind == "client"


@pytest.mark.slow
def test_identity_has_the_file_hash_and_no_directory(backend: GgufBackend) -> None:
    identity = backend.identity()
    assert identity["backend"] == "gguf"
    assert identity["model"] == GGUF_NAME
    assert identity["size"] == GGUF_SIZE
    assert identity["sha256"] == GGUF_SHA256
    assert identity["n_ctx"] == 2048
    assert str(identity["runtime"]).startswith("llama-cpp-python ")
    assert str(Path(str(backend.path)).parent) not in json.dumps(identity)
    assert backend.identity() == identity  # cached, stable


# -- slow: in-process generation is never abandoned (issue #14) -----------------------------------

#: Starts a long generation, closes the backend as soon as decoding has begun, and reports how
#: the close and the call ended. Run in its own process: freeing the model under a running
#: decode (the bug) is a segmentation fault, which must fail this test, not end the test run.
CLOSE_DURING_GENERATION = """
import asyncio, json, sys, time
from verimod.models import BackendError, BackendOptions, ChatMessage, GenerationParams, ModelRequest, create_backend

backend = create_backend("gguf:" + sys.argv[1], BackendOptions(threads=2, context_size=1024))
llm = backend._llm
messages = (ChatMessage(role="user", content="写一篇关于长江的长文章，至少一千字。"),)
long_request = ModelRequest(sample_id="long", messages=messages, params=GenerationParams(max_tokens=400))

async def main():
    first = long_request.model_copy(update={"params": GenerationParams(max_tokens=1)})
    prompt_tokens = (await backend.generate(first)).prompt_tokens
    llm.n_tokens = 0  # what reset() does first thing: the long call's progress starts from here
    call = asyncio.create_task(backend.generate(long_request))
    while llm.n_tokens <= prompt_tokens:  # until the prompt is evaluated and decoding has begun
        await asyncio.sleep(0.005)
    await backend.aclose()
    report = {"prompt_tokens": prompt_tokens, "tokens_in_context": llm.n_tokens, "call_done_at_close": call.done()}
    try:
        await call
        report["call"] = "answered"
    except BackendError as exc:
        report["call"] = [exc.kind, str(exc)]
    try:
        await backend.generate(long_request)
        report["after"] = "answered"
    except BackendError as exc:
        report["after"] = [exc.kind, str(exc)]
    print(json.dumps(report))

asyncio.run(main())
"""


@pytest.mark.slow
def test_closing_during_generation_stops_it_and_frees_the_model_afterwards() -> None:
    path = gguf_or_skip()
    done = subprocess.run(
        [sys.executable, "-c", CLOSE_DURING_GENERATION, str(path)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"exit code {done.returncode}: {done.stderr[-2000:]}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["call_done_at_close"] is True  # aclose returned only after the generation had ended
    assert report["call"] == ["client", "gguf: generation stopped: the backend was closed"]
    generated = report["tokens_in_context"] - report["prompt_tokens"]
    assert 1 <= generated < 400  # stopped at a decoding step, long before max_tokens
    assert report["after"] == ["client", "gguf: the backend is closed"]


@pytest.mark.slow
def test_eval_with_a_timeout_shorter_than_one_generation_completes(tmp_path: Path) -> None:
    """The reproduction of issue #14 (``--timeout 2`` on a CPU model segfaulted and left the run
    ``running``), with a timeout far shorter than the generation."""
    path = gguf_or_skip()
    runs = tmp_path / "runs"
    command = [sys.executable, "-m", "verimod", "eval", "--model", f"gguf:{path}", "--limit", "1",
               "--timeout", "0.05", "--retries", "0", "--no-cache", "--max-tokens", "24", "--threads", "2",
               "--context-size", "2048", "--runs-dir", str(runs), "--quiet"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"exit code {done.returncode}: {done.stderr[-2000:]}"
    (run,) = runs.iterdir()
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "completed"
    (sample,) = [json.loads(line) for line in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sample["error"] is None and sample["output"]
    assert sample["latency_s"] > 0.05 and sample["attempts"] == 1


# -- slow: the anchor grammar end to end ------------------------------------------------------

#: outputs of the constrained model that must parse (issue #17: ≥ 95 % of 10)
CONSTRAINED_ITEMS = 10


@pytest.mark.slow
def test_the_constrained_model_writes_parseable_records(backend: GgufBackend) -> None:
    """The real VARM zero-shot prompt on the first 10 items of varm-open test, greedy, under
    ``--constrain anchors`` (llguidance's token mask through llama.cpp's logits hook): at least
    95 % of the outputs parse (the unconstrained model parses 0 % of them, issue #17)."""
    from verimod.tasks.varm.evaluate import EvalSettings, prepare_run
    from verimod.tasks.varm.grammar import anchor_grammar
    from verimod.tasks.varm.parser import parse_rationale

    assert backend.grammar_engine == "llguidance"
    params = GenerationParams(temperature=0.0, max_tokens=256)
    settings = EvalSettings(model="gguf:x", limit=CONSTRAINED_ITEMS, constrain="anchors", params=params)
    responses = [asyncio.run(backend.generate(r)) for r in prepare_run(settings).requests]
    assert len(responses) == CONSTRAINED_ITEMS
    parsed = [parse_rationale(r.text or "").ok for r in responses]
    assert sum(parsed) >= 0.95 * CONSTRAINED_ITEMS, [r.text for r in responses]
    for response in responses:
        if response.finish_reason == "stop":
            assert anchor_grammar().matches(response.text or ""), response.text


@pytest.mark.slow
def test_llama_cpp_gbnf_and_the_token_mask_decode_the_same_text(backend: GgufBackend) -> None:
    """Greedy decoding under the two enforcements of one grammar picks the same tokens: both
    masks allow exactly the grammar's continuations."""
    from verimod.tasks.varm.grammar import structured_output

    constrained = request(max_tokens=24, structured=structured_output("anchors"))
    texts = {}
    try:
        for engine in ("llguidance", "gbnf"):
            backend.grammar_engine = engine  # type: ignore[assignment]
            texts[engine] = asyncio.run(backend.generate(constrained)).text
    finally:
        backend.grammar_engine = "llguidance"
    assert texts["llguidance"] and texts["llguidance"] == texts["gbnf"]
