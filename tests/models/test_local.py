"""``SerialRunner``, which runs the in-process models' blocking calls: one at a time, stopped
cooperatively, and never freed while a call runs (issue #14)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from verimod.models._local import GenerationStopped, SerialRunner
from verimod.models.base import BackendError


def endless(runner: SerialRunner, started: threading.Event, log: list[str]) -> None:
    """A blocking call that only ends when a checkpoint stops it (as a long decode would)."""
    log.append("start")
    started.set()
    try:
        for _ in range(2000):  # 10 s at most, so a broken stop fails the test instead of hanging
            runner.checkpoint()
            time.sleep(0.005)
        log.append("ran to the end")
    finally:
        log.append("stopped")


def test_serial_runner_runs_one_call_at_a_time() -> None:
    runner = SerialRunner()
    active: list[int] = []
    overlaps: list[int] = []

    def work(value: int) -> int:
        active.append(value)
        overlaps.append(len(active))
        time.sleep(0.02)
        active.remove(value)
        return value * 2

    async def main() -> list[int]:
        return list(await asyncio.gather(*(runner.run(lambda v=v: work(v)) for v in range(4))))

    assert asyncio.run(main()) == [0, 2, 4, 6]
    assert max(overlaps) == 1


def test_close_stops_the_running_call_and_releases_only_after_it_ended() -> None:
    runner = SerialRunner("gguf")
    started = threading.Event()
    log: list[str] = []

    async def main() -> tuple[BaseException | None, BackendError]:
        call = asyncio.create_task(runner.run(lambda: endless(runner, started, log)))
        await asyncio.to_thread(started.wait)
        await runner.close(lambda: log.append("release"))
        stopped = (await asyncio.gather(call, return_exceptions=True))[0]
        with pytest.raises(BackendError) as later:
            await runner.run(lambda: log.append("a call after close"))
        return stopped if isinstance(stopped, BaseException) else None, later.value

    stopped, later = asyncio.run(main())
    assert log == ["start", "stopped", "release"]
    assert isinstance(stopped, GenerationStopped) and stopped.kind == "client" and not stopped.retryable
    assert "closed" in str(stopped)
    assert later.kind == "client" and str(later) == "gguf: the backend is closed"
    assert runner.closed


def test_a_cancelled_caller_stops_its_call_and_the_next_call_runs() -> None:
    runner = SerialRunner("hf")
    started = threading.Event()
    log: list[str] = []

    async def main() -> str:
        call = asyncio.create_task(runner.run(lambda: endless(runner, started, log)))
        await asyncio.to_thread(started.wait)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        return await runner.run(lambda: "next")  # waits for the lock, which the stopped call frees

    t0 = time.monotonic()
    assert asyncio.run(main()) == "next"
    assert log == ["start", "stopped"]
    assert time.monotonic() - t0 < 5  # stopped at a checkpoint, not run to its 10 s end


def test_close_with_nothing_running_releases_at_once() -> None:
    runner = SerialRunner()
    released: list[bool] = []
    asyncio.run(runner.close(lambda: released.append(True)))
    assert released == [True]
