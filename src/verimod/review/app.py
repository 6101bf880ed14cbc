"""The review web app: Starlette, server-rendered Jinja2 pages, one small script for the keys.

Routes: ``GET /`` the queue and the reviewer's name; ``POST /reviewer`` sets the name;
``GET /item/{n}`` one routed item (1-based); ``POST /item/{n}`` saves the decision and moves to
the next item; ``GET /static/review.js``.

Safety: every value reaches the page through Jinja2 autoescaping (model outputs and data are
text, never markup); responses carry a Content-Security-Policy that allows only this origin's
script and no inline script; forms are CSRF-checked twice — a random token in a ``SameSite=
Strict`` cookie must equal the form's hidden ``csrf`` field (double submit), and a request with
an ``Origin`` header must come from the app's own origin. The reviewer's name lives in a
cookie and is required before a decision is saved. Values are checked: verdicts pass / fail /
empty, corrections one of the codebook's admissible values (the target: free text up to 200
characters), notes up to 2,000 characters; anything else is a 400 naming the field.

Hosts: requests whose ``Host`` header names a host the app does not trust get a 400 before
they reach a route (DNS rebinding; :mod:`.hosts`). Blinding (``blind=True``, the default): the
pages show neither the system that wrote a rationale (its source-prefixed audit id neither: the
item's own id instead) nor the judges' votes or the routing reasons that come from them; items
of several sources come in a seeded interleaved order (:func:`~verimod.tasks.varm.audit_review.
blind_order`, the audit's seed).

Keys (``static/review.js``, ignored while typing in a text field): ``q``/``a`` groundedness
pass/fail, ``w``/``s`` adequacy, ``e``/``d`` coherence, ``Enter`` save and next, ``j``/``k``
next/previous without saving.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from verimod.review.hosts import TrustedHostGuard, trusted_hosts
from verimod.review.queue import QueueItem, audit_seed, dumps, evidence_spans, highlight, load_queue
from verimod.review.store import DecisionStore
from verimod.tasks.varm.audit_checks import DIMENSIONS
from verimod.tasks.varm.audit_review import Decision, blind_order, blind_reasons, source_of
from verimod.tasks.varm.codebook import FIELDS, VOCABULARY

CSRF_COOKIE, REVIEWER_COOKIE = "verimod_csrf", "verimod_reviewer"
CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; form-action 'self'; base-uri 'none'"
STATIC = Path(__file__).parent / "static"
FIELD_LABELS = {
    "target": "目标 T",
    "target_type": "目标类型 TY",
    "target_explicitness": "明确性 T",
    "stance": "立场 S",
    "label": "标签 L",
    "category": "类别 C",
}


class BadForm(ValueError):
    """A form value that is not allowed (message names the field)."""


def _environment() -> Environment:
    return Environment(loader=PackageLoader("verimod.review", "templates"), autoescape=select_autoescape(["html"]))


def parse_decision(form: Any, item_id: str, reviewer: str) -> Decision:
    """The decision of a submitted item form; :class:`BadForm` for a value not allowed."""
    verdicts = {}
    for dimension in DIMENSIONS:
        value = str(form.get(dimension, "")).strip()
        if value not in ("", "pass", "fail"):
            raise BadForm(f"{dimension}: must be pass, fail or empty")
        if value:
            verdicts[dimension] = value
    corrections = {}
    for name in FIELDS:
        value = str(form.get(f"fix_{name}", "")).strip()
        if not value:
            continue
        allowed = VOCABULARY.get(name)
        if allowed is not None and value not in allowed:
            raise BadForm(f"fix_{name}: must be one of {', '.join(allowed)}")
        if allowed is None and len(value) > 200:
            raise BadForm(f"fix_{name}: at most 200 characters")
        corrections[name] = value
    notes = str(form.get("notes", "")).strip()
    if len(notes) > 2000:
        raise BadForm("notes: at most 2,000 characters")
    return Decision(item_id, reviewer, verdicts, corrections, notes)  # type: ignore[arg-type]


def create_app(
    audit_dir: Path,
    db_path: Path,
    *,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    blind: bool = True,
) -> Starlette:
    """The app over one audit folder and one decision database, serving the Host names of
    :func:`~verimod.review.hosts.trusted_hosts` (``host`` is the bound address); ValueError for
    an allowed host that is not a host name."""
    hosts = trusted_hosts(host, allowed_hosts)
    queue = load_queue(audit_dir)
    if blind:
        sources = [source_of(item.id, item.item_id) for item in queue]
        queue = [queue[k] for k in blind_order(sources, audit_seed(audit_dir))]
    store = DecisionStore(db_path)
    env = _environment()

    def page(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        token = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
        html = env.get_template(template).render(csrf=token, reviewer=request.cookies.get(REVIEWER_COOKIE, ""),
                                                 total=len(queue), blind=blind, shown=shown, **values)  # fmt: skip
        response = HTMLResponse(html, status_code=status)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        if CSRF_COOKIE not in request.cookies:
            response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict")
        return response

    def shown(item: QueueItem) -> dict[str, Any]:
        """What the pages show of an item's provenance (blinded or not)."""
        if blind:
            return {"id": item.item_id, "system": "", "reasons": blind_reasons(item.reasons), "votes": {}}
        return {"id": item.id, "system": item.system, "reasons": item.reasons, "votes": item.votes}

    async def checked_form(request: Request) -> Any:
        origin = request.headers.get("origin")
        if origin is not None and origin != "null":
            own = f"{request.url.scheme}://{request.url.netloc}"
            if urlsplit(origin)._replace(path="").geturl().rstrip("/") != own:
                raise PermissionError("cross-origin form")
        form = await request.form()
        cookie = request.cookies.get(CSRF_COOKIE)
        if not cookie or not secrets.compare_digest(cookie, str(form.get("csrf", ""))):
            raise PermissionError("missing or wrong CSRF token")
        return form

    def forbidden(reason: str) -> Response:
        return PlainTextResponse(f"forbidden: {reason}", status_code=403)

    async def index(request: Request) -> Response:
        decided = store.decided_items()
        reviewer = request.cookies.get(REVIEWER_COOKIE, "")
        rows = [(n, item, sorted(decided.get(item.id, set())), reviewer in decided.get(item.id, set()))
                for n, item in enumerate(queue, start=1)]  # fmt: skip
        return page(request, "index.html", rows=rows, done=sum(1 for *_, mine in rows if mine))

    async def set_reviewer(request: Request) -> Response:
        try:
            form = await checked_form(request)
        except PermissionError as exc:
            return forbidden(str(exc))
        name = " ".join(str(form.get("reviewer", "")).split())
        if not name or len(name) > 80:
            return PlainTextResponse("reviewer: a name of 1 to 80 characters", status_code=400)
        response = RedirectResponse("/item/1" if queue else "/", status_code=303)
        response.set_cookie(REVIEWER_COOKIE, name, httponly=True, samesite="strict")
        return response

    def item_at(request: Request) -> tuple[int, QueueItem] | None:
        try:
            n = int(request.path_params["n"])
        except ValueError:
            return None
        return (n, queue[n - 1]) if 1 <= n <= len(queue) else None

    async def show(request: Request) -> Response:
        found = item_at(request)
        if found is None:
            return PlainTextResponse("no such item", status_code=404)
        n, item = found
        reviewer = request.cookies.get(REVIEWER_COOKIE, "")
        current = store.latest(item.id, reviewer) if reviewer else None
        return page(
            request, "item.html", n=n, item=item, segments=highlight(item.rationale, evidence_spans(item)),
            record=item.record, current=current, fields=FIELDS, labels=FIELD_LABELS, vocabulary=VOCABULARY,
            dimensions=DIMENSIONS, dumps=dumps, others=sorted(store.decided_items().get(item.id, set()) - {reviewer}),
        )  # fmt: skip

    async def save(request: Request) -> Response:
        found = item_at(request)
        if found is None:
            return PlainTextResponse("no such item", status_code=404)
        n, item = found
        try:
            form = await checked_form(request)
        except PermissionError as exc:
            return forbidden(str(exc))
        reviewer = request.cookies.get(REVIEWER_COOKIE, "")
        if not reviewer:
            return RedirectResponse("/", status_code=303)
        try:
            decision = parse_decision(form, item.id, reviewer)
        except BadForm as exc:
            return PlainTextResponse(f"bad form value: {exc}", status_code=400)
        await run_in_threadpool(store.save, decision)
        return RedirectResponse(f"/item/{n + 1}" if n < len(queue) else "/", status_code=303)

    async def script(request: Request) -> Response:
        response = FileResponse(STATIC / "review.js", media_type="text/javascript")
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    routes = [
        Route("/", index),
        Route("/reviewer", set_reviewer, methods=["POST"]),
        Route("/item/{n}", show, methods=["GET"]),
        Route("/item/{n}", save, methods=["POST"]),
        Route("/static/review.js", script),
    ]
    return Starlette(routes=routes, middleware=[Middleware(TrustedHostGuard, hosts=hosts)])
