"""The ``hfcls:`` sequence-classifier backend: fast checks of specs and errors, and slow ones on
a real transformers classifier — the Qwen2.5-Coder-0.5B backbone (de-quantised from its GGUF
file, see ``local_model.py``; its first two layers, see :data:`LAYERS`) with a seeded three-way
classification head — compared with a direct, unbatched transformers computation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_lines
from tests.helpers.memory import release_memory
from tests.models.local_model import hf_dir_or_skip
from verimod.models import BackendError, BackendOptions, ChatMessage, ModelRequest, ModelResponse, backends
from verimod.models.registry import create_backend

LABELS = ("entailment", "neutral", "contradiction")
TEXTS = (
    "Velorian teachers bring their own customs to class.",
    "今天天气真好。",
    "Children should learn shared values, and every school should teach them the same way.",
)
PAIRS = (
    ("Children should learn shared values.", "Velorians should not teach in our schools."),
    ("A man is eating.", "Nobody eats."),
)


def classify_request(sample_id: str, text: str | None = None, pair: tuple[str, str] | None = None) -> ModelRequest:
    return ModelRequest(
        sample_id=sample_id,
        messages=(ChatMessage(role="user", content="classify"),),
        input_text=text,
        input_pair=pair,
    )


def ok(result: ModelResponse | BackendError) -> ModelResponse:
    assert isinstance(result, ModelResponse), result
    return result


# -- fast ---------------------------------------------------------------------------------------


def test_prefix_is_registered() -> None:
    pytest.importorskip("transformers")
    from verimod.models.hf_classifier import HfClassifierBackend

    assert backends.get("hfcls") is HfClassifierBackend
    assert HfClassifierBackend.kind == "classifier"


def test_spec_and_option_errors(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    with pytest.raises(BackendError, match="needs a model folder"):
        create_backend("hfcls:")
    with pytest.raises(BackendError, match="model folder not found"):
        create_backend(f"hfcls:{tmp_path / 'absent'}")
    with pytest.raises(BackendError, match="base_urls"):
        create_backend(f"hfcls:{tmp_path}", BackendOptions(base_urls=("http://x",)))
    with pytest.raises(BackendError, match="cannot load classifier"):
        create_backend(f"hfcls:{tmp_path}")  # an empty folder


# -- slow: a real classifier ---------------------------------------------------------------------


#: Transformer layers of the backbone kept in the test classifier. What these tests check —
#: batching, padding, text pairs, label order, probabilities against unbatched transformers —
#: does not depend on depth; two of the 24 real layers keep the real architecture, weights and
#: tokenizer at a third of the memory (three copies are alive at once) and time.
LAYERS = 2


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real backbone (its first :data:`LAYERS` layers) with a seeded classification head,
    saved as a classifier folder."""
    source = hf_dir_or_skip()
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    config = AutoConfig.from_pretrained(source)
    config.num_hidden_layers = LAYERS
    if getattr(config, "layer_types", None):
        config.layer_types = config.layer_types[:LAYERS]
    config.num_labels = len(LABELS)
    config.id2label = dict(enumerate(LABELS))
    config.label2id = {label: i for i, label in enumerate(LABELS)}
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(source, config=config)
    assert len(model.model.layers) == LAYERS
    tokenizer = AutoTokenizer.from_pretrained(source)
    model.config.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    target = tmp_path_factory.mktemp("classifier")
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    del model
    release_memory()
    return target


@pytest.fixture(scope="module")
def reference(classifier_dir: Path) -> Iterator[Any]:
    """Unbatched probabilities straight from transformers: ``text or (a, b)`` → softmax row."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(classifier_dir)
    # held in a dict so that teardown can drop it (pytest keeps the fixture value until after teardown)
    loaded = {"model": AutoModelForSequenceClassification.from_pretrained(classifier_dir, dtype=torch.float32).eval()}

    def probs(item: str | tuple[str, str]) -> dict[str, float]:
        encoded = (
            tokenizer(*item, return_tensors="pt") if isinstance(item, tuple) else tokenizer(item, return_tensors="pt")
        )
        with torch.inference_mode():
            row = torch.softmax(loaded["model"](**encoded).logits[0].float(), dim=-1).tolist()
        return dict(zip(LABELS, row, strict=True))

    yield probs
    loaded.clear()
    release_memory()


@pytest.fixture(scope="module")
def backend(classifier_dir: Path) -> Iterator[Any]:
    created = create_backend(f"hfcls:{classifier_dir}", BackendOptions(threads=2, batch_size=8))
    yield created
    asyncio.run(created.aclose())
    release_memory()


@pytest.mark.slow
def test_batched_texts_and_pairs_equal_unbatched_transformers(backend: Any, reference: Any) -> None:
    requests = [classify_request(f"t{i}", text=t) for i, t in enumerate(TEXTS)]
    requests += [classify_request(f"p{i}", pair=p) for i, p in enumerate(PAIRS)]
    requests.append(classify_request("none"))
    results = asyncio.run(backend.generate_batch(requests))
    assert isinstance(results[-1], BackendError) and results[-1].kind == "client"
    for item, result in zip([*TEXTS, *PAIRS], results[:-1], strict=True):
        response = ok(result)
        expected = reference(item)
        assert response.label_probs is not None and list(response.label_probs) == list(LABELS)
        assert response.label_probs == pytest.approx(expected, abs=2e-4)
        assert sum(response.label_probs.values()) == pytest.approx(1.0, abs=1e-6)
        assert response.text == max(expected, key=lambda label: expected[label])
    assert backend.identity()["labels"] == list(LABELS)


@pytest.mark.slow
def test_nli_scorer_reads_the_pair_probabilities(backend: Any, reference: Any) -> None:
    from verimod.tasks.softhate.scorers import BackendNliScorer

    premise, hypothesis = PAIRS[0]
    probs = asyncio.run(BackendNliScorer(backend).score(premise, hypothesis, key="k"))
    expected = reference(PAIRS[0])
    assert (probs.entail, probs.neutral, probs.contradict) == pytest.approx(
        (expected["entailment"], expected["neutral"], expected["contradiction"]), abs=2e-4
    )


@pytest.mark.slow
def test_softhate_evaluate_with_a_classifier_detector(classifier_dir: Path, reference: Any, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from verimod.cli.app import app

    items = write_lines(tmp_path / "items.jsonl", [{"id": f"i{k}", "text": t} for k, t in enumerate(TEXTS)])
    out = tmp_path / "judged.jsonl"
    args = ["softhate", "evaluate", str(items), "-o", str(out), "-m", f"hfcls:{classifier_dir}",
            "--positive", "contradiction", "--threshold", "0.34", "--no-cache"]  # fmt: skip
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    judged = {row["item_id"]: row for row in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    for k, text in enumerate(TEXTS):
        p_hate = reference(text)["contradiction"]
        assert judged[f"i{k}"]["p_hate"] == pytest.approx(p_hate, abs=2e-4)
        assert judged[f"i{k}"]["label"] == ("hate" if p_hate >= 0.34 else "non_hate")


@pytest.mark.slow
def test_safety_filter_scorer_sums_the_named_labels(backend: Any, reference: Any) -> None:
    from verimod.tasks.softhate.filters import backend_scorer

    score = backend_scorer(backend, positive=("contradiction", "Neutral"))
    expected = reference(TEXTS[0])
    assert asyncio.run(score(TEXTS[0])) == pytest.approx(expected["contradiction"] + expected["neutral"], abs=2e-4)
