"""The review web app on a real server (uvicorn on loopback) in a real headless Chromium:
review three items by keyboard, correct a field, reload, check persistence and escaping,
export; CSRF and value checks; concurrent reviewers on one database without lost writes."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from yarl import URL

from tests.conftest import write_lines
from tests.helpers.browser import launch_browser
from verimod.tasks.varm.starter import load_starter

pytest.importorskip("starlette", reason="the review app needs the review extra: pip install -e '.[review]'")
pytest.importorskip("uvicorn", reason="the review app needs the review extra: pip install -e '.[review]'")

PAYLOAD = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from typer.testing import CliRunner

    from verimod.cli.app import app

    folder = tmp_path_factory.mktemp("review")
    refs = [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter("dev")[:4]]
    refs[2]["text"] = refs[2]["text"] + PAYLOAD
    data = write_lines(folder / "refs.jsonl", refs)
    result = CliRunner().invoke(app, ["review", "audit", str(data), "-o", str(folder / "audit"), "--sample-rate", "1"])
    assert result.exit_code == 0, result.output
    return {"data": data, "audit": folder / "audit", "root": folder}


class Server:
    """uvicorn serving the app in a thread, on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@pytest.fixture
def server(audit: dict[str, Path], tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    from verimod.review.app import create_app

    db = tmp_path / "review.sqlite"
    with Server(create_app(audit["audit"], db)) as running:
        yield running, db


def test_review_by_keyboard_persists_escapes_and_exports(server, audit, tmp_path):
    running, db = server
    with launch_browser() as browser:
        page = browser.new_context().new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: errors.append(f"dialog {d.message}"))
        page.goto(running.base + "/")
        page.fill("#reviewer", "ann")
        page.click("#start")
        page.wait_for_url(running.base + "/item/1")
        for key in ("q", "w", "e"):
            page.keyboard.press(key)
        page.keyboard.press("Enter")
        page.wait_for_url(running.base + "/item/2")
        page.keyboard.press("a")
        page.select_option("#fix_label", "non_harmful")
        page.select_option("#fix_category", "non_attack")  # the codebook: non_harmful ⇔ non_attack
        page.keyboard.press("Enter")
        page.wait_for_url(running.base + "/item/3")
        assert page.evaluate("window.__xss") is None
        assert PAYLOAD in page.inner_text("#comment")
        page.keyboard.press("s")
        page.keyboard.press("d")
        page.keyboard.press("Enter")
        page.wait_for_url(running.base + "/item/4")
        page.keyboard.press("k")  # back without saving
        page.wait_for_url(running.base + "/item/3")

        page.goto(running.base + "/item/1")
        page.reload()
        assert [page.is_checked(f"#{d}-pass") for d in ("groundedness", "adequacy", "coherence")] == [True] * 3
        page.goto(running.base + "/item/2")
        assert page.is_checked("#groundedness-fail") and page.input_value("#fix_label") == "non_harmful"
        assert page.is_checked("#adequacy-none")
        assert page.locator("#rationale .anchor").count() == 6
        page.goto(running.base + "/")
        assert "3 of 4" in page.inner_text("#progress")
        assert errors == []

    from typer.testing import CliRunner

    from verimod.cli.app import app

    final = tmp_path / "final"
    args = ["review", "export", str(audit["audit"]), "--source", str(audit["data"]), "--db", str(db), "-o", str(final),
            "--json", "-"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    table = {(r["system"], r["dimension"]): r for r in json.loads(result.stdout)["table"]}
    assert table[("reference", "groundedness")]["sources"]["human"] == 2
    assert table[("reference", "adequacy")]["sources"]["human"] == 2
    adjudicated = [json.loads(x) for x in (final / "adjudicated.jsonl").read_text(encoding="utf-8").splitlines()]
    second = load_starter("dev")[1].id
    changed = next(r for r in adjudicated if r["id"] == second)
    assert changed["label"] == "non_harmful" and changed["meta"]["review"]["reviewers"] == ["ann"]


async def _post_many(base: str, reviewer: str, n: int) -> list[int]:
    import aiohttp

    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.get(base + "/") as response:
            assert response.status == 200
        token = session.cookie_jar.filter_cookies(URL(base)).get("verimod_csrf")
        assert token is not None
        async with session.post(base + "/reviewer", data={"csrf": token.value, "reviewer": reviewer}) as response:
            assert response.status == 200  # redirected to the first item

        async def one(k: int) -> int:
            form = {"csrf": token.value, "groundedness": "pass" if k % 2 else "fail", "notes": f"{reviewer} {k}"}
            async with session.post(f"{base}/item/{k % 4 + 1}", data=form, allow_redirects=False) as response:
                return response.status

        return list(await asyncio.gather(*(one(k) for k in range(n))))


def test_concurrent_reviewers_lose_no_write_and_forms_are_checked(server, audit):
    """Two reviewers, each on their own server process-alike (two apps, two event loops, one
    database file), posting 40 decisions each at once."""
    from verimod.review.app import create_app

    running, db = server
    with Server(create_app(audit["audit"], db)) as second:

        async def both() -> list[list[int]]:
            return list(await asyncio.gather(_post_many(running.base, "ann", 40), _post_many(second.base, "bo", 40)))

        statuses = asyncio.run(both())
    assert all(status == 303 for run in statuses for status in run)
    from verimod.review.store import DecisionStore

    store = DecisionStore(db)
    history = store.history()
    assert len(history) == 80
    assert sorted(r["notes"] for r in history) == sorted(f"{who} {k}" for who in ("ann", "bo") for k in range(40))
    assert len(store.current()) == 8  # 2 reviewers × 4 items

    async def attacks() -> list[int]:
        import aiohttp

        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            async with session.get(running.base + "/") as response:
                assert response.status == 200
            token = session.cookie_jar.filter_cookies(URL(running.base))["verimod_csrf"].value
            statuses = []
            async with session.post(running.base + "/item/1", data={"groundedness": "pass"}) as response:
                statuses.append(response.status)  # no token
            foreign = {"Origin": "http://evil.example"}
            async with session.post(running.base + "/item/1", data={"csrf": token}, headers=foreign) as response:
                statuses.append(response.status)  # another origin
            async with session.post(running.base + "/reviewer", data={"csrf": token, "reviewer": "cy"}) as response:
                assert response.status == 200
            bad = {"csrf": token, "fix_stance": "attack"}
            async with session.post(running.base + "/item/1", data=bad, allow_redirects=False) as response:
                statuses.append(response.status)
                statuses.append(int("fix_stance" in await response.text()))
            return statuses

    assert asyncio.run(attacks()) == [403, 403, 400, 1]
    assert len(store.history()) == 80  # nothing saved by the refused posts


def _raw(base: str, method: str, path: str, headers: dict[str, str], body: str = "") -> tuple[int, dict[str, str], str]:
    """One HTTP request over a plain socket to the real server, with exactly these headers."""
    import http.client
    from urllib.parse import urlsplit

    port = urlsplit(base).port
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in {**headers, "Content-Length": str(len(body.encode()))}.items():
        connection.putheader(name, value)
    connection.endheaders(body.encode())
    response = connection.getresponse()
    result = response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    connection.close()
    return result


def test_dns_rebinding_requests_are_refused(server):
    """A page on attacker.example that rebinds its name to 127.0.0.1 sends Host and Origin of
    attacker.example (and whatever cookie it set for itself): refused before any route."""
    running, db = server
    port = running.base.rsplit(":", 1)[1]
    evil = f"attacker.example:{port}"
    status, headers, body = _raw(running.base, "GET", "/", {"Host": evil})
    assert status == 400 and "set-cookie" not in headers and "csrf" not in body
    form = "csrf=forged&groundedness=fail&notes=forged"
    forged = {"Host": evil, "Origin": f"http://{evil}", "Cookie": "verimod_csrf=forged; verimod_reviewer=eve",
              "Content-Type": "application/x-www-form-urlencoded"}  # fmt: skip
    status, _, _ = _raw(running.base, "POST", "/item/1", forged, form)
    assert status == 400
    from verimod.review.store import DecisionStore

    assert DecisionStore(db).history() == []  # the forged decision was not saved
    for host in ("", "attacker.example", f"127.0.0.1.attacker.example:{port}", "127.0.0.1:99999", "a b"):
        assert _raw(running.base, "GET", "/", {"Host": host} if host else {})[0] == 400, host
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", "127.0.0.1"):
        assert _raw(running.base, "GET", "/", {"Host": host})[0] == 200, host
    # the same forged post with a trusted Host is still refused by the CSRF origin check
    status, _, _ = _raw(running.base, "POST", "/item/1", forged | {"Host": f"127.0.0.1:{port}"}, form)
    assert status == 403 and DecisionStore(db).history() == []


def test_a_rebinding_page_in_a_real_browser_and_an_allowed_host(audit, tmp_path):
    """Chromium resolves attacker.example and review.lab to 127.0.0.1 (as a rebinding DNS
    server would): the attacker's name gets the refusal, the name given with --allowed-host the
    app."""
    from verimod.review.app import create_app

    with Server(create_app(audit["audit"], tmp_path / "r.sqlite", allowed_hosts=["review.lab"])) as running:
        port = running.base.rsplit(":", 1)[1]
        rules = "--host-resolver-rules=MAP attacker.example 127.0.0.1, MAP review.lab 127.0.0.1"
        with launch_browser((rules,)) as browser:
            page = browser.new_context().new_page()
            response = page.goto(f"http://attacker.example:{port}/")
            assert response is not None and response.status == 400
            assert "does not serve that Host" in page.inner_text("body")
            assert page.context.cookies() == []
            response = page.goto(f"http://review.lab:{port}/")
            assert response is not None and response.status == 200
            assert page.locator("#reviewer").count() == 1
    with pytest.raises(ValueError, match="not a host name"):
        create_app(audit["audit"], tmp_path / "r.sqlite", allowed_hosts=["review.lab:8765"])


def test_blind_review_hides_systems_and_judge_votes(tmp_path):
    from typer.testing import CliRunner

    from verimod.cli.app import app
    from verimod.review.app import create_app

    refs = [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter("dev")[:3]]
    first, second = write_lines(tmp_path / "alpha-run.jsonl", refs), write_lines(tmp_path / "beta-run.jsonl", refs)
    folder = tmp_path / "audit"
    args = ["review", "audit", str(first), str(second), "-o", str(folder), "--sample-rate", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    ids = [json.loads(x)["id"] for x in (folder / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    votes = {"groundedness": "fail", "adequacy": "pass", "coherence": "pass"}
    write_lines(folder / "judgements.jsonl", [{"item_id": i, "pass": 0, "votes": votes} for i in ids])

    def pages(blind: bool) -> list[str]:
        with Server(create_app(folder, tmp_path / f"{blind}.sqlite", blind=blind)) as running:
            import urllib.request

            return [urllib.request.urlopen(running.base + path, timeout=10).read().decode()
                    for path in ["/", *(f"/item/{n}" for n in range(1, len(ids) + 1))]]  # fmt: skip

    blind, open_ = pages(True), pages(False)
    for page in blind:
        assert "alpha-run" not in page and "beta-run" not in page and 'id="votes"' not in page
        assert "judge_fail" not in page and "non_unanimous" not in page and 'id="system"' not in page
    assert "blind review" in blind[1]
    assert any("alpha-run/" in page for page in open_) and any('id="votes"' in page for page in open_[1:])
    shown = [re.search(r'id="item-id">([^<]*)<', page).group(1) for page in blind[1:]]  # type: ignore[union-attr]
    assert sorted(shown) == sorted(r["id"] for r in refs for _ in range(2))
    # the two sources are interleaved (seeded), not shown in blocks
    opened = [re.search(r'id="item-id">([^<]*)<', page).group(1) for page in open_[1:]]  # type: ignore[union-attr]
    assert [o.split("/")[0] for o in opened] == ["alpha-run"] * 3 + ["beta-run"] * 3
