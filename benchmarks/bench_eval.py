"""End-to-end throughput of ``verimod eval`` against a loopback OpenAI-compatible server.

The fake server (tests/helpers/fake_openai.py) runs in a separate process, so client and
server use one core each. Each sample is requested, stored (samples.jsonl), parsed and scored.

1. instant answers, concurrency 64: samples/s end to end, beside a bare aiohttp client loop
   doing only the HTTP requests at the same concurrency (the transport floor) — the ratio is
   verimod's overhead;
2. 200 ms simulated latency, concurrency 64: samples/s against the Little's-law limit
   64 / 0.2 s = 320 samples/s.

    python benchmarks/bench_eval.py [--n 5000] [--n-latency 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from verimod.core.engine import EngineConfig  # noqa: E402
from verimod.models import BackendOptions, GenerationParams, create_backend  # noqa: E402
from verimod.tasks.varm.evaluate import (  # noqa: E402
    EvalSettings,
    build_requests,
    execute,
    prepare_run,
    score_run,
    start_run,
)
from verimod.tasks.varm.prompts import load_prompt  # noqa: E402
from verimod.tasks.varm.starter import load_starter  # noqa: E402


def write_data(folder: Path, n: int) -> Path:
    """``n`` items cycling through the starter set (unique ids), as a reference file."""
    pool = load_starter()
    path = folder / "data.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        for i in range(n):
            row = pool[i % len(pool)].model_dump(exclude_none=True)
            row["id"] = f"b{i}"
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    answers = {}
    for request, ref in zip(build_requests(pool, load_prompt("zero-shot"), [], GenerationParams()), pool, strict=True):
        answers[request.messages[-1].content] = ref.cot
    (folder / "answers.json").write_text(json.dumps(answers, ensure_ascii=False), encoding="utf-8")
    return path


def start_server(folder: Path, delay: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "tests/helpers/fake_openai.py"),
            "--answers",
            str(folder / "answers.json"),
            "--delay",
            str(delay),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    return process, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def eval_throughput(data: Path, base_url: str, runs: Path, concurrency: int) -> tuple[float, float, float]:
    """(end-to-end samples/s including reading, run creation and scoring; request-phase samples/s; JREM)"""
    settings = EvalSettings(
        model="openai:bench",
        data=str(data),
        engine=EngineConfig(max_concurrency=concurrency),
        backend_options=BackendOptions(base_urls=(base_url,)),
    )
    t0 = time.perf_counter()
    prepared = prepare_run(settings)
    backend = create_backend(settings.model, settings.backend_options)
    store = start_run(settings, prepared, backend, runs)

    async def go() -> None:
        try:
            await execute(store, backend, prepared.requests, prepared.template, cache=None)
        finally:
            await backend.aclose()

    t1 = time.perf_counter()
    asyncio.run(go())
    requested = time.perf_counter() - t1
    scores, _ = score_run(store)
    elapsed = time.perf_counter() - t0
    assert scores.n == len(prepared.requests) and store.manifest.counts.errors == 0
    n = len(prepared.requests)
    return n / elapsed, n / requested, scores.jrem


def transport_floor(data: Path, base_url: str, concurrency: int) -> float:
    """Only the HTTP requests, the same bodies, the same concurrency, nothing stored or parsed."""
    settings = EvalSettings(model="openai:bench", data=str(data))
    prepared = prepare_run(settings)
    bodies = [
        json.dumps({"model": "bench", "messages": [m.model_dump() for m in r.messages]}) for r in prepared.requests
    ]

    async def go() -> float:
        queue = list(bodies)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def worker() -> None:
                while queue:
                    body = queue.pop()
                    async with session.post(
                        f"{base_url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
                    ) as response:
                        await response.read()

            t0 = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return len(bodies) / (time.perf_counter() - t0)

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--n-latency", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = write_data(folder, args.n)
        server, url = start_server(folder, 0.0)
        try:
            floor = transport_floor(data, url, args.concurrency)
            rate, phase, jrem = eval_throughput(data, url, folder / "runs", args.concurrency)
        finally:
            server.terminate()
        print(
            f"instant server, concurrency {args.concurrency}, n={args.n:,}: {rate:,.0f} samples/s end to end "
            f"(read, request, store, parse, score; jrem {jrem:.3f}); request phase alone {phase:,.0f}/s; "
            f"bare aiohttp requests {floor:,.0f}/s: ratio {phase / floor:.2f}"
        )
        small = write_data(folder, args.n_latency)
        server, url = start_server(folder, 0.2)
        try:
            rate, phase, _ = eval_throughput(small, url, folder / "runs2", args.concurrency)
        finally:
            server.terminate()
        limit = args.concurrency / 0.2
        print(
            f"200 ms latency, concurrency {args.concurrency}, n={args.n_latency:,}: request phase {phase:,.0f} "
            f"samples/s = {100 * phase / limit:.1f}% of the Little's-law limit {limit:.0f}/s "
            f"(end to end, with reading and scoring: {rate:,.0f}/s = {100 * rate / limit:.1f}%)"
        )


if __name__ == "__main__":
    main()
