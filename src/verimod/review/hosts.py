"""Host-header validation of the review app (a defence against DNS rebinding).

A page on ``attacker.example`` can make the browser resolve that name to 127.0.0.1 and then
talk to the review app as a same-origin site: the browser sends ``Host: attacker.example:PORT``
and an ``Origin`` of the same name, so cookies, CSRF tokens and the origin check all belong to
the attacker's origin. The one thing the attacker cannot choose is that name, so the app serves
only requests whose ``Host`` names a host it trusts:

- the address the server is bound to (``--host``), ``127.0.0.1`` and ``localhost``;
- every ``--allowed-host`` (a name or address other machines use to reach it).

Names are compared case-insensitively, without the port and without IPv6 brackets. A request
without a ``Host`` header, or with one that does not parse, is refused too: 400, a plain-text
body, no cookie set, nothing read or written.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES: tuple[str, ...] = ("127.0.0.1", "localhost")


def host_name(value: str) -> str | None:
    """The host name of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``),
    lower-cased and without brackets; None when it does not parse."""
    value = value.strip()
    if not value or any(c in value for c in "/?#@\\ \t"):
        return None
    try:
        parts = urlsplit(f"//{value}")
        parts.port  # noqa: B018 — raises ValueError on a bad port
    except ValueError:
        return None
    return parts.hostname or None


def bare_host(entry: str) -> str | None:
    """A host name or address given without a port (an IPv6 address with or without brackets),
    lower-cased and without brackets; None when it is not one."""
    text = entry.strip()
    if text.count(":") > 1 and not text.startswith("["):
        text = f"[{text}]"
    name = host_name(text)
    return name if name is not None and urlsplit(f"//{text}").port is None else None


def trusted_hosts(bound: str, allowed: Iterable[str] = ()) -> frozenset[str]:
    """The host names the app answers to: ``bound``, :data:`LOOPBACK_NAMES` and ``allowed``;
    ValueError names an entry that is not a bare host name or address."""
    names = set(LOOPBACK_NAMES)
    for entry in (bound, *allowed):
        name = bare_host(entry)
        if name is None:
            raise ValueError(f"not a host name or address: {entry!r}")
        names.add(name)
    return frozenset(names)


class TrustedHostGuard:
    """ASGI middleware: HTTP requests whose ``Host`` is not trusted get a 400 and never reach
    the app (module docstring)."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the app has no websocket route; lifespan passes
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), None)
        name = None if header is None else host_name(header)
        if name is None or name not in self.hosts:
            body = b"refused: this review app does not serve that Host (see --allowed-host)\n"
            await send(
                {
                    "type": "http.response.start",
                    "status": 400,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
