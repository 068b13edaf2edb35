"""Who is calling, and from which page.

``local`` mode: every request is the single local user. ``token`` mode: an API token from
``Authorization: Bearer``, else the ``token`` query parameter (browsers cannot set headers
on a WebSocket), else the ``sb_session`` cookie of the bundled UI. In local mode only
loopback ``Host`` names reach the app at all (``HostGuard``, against DNS rebinding).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Literal
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket

from app.errors import api_error
from app.settings import Settings
from storage.engine import Database
from storage.records import UserRecord
from storage.users import UserRepository
from websocket.handler import CLOSE_FORBIDDEN

SESSION_COOKIE = "sb_session"
_DEFAULT_PORTS = {"http": 80, "https": 443}
# What a refused Origin (and, in local mode, a refused Host) is told.
ORIGIN_REFUSED = "this Origin is not allowed; add it to SWITCHBOARD_ALLOWED_ORIGINS"


class TokenCache:
    """A small LRU of recent successful token lookups, so a request needs no DB round trip.

    Keyed by the token's sha256, never the token itself. Only positive answers are kept, for
    ``ttl`` seconds, so a revoked token stops working within that time.
    """

    def __init__(
        self,
        max_size: int = 1024,
        ttl: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_size = max_size
        self.ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, UserRecord]] = OrderedDict()

    @staticmethod
    def key(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def get(self, token: str) -> UserRecord | None:
        key = self.key(token)
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, user = entry
        if expires <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return user

    def put(self, token: str, user: UserRecord) -> None:
        key = self.key(token)
        self._entries[key] = (self._clock() + self.ttl, user)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def token_from(conn: HTTPConnection) -> str | None:
    """The token the client sent, by precedence: Bearer header, ``?token=``, cookie."""
    header = conn.headers.get("authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    return conn.query_params.get("token") or conn.cookies.get(SESSION_COOKIE) or None


class Authenticator:
    """The user behind a request or socket (``user_for``); built once at start-up.

    Local mode: the local user, ensured before the app serves (``app.services``), so a
    request never writes. Token mode: the token's user, recent lookups kept in
    ``token_cache``.
    """

    def __init__(
        self,
        mode: Literal["local", "token"],
        db: Database,
        local_user: UserRecord | None = None,
        token_cache: TokenCache | None = None,
    ) -> None:
        if mode == "local" and local_user is None:
            raise ValueError(
                "local auth mode needs the local user (UserRepository.ensure_local_user)"
            )
        self.mode = mode
        self.db = db
        self.local_user = local_user
        self.token_cache = token_cache if token_cache is not None else TokenCache()

    async def user_for(self, conn: HTTPConnection) -> UserRecord | None:
        """The user, or None when the request or socket is not authenticated."""
        if self.mode == "local":
            return self.local_user
        token = token_from(conn)
        if token is None:
            return None
        user = self.token_cache.get(token)
        if user is None:
            user = await UserRepository(self.db).user_for_token(token)
            if user is not None:
                self.token_cache.put(token, user)
        return user


def _normalise_origin(scheme: str, netloc: str) -> str | None:
    scheme = scheme.lower()
    if scheme not in _DEFAULT_PORTS or not netloc:
        return None
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def _origin_of(url: str) -> str | None:
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # "http://[": not an origin, whoever sent it
        return None
    return _normalise_origin(parts.scheme, parts.netloc)


def _hostname_of(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:  # a malformed setting allows nothing
        return None


def own_origin(conn: HTTPConnection) -> str | None:
    """``scheme://host[:port]`` of this server as the client addressed it (Host header)."""
    scheme = {"ws": "http", "wss": "https"}.get(conn.url.scheme, conn.url.scheme)
    return _normalise_origin(scheme, conn.headers.get("host", ""))


