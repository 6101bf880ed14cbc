import sqlite3

import pytest

from verimod.core.cache import ResponseCache, _enable_wal, cache_key
from verimod.models.base import ChatMessage, GenerationParams, ModelRequest, ModelResponse, StructuredOutput

IDENTITY = {"backend": "openai", "model": "m"}
BASE = ModelRequest(sample_id="a", messages=(ChatMessage(role="user", content="文本"),))


@pytest.mark.parametrize(
    "changed",
    [
        BASE.model_copy(update={"sample_id": "b"}),
        BASE.model_copy(update={"repeat": 1}),
        BASE.model_copy(update={"messages": (ChatMessage(role="user", content="文本2"),)}),
        BASE.model_copy(update={"messages": (ChatMessage(role="system", content="文本"),)}),
        BASE.model_copy(update={"params": GenerationParams(temperature=0.7)}),
        BASE.model_copy(update={"params": GenerationParams(seed=1)}),
        BASE.model_copy(update={"params": GenerationParams(max_tokens=10)}),
        BASE.model_copy(update={"params": GenerationParams(stop=("。",))}),
        BASE.model_copy(update={"params": GenerationParams(top_p=0.5)}),
        BASE.model_copy(update={"params": GenerationParams(extra_body={"x": 1})}),
        BASE.model_copy(update={"params": GenerationParams(structured=StructuredOutput(regex="a+"))}),
        BASE.model_copy(update={"labels": ("safe", "unsafe")}),
    ],
)
def test_every_parameter_changes_the_key(changed):
    assert cache_key(IDENTITY, changed, "p1") != cache_key(IDENTITY, BASE, "p1")


def test_identity_and_prompt_version_change_the_key():
    assert cache_key({**IDENTITY, "model": "n"}, BASE, "p1") != cache_key(IDENTITY, BASE, "p1")
    assert cache_key(IDENTITY, BASE, "p2") != cache_key(IDENTITY, BASE, "p1")
    assert cache_key(dict(reversed(IDENTITY.items())), BASE, "p1") == cache_key(IDENTITY, BASE, "p1")


def test_round_trip_wal_info_and_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path))
    cache = ResponseCache(commit_every=2)
    assert cache.path.parent == tmp_path
    key = cache_key(IDENTITY, BASE, "p1")
    cache.put(key, ModelResponse(text="回答", completion_tokens=3), IDENTITY)
    assert cache.get(key).text == "回答"
    cache.put(
        cache_key({"backend": "openai", "model": "other"}, BASE, "p1"), ModelResponse(text="x"), {"model": "other"}
    )
    info = cache.info()
    assert info["entries"] == 2 and {r["model"] for r in info["by_model"]} == {"m", "other"}
    assert sqlite3.connect(cache.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert cache.clear("other") == 1 and cache.info()["entries"] == 1
    cache.close()
    reopened = ResponseCache()
    assert reopened.get(key).text == "回答"
    assert reopened.clear() == 1 and reopened.get(key) is None
    reopened.close()


class _BusyThenFree:
    """A connection stub whose ``PRAGMA journal_mode=WAL`` is refused ``busy`` times first."""

    def __init__(self, busy: int, message: str = "database is locked") -> None:
        self.busy, self.message, self.calls = busy, message, 0

    def execute(self, sql: str) -> None:
        assert sql == "PRAGMA journal_mode=WAL"
        self.calls += 1
        if self.calls <= self.busy:
            raise sqlite3.OperationalError(self.message)


def test_switching_to_wal_is_retried_while_the_file_is_locked() -> None:
    db = _BusyThenFree(busy=3)
    _enable_wal(db, wait_s=5, pause_s=0.001)  # type: ignore[arg-type]
    assert db.calls == 4


def test_switching_to_wal_gives_up_after_the_wait_and_on_other_errors() -> None:
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _enable_wal(_BusyThenFree(busy=10**9), wait_s=0.05, pause_s=0.001)  # type: ignore[arg-type]
    other = _BusyThenFree(busy=1, message="disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        _enable_wal(other, wait_s=5, pause_s=0.001)  # type: ignore[arg-type]
    assert other.calls == 1
