"""End-to-end throughput of ``verimod eval`` against a loopback OpenAI-compatible server.

The fake server (tests/helpers/fake_openai.py) runs in a separate process, so client and
server use one core each. Each sample is requested, stored (samples.jsonl), parsed and scored.

1. instant answers, concurrency 64: samples/s end to end, beside a bare aiohttp client loop
   doing only the HTTP requests at the same concurrency (the transport floor) — the ratio is
   verimod's overhead;
2. 200 ms simulated latency, concurrency 64: samples/s against the Little's-law limit
   64 / 0.2 s = 320 samples/s;
3. serving faults (issue #20), answers after a fixed latency (``--fault-latency``, default
   0.1 s: the time is then set by how many requests the engine keeps in flight, not by the
   shared CPUs), concurrency 64, each beside its fault-free reference in the same run: 5 % of
   the answers HTTP 429 (with the server's Retry-After of 0.05 s, and without one); a fleet of
   one dead ``--base-url`` and one healthy server against the healthy server alone; a fleet
   where one server answers 30 % HTTP 503 against two healthy servers. The cases run in turn,
   ``--rounds`` times; each line gives the median time of the request phase, the ratio of
   medians and the failed samples;
4. peak memory (the maximum resident set size of the ``verimod eval`` process, from
   ``wait4``) of whole ``verimod eval --no-cache`` runs of ``--memory-n`` items (default
   50,000 and 1,000,000), the fake server in its own process keeping no request bodies.

    python benchmarks/bench_eval.py [--n 5000] [--n-latency 3000] [--only throughput,faults,memory]
        [--n-faults 3000] [--rounds 3] [--fault-latency 0.1] [--memory-n 50000 --memory-n 1000000]
        [--memory-src OTHER-CHECKOUT/src]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from tests.helpers.fake_openai import dead_base_url  # noqa: E402

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


def start_server(folder: Path, delay: float, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """The fake server in its own process (``extra``: its options, e.g. ``--fault-rate 429=0.05``)."""
    process = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "tests/helpers/fake_openai.py"),
            "--answers",
            str(folder / "answers.json"),
            "--delay",
            str(delay),
            *extra,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    return process, f"http://127.0.0.1:{int(line.split()[1])}/v1"


@dataclass(frozen=True)
class EvalResult:
    """One benchmarked run: samples, seconds end to end and of the request phase, JREM, failed
    samples, and the engine's counters of the request phase (the manifest's ``engine_phases``)."""

    n: int
    elapsed_s: float
    requested_s: float
    jrem: float
    failed: int
    engine: dict[str, object]


def eval_run(data: Path, base_urls: Sequence[str], runs: Path, concurrency: int) -> EvalResult:
    """One whole run (reading, run creation, requests, scoring) against ``base_urls``."""
    settings = EvalSettings(
        model="openai:bench",
        data=str(data),
        engine=EngineConfig(max_concurrency=concurrency),
        backend_options=BackendOptions(base_urls=tuple(base_urls)),
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
    scores, _ = score_run(store, keep_items=False)
    store.release()
    elapsed = time.perf_counter() - t0
    n = len(prepared.requests)
    assert scores.n == n
    return EvalResult(
        n, elapsed, requested, scores.jrem, store.manifest.counts.errors, store.manifest.engine_phases[-1]
    )


def eval_throughput(data: Path, base_url: str, runs: Path, concurrency: int) -> tuple[float, float, float]:
    """(end-to-end samples/s including reading, run creation and scoring; request-phase samples/s; JREM)"""
    result = eval_run(data, [base_url], runs, concurrency)
    assert result.failed == 0
    return result.n / result.elapsed_s, result.n / result.requested_s, result.jrem


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


def throughput(folder: Path, n: int, n_latency: int, concurrency: int) -> None:
    """Sections 1 and 2 of the module docstring."""
    data = write_data(folder, n)
    server, url = start_server(folder, 0.0)
    try:
        floor = transport_floor(data, url, concurrency)
        rate, phase, jrem = eval_throughput(data, url, folder / "runs", concurrency)
    finally:
        server.terminate()
    print(
        f"instant server, concurrency {concurrency}, n={n:,}: {rate:,.0f} samples/s end to end "
        f"(read, request, store, parse, score; jrem {jrem:.3f}); request phase alone {phase:,.0f}/s; "
        f"bare aiohttp requests {floor:,.0f}/s: ratio {phase / floor:.2f}"
    )
    small = write_data(folder, n_latency)
    server, url = start_server(folder, 0.2)
    try:
        rate, phase, _ = eval_throughput(small, url, folder / "runs2", concurrency)
    finally:
        server.terminate()
    limit = concurrency / 0.2
    print(
        f"200 ms latency, concurrency {concurrency}, n={n_latency:,}: request phase {phase:,.0f} "
        f"samples/s = {100 * phase / limit:.1f}% of the Little's-law limit {limit:.0f}/s "
        f"(end to end, with reading and scoring: {rate:,.0f}/s = {100 * rate / limit:.1f}%)"
    )


#: (name, the options of each server of the fleet; "dead": a port nothing listens on)
FAULT_CASES: list[tuple[str, list[list[str] | str]]] = [
    ("one healthy server", [[]]),
    ("5 % HTTP 429, Retry-After 0.05 s", [["--fault-rate", "429=0.05"]]),
    ("5 % HTTP 429, no Retry-After", [["--fault-rate", "429=0.05", "--retry-after", "none"]]),
    ("dead replica + healthy one", ["dead", []]),
    ("two healthy servers", [[], []]),
    ("one replica 30 % HTTP 503 + healthy one", [["--fault-rate", "503=0.3", "--seed", "1"], []]),
]
#: each case's reference (the fault-free run it is compared with)
FAULT_REFERENCE = {
    "5 % HTTP 429, Retry-After 0.05 s": "one healthy server",
    "5 % HTTP 429, no Retry-After": "one healthy server",
    "dead replica + healthy one": "one healthy server",
    "one replica 30 % HTTP 503 + healthy one": "two healthy servers",
}


def faults(folder: Path, n: int, concurrency: int, rounds: int, latency: float) -> None:
    """Section 3 of the module docstring: the cases run in turn, ``rounds`` times (the machine's
    load changes from minute to minute); each line gives the median request-phase time."""
    data = write_data(folder, n)
    times: dict[str, list[float]] = {name: [] for name, _ in FAULT_CASES}
    last: dict[str, EvalResult] = {}
    failed: dict[str, int] = dict.fromkeys(times, 0)
    for round_ in range(rounds):
        for number, (name, fleet) in enumerate(FAULT_CASES):
            servers = [start_server(folder, latency, *replica) for replica in fleet if replica != "dead"]
            urls = iter(url for _, url in servers)
            base_urls = [dead_base_url() if replica == "dead" else next(urls) for replica in fleet]
            try:
                last[name] = result = eval_run(data, base_urls, folder / f"runs-{round_}-{number}", concurrency)
            finally:
                for process, _ in servers:
                    process.terminate()
            times[name].append(result.requested_s)
            failed[name] += result.failed
    for name, _ in FAULT_CASES:
        median = statistics.median(times[name])
        reference = FAULT_REFERENCE.get(name)
        ratio = f" = {median / statistics.median(times[reference]):.2f}× {reference}" if reference else ""
        result = last[name]
        replicas = "; ".join(
            f"{r['answered']} answered, failures {r['failures'] or 0}, lowest limit {r['lowest_limit']}, "
            f"pauses {r['pauses']}, ejections {r['ejections']}"
            for r in result.engine["replicas"]  # type: ignore[attr-defined]
        )
        print(
            f"{name}, latency {latency:g} s, n={n:,}, concurrency {concurrency}: request phase median "
            f"{median:.2f} s of {rounds} "
            f"({', '.join(f'{t:.2f}' for t in times[name])}){ratio}; failed samples {failed[name]} in all; "
            f"last round: retries {result.engine['retries'] or 0}; replicas: {replicas}"
        )


def memory(folder: Path, sizes: Sequence[int], concurrency: int, source: Path) -> None:
    """Section 4 of the module docstring; ``source``: the ``src`` folder of the verimod to run."""
    for n in sizes:
        data = write_data(folder, n)
        server, url = start_server(folder, 0.0, "--no-record")
        runs = folder / f"runs-memory-{n}"
        command = [sys.executable, "-c", "from verimod.cli.app import main; main()", "eval", "--model"]
        command += ["openai:bench", "--base-url", url, "--data", str(data), "--runs-dir", str(runs)]
        command += ["--max-concurrency", str(concurrency), "--no-cache", "--quiet"]
        environment = os.environ | {"PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")])}
        try:
            t0 = time.perf_counter()
            child = subprocess.Popen(command, env=environment, stderr=subprocess.PIPE, text=True)
            _, status, usage = os.wait4(child.pid, 0)
            elapsed = time.perf_counter() - t0
        finally:
            server.terminate()
        assert child.stderr is not None
        code = os.waitstatus_to_exitcode(status)
        assert code == 0, f"verimod eval exited {code}: {child.stderr.read()[-2000:]}"
        peak = usage.ru_maxrss / 1024  # KiB on Linux
        print(
            f"memory, n={n:,}, concurrency {concurrency}: peak RSS of verimod eval {peak:,.0f} MiB "
            f"({1024 * peak / n:,.2f} KiB per item); whole run {elapsed:,.0f} s ({n / elapsed:,.0f} samples/s)"
        )
        for path in runs.glob("*/*.jsonl"):
            path.unlink()  # a million items' samples are gigabytes
        data.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--n-latency", type=int, default=3000)
    parser.add_argument("--n-faults", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--only", default="throughput,faults,memory", help="sections, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the fault cases (median)")
    parser.add_argument("--fault-latency", type=float, default=0.1, help="seconds the servers of the fault cases take")
    parser.add_argument("--memory-n", type=int, action="append", help="items of a memory run (repeatable)")
    parser.add_argument(
        "--memory-src", type=Path, default=REPO / "src", help="the verimod source the memory runs use (before/after)"
    )
    args = parser.parse_args()
    sections = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "throughput" in sections:
            throughput(folder, args.n, args.n_latency, args.concurrency)
        if "faults" in sections:
            faults(folder, args.n_faults, args.concurrency, args.rounds, args.fault_latency)
        if "memory" in sections:
            memory(folder, args.memory_n or [50_000, 1_000_000], args.concurrency, args.memory_src)


if __name__ == "__main__":
    main()
