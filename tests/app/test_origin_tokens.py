"""check_origin, token_from and the token cache: pure functions, no database."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from starlette.requests import HTTPConnection

from app import auth
from app.auth import TokenCache, check_host, check_origin, own_origin, token_from
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


def test_token_cache_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cache's clock is the test's: expiry is checked at the TTL itself, not after a
    # sleep that is long enough only when the machine is not busy.
    now = [1000.0]
    monkeypatch.setattr(auth, "time", SimpleNamespace(monotonic=lambda: now[0]))
    cache = TokenCache(ttl=30)
    user = UserRecord(id="u", name="u")
    cache.put("t", user)
    now[0] = 1029.0
    assert cache.get("t") == user
    now[0] = 1030.0
    assert cache.get("t") is None
    assert len(cache) == 0


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8000", True),
        ("localhost:8000", True),
        ("app.localhost", True),
        ("[::1]:8000", True),
        ("127.0.0.2", True),
        ("evil.example:8000", False),  # DNS rebinding
        ("ui.example.com", True),  # host of an allowed origin
    ],
)
def test_local_mode_requires_a_loopback_host(host: str, allowed: bool) -> None:
    local = settings(auth_mode="local", allowed_origins="https://ui.example.com")
    assert check_host(conn({"host": host}), local) is allowed
    # Even with a matching Origin: after rebinding the page *is* same-origin.
    same = conn({"host": host, "origin": f"http://{host}"})
    assert check_origin(same, local) is allowed
    # Token mode has tokens; the host does not matter.
    assert check_host(conn({"host": host}), settings(auth_mode="token"))
