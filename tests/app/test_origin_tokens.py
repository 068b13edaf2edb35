"""check_origin, the local-mode host guard, token_from and the token cache: no database."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocket, WebSocketDisconnect

from app.auth import HostGuard, TokenCache, check_origin, own_origin, token_from, trusted_hosts
from app.settings import Settings
from storage.records import UserRecord


def conn(
    headers: dict[str, str] | None = None,
    *,
    scheme: str = "http",
    query: str = "",
    kind: str = "http",
) -> HTTPConnection:
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {
        "type": kind,
        "scheme": scheme,
        "path": "/",
        "query_string": query.encode(),
        "headers": raw,
        "server": ("127.0.0.1", 8000),
    }
    return HTTPConnection(scope)


def settings(**kwargs: object) -> Settings:
    values: dict[str, object] = {"secret_key": "x", "auth_mode": "token"} | kwargs
    return Settings(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("headers", "scheme", "kind", "allowed"),
    [
        ({"host": "chat.example.com"}, "http", "http", True),  # no Origin: not a browser
        ({"host": "chat.example.com", "origin": "http://chat.example.com"}, "http", "http", True),
        (
            {"host": "chat.example.com:80", "origin": "http://chat.example.com"},
            "http",
            "http",
            True,
        ),
        (
            {"host": "chat.example.com", "origin": "https://chat.example.com"},
            "wss",
            "websocket",
            True,
        ),
        (
            {"host": "chat.example.com", "origin": "http://chat.example.com"},
            "wss",
            "websocket",
            False,
        ),
        ({"host": "localhost:8000", "origin": "http://localhost:8000"}, "ws", "websocket", True),
        ({"host": "localhost:8000", "origin": "http://localhost:8001"}, "ws", "websocket", False),
        ({"host": "chat.example.com", "origin": "https://evil.example"}, "https", "http", False),
        ({"host": "chat.example.com", "origin": "null"}, "http", "http", False),
        ({"host": "[::1]:8000", "origin": "http://[::1]:8000"}, "http", "http", True),
        ({"host": "CHAT.example.com", "origin": "http://chat.EXAMPLE.com"}, "http", "http", True),
    ],
)
def test_check_origin_own_origin(
    headers: dict[str, str], scheme: str, kind: str, allowed: bool
) -> None:
    assert check_origin(conn(headers, scheme=scheme, kind=kind), settings()) is allowed


def test_check_origin_allowed_list() -> None:
    configured = settings(allowed_origins="https://ui.example.com, http://localhost:5173/")
    host = {"host": "api.example.com"}
    assert check_origin(conn(host | {"origin": "https://ui.example.com"}), configured)
    assert check_origin(conn(host | {"origin": "https://ui.example.com:443"}), configured)
    assert check_origin(conn(host | {"origin": "http://localhost:5173"}), configured)
    assert not check_origin(conn(host | {"origin": "http://localhost:5174"}), configured)
    assert not check_origin(conn(host | {"origin": "https://ui.example.com.evil"}), configured)


def test_own_origin_maps_websocket_schemes() -> None:
    assert own_origin(conn({"host": "a.example:9000"}, scheme="ws")) == "http://a.example:9000"
    assert own_origin(conn({"host": "a.example:443"}, scheme="wss")) == "https://a.example"
    assert own_origin(conn({}, scheme="http")) is None


def test_token_precedence() -> None:
    both = conn(
        {"authorization": "Bearer from-header", "cookie": "sb_session=from-cookie"},
        query="token=from-query",
    )
    assert token_from(both) == "from-header"
    assert token_from(conn({"cookie": "sb_session=c"}, query="token=q")) == "q"
    assert token_from(conn({"cookie": "sb_session=c"})) == "c"
    assert token_from(conn({"authorization": "bearer   spaced  "})) == "spaced"
    assert token_from(conn({"authorization": "Basic abc"})) is None
    assert token_from(conn({})) is None


def test_token_cache_is_bounded_lru_keyed_by_hash() -> None:
    cache = TokenCache(max_size=2, ttl=60)
    alice, bob, carol = (UserRecord(id=n, name=n) for n in ("a", "b", "c"))
    cache.put("token-a", alice)
    cache.put("token-b", bob)
    assert cache.get("token-a") == alice  # a is now most recent
    cache.put("token-c", carol)  # evicts b
    assert cache.get("token-b") is None
    assert cache.get("token-a") == alice
    assert cache.get("token-c") == carol
    assert len(cache) == 2
    assert all("token" not in key for key in cache._entries)  # only hashes are kept


def test_token_cache_expires() -> None:
    # The cache's clock is the test's: expiry is checked at the TTL itself, not after a
    # sleep that is long enough only when the machine is not busy.
    now = [1000.0]
    cache = TokenCache(ttl=30, clock=lambda: now[0])
    user = UserRecord(id="u", name="u")
    cache.put("t", user)
    now[0] = 1029.0
    assert cache.get("t") == user
    now[0] = 1030.0
    assert cache.get("t") is None
    assert len(cache) == 0


def guarded(settings: Settings) -> Starlette:
    """A one-route app behind the HostGuard of ``settings``, as ``create_app`` sets it."""

    async def ok(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def socket(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text("ok")
        await websocket.close()

    hosts = trusted_hosts(settings)
    assert hosts is not None
    return Starlette(
        routes=[Route("/", ok), WebSocketRoute("/ws", socket)],
        middleware=[Middleware(HostGuard, allowed_hosts=hosts)],
    )


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8000", True),
        ("localhost:8000", True),
        ("LOCALHOST", True),
        ("app.localhost", True),
        ("[::1]:8000", True),
        ("127.0.0.2", False),  # a loopback address the server is not bound to
        ("evil.example:8000", False),  # DNS rebinding
        ("localhost.evil.example", False),
        ("ui.example.com", True),  # host of an allowed origin
        ("tools.example.net:9000", True),  # host of the RAP callback URL
        ("[", False),  # not a host at all
        ("user@localhost", False),
    ],
)
async def test_local_mode_requires_a_trusted_host(host: str, allowed: bool) -> None:
    local = settings(
        auth_mode="local",
        allowed_origins="https://ui.example.com",
        rap_callback_url="https://tools.example.net:9000",
    )
    transport = httpx.ASGITransport(app=guarded(local))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.get("/", headers={"host": host})
    if allowed:
        assert response.status_code == 200, response.text
    else:
        # The API's own refusal, not the middleware's plain-text "Invalid host header".
        assert response.status_code == 403
        assert response.json()["error"] == {
            "code": "forbidden",
            "message": "this Origin is not allowed; add it to SWITCHBOARD_ALLOWED_ORIGINS",
        }


def test_a_refused_host_closes_a_socket_4403() -> None:
    with TestClient(guarded(settings(auth_mode="local"))) as client:
        with client.websocket_connect("/ws", headers={"host": "127.0.0.1"}) as ws:
            assert ws.receive_text() == "ok"
        # Accepted, then closed: the client learns the protocol's close code.
        with client.websocket_connect("/ws", headers={"host": "evil.example"}) as ws:
            with pytest.raises(WebSocketDisconnect) as closed:
                ws.receive_text()
    assert (closed.value.code, closed.value.reason) == (4403, "origin not allowed")


def test_trusted_hosts() -> None:
    # Token mode has tokens: the host does not matter.
    assert trusted_hosts(settings(auth_mode="token")) is None
    bound = trusted_hosts(settings(auth_mode="local", host="127.0.0.2"))
    assert bound == ["localhost", "*.localhost", "127.0.0.1", "[::1]", "127.0.0.2"]
    ipv6 = settings(auth_mode="local", host="::1", allowed_origins="http://[::2]:5173")
    assert trusted_hosts(ipv6) == ["localhost", "*.localhost", "127.0.0.1", "[::1]", "[::2]"]
    # A malformed or wildcard origin allows no host (the middleware would widen "*.").
    odd = settings(auth_mode="local", allowed_origins="http://[, https://*.example.com")
    assert trusted_hosts(odd) == ["localhost", "*.localhost", "127.0.0.1", "[::1]"]


async def test_a_request_without_host_passes() -> None:
    # HTTP/1.0 tools send no Host; every browser does, so this opens nothing to rebinding.
    app = guarded(settings(auth_mode="local"))
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "raw_path": b"/",
        "query_string": b"",
        "headers": [],
        "http_version": "1.0",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    assert sent[0]["status"] == 200
