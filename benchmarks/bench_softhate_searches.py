"""Reverse-AMT searches at scale against a loopback OpenAI-compatible server with latency.

Every model is HTTP: the generator, the NLI scorer (asked in words) and the scorer LM (the
server's ``prompt_logprobs``, vLLM protocol: two ``/tokenize`` calls and one ``/completions``
per scored text). The fake server (tests/helpers/fake_openai.py, its toy language model over
printable ASCII) answers after ``--latency`` seconds, in a separate process (this script with
``--serve``), so client and server use one core each. One search with K₁ = 5, B = 3, K₂ = 5
makes 20 generator calls, 20 NLI calls and 20 scorer-LM scorings (100 HTTP requests), in two
dependent rounds.

Printed side by side in one run: ``--n`` searches one at a time (``--parallel 1``) and
``--parallel P`` at once under a bound of ``--max-concurrency`` requests in flight per model;
the ratio is the speed-up of running searches in parallel, and the floor beside it is the
time if only latency counted (rounds × latency × ceil(searches / parallel)).

    python benchmarks/bench_softhate_searches.py [--n 32] [--parallel 8] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers.fake_openai import FakeOpenAI  # noqa: E402

from verimod.core.engine import EngineConfig  # noqa: E402
from verimod.models import BackendOptions, create_backend  # noqa: E402
from verimod.tasks.softhate.http_scorer import HttpLanguageScorer  # noqa: E402
from verimod.tasks.softhate.schema import Level1Domain, SearchConfig, Standpoint, TargetGroup  # noqa: E402
from verimod.tasks.softhate.scorers import BackendNliScorer  # noqa: E402
from verimod.tasks.softhate.searches import BoundedBackend, plan_searches, run_searches  # noqa: E402

GROUP = TargetGroup(name="Velorians", level1=Level1Domain.NATIONALITY_REGION, level2="Velorian")


def answer(user: str) -> str:
    k = m.group(1) if (m := re.search(r"candidate (\d+) of", user)) else "0"
    if "entailment, neutral or contradiction" in user:
        return "entailment"
    if "the maxim (M)" in user:
        return json.dumps({"premise": f"velorians cause trouble {k} {len(user)}", "maxim": f"trouble is bad {k}"})
    return json.dumps({"endoxon": f"order matters {k}", "datum": f"velorians were loud {k} {len(user)}"})


async def run(base_url: str, n: int, parallel: int, concurrency: int, tag: str) -> tuple[float, float]:
    options = BackendOptions(base_urls=(base_url,))
    generator = BoundedBackend(create_backend(f"openai:gen-{tag}", options), concurrency)
    nli_backend = BoundedBackend(create_backend(f"openai:nli-{tag}", options), concurrency)
    lm_backend = create_backend(f"openai:lm-{tag}", options)
    engine = EngineConfig(max_concurrency=concurrency)
    nli = BackendNliScorer(nli_backend, engine=engine)
    lm = HttpLanguageScorer(lm_backend, top_k=5, engine=engine)
    await lm.probe()
    standpoints = [Standpoint(id=f"{tag}{i}", text=f"Velorians are a problem {i}.", target=GROUP) for i in range(n)]
    done: list[object] = []
    start, cpu = time.perf_counter(), time.process_time()
    await run_searches(plan_searches(standpoints), generator=generator, nli=nli, lms=[lm], safety=lambda _: True,
                       config=SearchConfig(), on_trace=done.append, parallel=parallel, engine=engine)  # fmt: skip
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    for backend in (generator, nli_backend, lm_backend):
        await backend.aclose()
    assert len(done) == n
    return elapsed, used


def serve(latency: float) -> None:
    """Run the fake server in this process (``--serve``); prints ``PORT <n>`` when ready."""
    from aiohttp import web

    vocabulary = "".join(chr(c) for c in range(32, 127)) + "\n"
    behaviour = FakeOpenAI(default=answer, delay_s=latency, vocabulary=vocabulary)

    async def go() -> None:
        runner = web.AppRunner(behaviour.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(f"PORT {site._server.sockets[0].getsockname()[1]}", flush=True)  # type: ignore[union-attr]
        await asyncio.Event().wait()

    asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--max-concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--latency", str(args.latency)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().split()[1]}/v1"
        serial_run = asyncio.run(run(url, args.n, 1, args.max_concurrency, "s"))
        parallel_run = asyncio.run(run(url, args.n, args.parallel, args.max_concurrency, "p"))
    finally:
        server.terminate()
        server.wait(10)
    # rounds per search: step-1 generation, then its NLI and LM scoring (concurrent; an LM scoring
    # is 3 sequential requests: tokenize, tokenize, completions); step 2 the same
    rounds = 2 * (1 + 3)
    floor = rounds * args.latency * math.ceil(args.n / args.parallel)
    print(f"{args.n} searches, latency {args.latency * 1000:.0f} ms, bound {args.max_concurrency} in flight per model")
    (serial, serial_cpu), (parallel, parallel_cpu) = serial_run, parallel_run
    print(f"  one at a time : {serial:6.2f} s, client CPU {serial_cpu:5.2f} s ({args.n / serial:5.2f} searches/s)")
    print(
        f"  {args.parallel} at a time  : {parallel:6.2f} s, client CPU {parallel_cpu:5.2f} s "
        f"({args.n / parallel:5.2f} searches/s)  speed-up {serial / parallel:4.1f}×; latency-only floor {floor:.2f} s"
    )
    print(f"  load average at the end: {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