def check_origin(conn: HTTPConnection, settings: Settings) -> bool:
    """Whether a browser page at this request's ``Origin`` may use the server.

    No ``Origin`` header: not a browser (CLI, SDK, bench), allowed. Otherwise the origin must
    be the server's own or listed in ``SWITCHBOARD_ALLOWED_ORIGINS``. In local mode the
    ``Host`` was checked before (``HostGuard``: DNS rebinding).
    """
    origin_header = conn.headers.get("origin")
    if origin_header is None:
        return True
    origin = _origin_of(origin_header)
    if origin is None:  # "null" (sandboxed iframe, file://) or garbage
        return False
    if origin == own_origin(conn):
        return True
    allowed = {_origin_of(item) for item in settings.allowed_origins}
    return origin in allowed


# The names a loopback server is reached by (any port), as TrustedHostMiddleware patterns.
LOOPBACK_HOSTS = ("localhost", "*.localhost", "127.0.0.1", "[::1]")


def _host_pattern(url: str | None) -> str | None:
    """The host of ``url`` as a TrustedHostMiddleware pattern; None if it has none.

    IPv6 literals keep their brackets, as the middleware reads them from ``Host``; a name
    with a ``*`` is no host (the middleware would read it as a wildcard), so it allows
    nothing, as before.
    """
    hostname = _hostname_of(url) if url else None
    if not hostname or "*" in hostname:
        return None
    return f"[{hostname}]" if ":" in hostname else hostname.lower()


def trusted_hosts(settings: Settings) -> list[str] | None:
    """The ``Host`` names the app answers to in local mode; None (any) in token mode.

    Local mode has no token, so the Host is what stops DNS rebinding: a page on
    ``evil.example`` whose name is re-pointed at 127.0.0.1 is same-origin with itself and
    sends no useful ``Origin``, but its requests carry ``Host: evil.example``. Allowed: the
    loopback names, the address the server is bound to, and the hosts of
    ``SWITCHBOARD_ALLOWED_ORIGINS`` and ``SWITCHBOARD_RAP_CALLBACK_URL`` (where RAP tools
    post their results). Token mode has tokens; the host does not matter.
    """
    if settings.resolved_auth_mode != "local":
        return None
    bound = f"[{settings.host}]" if ":" in settings.host else settings.host
    urls = [f"http://{bound}", *settings.allowed_origins, settings.rap_callback_url]
    hosts = list(LOOPBACK_HOSTS)
    for pattern in map(_host_pattern, urls):
        if pattern is not None and pattern not in hosts:
            hosts.append(pattern)
    return hosts


# TrustedHostMiddleware's app in HostGuard: reached only by a trusted host, it says so.
_ADMITTED = "switchboard.host.admitted"


async def _admit(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": _ADMITTED})


class HostGuard:
    """Only trusted ``Host`` names reach the app (``trusted_hosts``; local mode).

    Starlette's ``TrustedHostMiddleware`` decides; a refused request gets this API's answer
    rather than its plain-text 400: 403 ``forbidden`` as for a refused Origin, and a socket
    is accepted, then closed 4403, so its client learns the protocol's close code. A request
    without ``Host`` passes: HTTP/1.0 tools send none, every browser does.
    """

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str]) -> None:
        self.app = app
        self._trusted = TrustedHostMiddleware(_admit, allowed_hosts, www_redirect=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or "host" not in Headers(scope=scope):
            await self.app(scope, receive, send)
            return
        verdict: list[str] = []

        async def note(message: Message) -> None:
            verdict.append(message["type"])

        await self._trusted(scope, receive, note)
        if verdict == [_ADMITTED]:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            websocket = WebSocket(scope, receive, send)
            await websocket.accept()
            await websocket.close(CLOSE_FORBIDDEN, "origin not allowed")
        else:
            await api_error(403, "forbidden", ORIGIN_REFUSED)(scope, receive, send)


class AppSocketGate:
    """The app's rules for chat sockets (``websocket.ports.SocketGate``)."""

    def __init__(self, settings: Settings, auth: Authenticator) -> None:
        self._settings = settings
        self._auth = auth

    def origin_allowed(self, conn: HTTPConnection) -> bool:
        return check_origin(conn, self._settings)

    async def authenticate(self, conn: HTTPConnection) -> UserRecord | None:
        return await self._auth.user_for(conn)
