"""Who is calling, and from which page.

``local`` mode: every request is the single local user. ``token`` mode: an API token from
``Authorization: Bearer``, else the ``token`` query parameter (browsers cannot set headers
on a WebSocket), else the ``sb_session`` cookie of the bundled UI. ``oidc`` mode: the same
places carry an identity provider's JWT (``app.oidc``) or an API token. ``header`` mode:
the user an authenticating proxy names, from the proxy's addresses only. In local mode
only loopback ``Host`` names reach the app at all (``HostGuard``, against DNS rebinding);
in the others every 401 says how to authenticate (``BearerChallenge``).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network
from urllib.parse import urlsplit

import httpx
from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket

from app.errors import api_error
from app.oidc import InvalidToken, OidcVerifier
from app.settings import AuthMode, Settings
from storage.engine import Database
from storage.records import UserRecord
from storage.users import TOKEN_PREFIX, UserRepository
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
        # Every open socket's token is looked at again every 15 s (websocket.handler):
        # room for many sockets' tokens, so that this is rarely a database read.
        max_size: int = 16_384,
        ttl: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_size = max_size
        self.ttl = ttl
        self.clock = clock
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
        if expires <= self.clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return user

    def put(self, token: str, user: UserRecord) -> None:
        key = self.key(token)
        self._entries[key] = (self.clock() + self.ttl, user)
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


# Where ``user_for`` leaves why a credential was refused, for the 401's
# ``WWW-Authenticate`` (``BearerChallenge``) and its message (``app.api_auth``).
AUTH_ERROR_KEY = "switchboard.auth_error"
# The ``issuer`` of identities vouched for by the authenticating proxy (header mode).
PROXY_ISSUER = "proxy"


def auth_error_of(conn: HTTPConnection) -> str | None:
    error = conn.scope.get(AUTH_ERROR_KEY)
    return error if isinstance(error, str) else None


def _refuse(conn: HTTPConnection, description: str) -> None:
    conn.scope[AUTH_ERROR_KEY] = description


@dataclass(frozen=True)
class ProxyTrust:
    """Header mode: which peers are the authenticating proxy, and its headers."""

    networks: tuple[IPv4Network | IPv6Network, ...]
    user_header: str
    email_header: str

    @classmethod
    def from_settings(cls, settings: Settings) -> ProxyTrust:
        return cls(
            networks=tuple(ip_network(item, strict=False) for item in settings.trusted_proxies),
            user_header=settings.auth_user_header,
            email_header=settings.auth_email_header,
        )

    def trusts(self, conn: HTTPConnection) -> bool:
        """Whether the peer is the proxy. The TCP peer: ``switchboard serve`` turns off
        uvicorn's ``X-Forwarded-For`` rewriting in header mode (``app.cli``)."""
        host = conn.client.host if conn.client is not None else None
        try:
            address = ip_address(host) if host else None
        except ValueError:
            return False
        return address is not None and any(address in network for network in self.networks)


class Authenticator:
    """The user behind a request or socket (``user_for``); built once at start-up.

    ``local``: the local user, ensured before the app serves (``app.services``), so a
    request never writes. ``token``: the API token's user, recent lookups kept in
    ``token_cache``. ``oidc``: a JWT of the provider (``app.oidc``), the user found by
    its ``sub`` (created at first sign-in); API tokens (``sb_…``) work too, for scripts
    and scrapers. ``header``: the user the authenticating proxy names in its header, from
    the proxy's addresses only.
    """

    def __init__(
        self,
        mode: AuthMode,
        db: Database,
        local_user: UserRecord | None = None,
        token_cache: TokenCache | None = None,
        *,
        oidc: OidcVerifier | None = None,
        proxy: ProxyTrust | None = None,
    ) -> None:
        if mode == "local" and local_user is None:
            raise ValueError(
                "local auth mode needs the local user (UserRepository.ensure_local_user)"
            )
        if mode == "oidc" and oidc is None:
            raise ValueError("oidc auth mode needs its verifier (app.oidc.OidcVerifier)")
        if mode == "header" and proxy is None:
            raise ValueError("header auth mode needs the proxy's addresses (ProxyTrust)")
        self.mode = mode
        self.db = db
        self.local_user = local_user
        self.token_cache = token_cache if token_cache is not None else TokenCache()
        self.oidc = oidc
        self.proxy = proxy
        # (issuer, subject) -> user: a signed-in identity needs no DB round trip.
        self.identity_cache = TokenCache()

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        db: Database,
        local_user: UserRecord | None,
        http: httpx.AsyncClient,
    ) -> Authenticator:
        mode = settings.resolved_auth_mode
        oidc = None
        if mode == "oidc":
            assert settings.oidc_issuer and settings.oidc_audience  # Settings checked both
            oidc = OidcVerifier(
                settings.oidc_issuer,
                settings.oidc_audience,
                http,
                timeout=settings.oidc_timeout,
                leeway=settings.oidc_leeway_seconds,
                refresh_interval=settings.oidc_jwks_refresh_seconds,
            )
        proxy = ProxyTrust.from_settings(settings) if mode == "header" else None
        return cls(mode, db, local_user, oidc=oidc, proxy=proxy)

    async def user_for(self, conn: HTTPConnection) -> UserRecord | None:
        """The user, or None when the request or socket is not authenticated (the reason
        is then in ``auth_error_of(conn)``, when there is more to say than "no token")."""
        if self.mode == "local":
            return self.local_user
        if self.mode == "header":
            return await self._proxy_user(conn)
        token = token_from(conn)
        if token is None:
            return None
        if self.oidc is not None and not token.startswith(TOKEN_PREFIX):
            return await self._oidc_user(conn, self.oidc, token)
        user = self.token_cache.get(token)
        if user is None:
            user = await UserRepository(self.db).user_for_token(token)
            if user is not None:
                self.token_cache.put(token, user)
            else:
                _refuse(conn, "the token is unknown or was revoked")
        return user

    async def _oidc_user(
        self, conn: HTTPConnection, oidc: OidcVerifier, token: str
    ) -> UserRecord | None:
        try:
            identity = await oidc.verify(token)
        except InvalidToken as exc:
            _refuse(conn, exc.description)
            return None
        return await self._identity_user(identity.issuer, identity.subject, identity.display)

    async def _proxy_user(self, conn: HTTPConnection) -> UserRecord | None:
        assert self.proxy is not None
        if not self.proxy.trusts(conn):
            _refuse(conn, "this server is reached only through its authenticating proxy")
            return None
        subject = (conn.headers.get(self.proxy.user_header) or "").strip()
        if not subject:
            _refuse(conn, f"the authenticating proxy sent no {self.proxy.user_header}")
            return None
        email = (conn.headers.get(self.proxy.email_header) or "").strip()
        return await self._identity_user(PROXY_ISSUER, subject, email or subject)

    async def _identity_user(self, issuer: str, subject: str, display: str) -> UserRecord:
        key = f"{issuer}\0{subject}"
        user = self.identity_cache.get(key)
        if user is None:
            user = await UserRepository(self.db).user_for_identity(issuer, subject, display)
            self.identity_cache.put(key, user)
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
