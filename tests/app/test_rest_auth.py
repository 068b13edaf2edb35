"""Token auth on the REST API, the local mode, Origin checks, and per-user isolation."""

from __future__ import annotations

from pathlib import Path

import pytest
from apptest import Running, SeedTurn, User, make_settings, running, seed_chat

from app.auth import TokenCache
from storage.engine import Database
from storage.users import UserRepository


async def test_me_with_bearer_query_and_cookie(api: Running, alice: User) -> None:
    ways = [
        {"headers": alice.auth},
        {"params": {"token": alice.token}},
        {"headers": {"Cookie": f"sb_session={alice.token}"}},
    ]
    for way in ways:
        response = await api.client.get("/api/me", **way)  # type: ignore[arg-type]
        assert response.status_code == 200, way
        assert response.json() == {"id": alice.id, "name": "alice", "auth_mode": "token"}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer sb_not-a-real-token"},
        {"Authorization": "Basic YTpi"},
        {"Cookie": "sb_session=wrong"},
    ],
)
async def test_unauthorized(api: Running, alice: User, headers: dict[str, str]) -> None:
    for path in ("/api/me", "/api/chats", "/api/chats/c1", "/api/chats/c1/events"):
        response = await api.client.get(path, headers=headers)
        assert response.status_code == 401, path
        error = response.json()["error"]
        assert error["code"] == "unauthorized"
        assert "Bearer" in error["message"]
    response = await api.client.delete("/api/chats/c1", headers=headers)
    assert response.status_code == 401


async def test_token_lookups_are_cached_by_hash(api: Running, alice: User) -> None:
    cache: TokenCache = api.services.auth.token_cache
    cache.clear()
    assert (await api.client.get("/api/me", headers=alice.auth)).status_code == 200
    assert len(cache) == 1
    assert cache.get(alice.token) is not None
    assert alice.token not in repr(cache._entries)
    # A failed lookup is not cached.
    await api.client.get("/api/me", headers={"Authorization": "Bearer sb_nope"})
    assert len(cache) == 1


async def test_second_token_of_a_user_works(api: Running, db: Database, alice: User) -> None:
    token = await UserRepository(db).create_token(alice.id, "laptop")
    response = await api.client.get("/api/me", headers={"Authorization": f"Bearer {token}"})
    assert response.json()["id"] == alice.id


async def test_local_mode_needs_no_token(database_url: str, tmp_path: Path) -> None:
    settings = make_settings(database_url, tmp_path, auth_mode="local")
    async with running(settings) as api:
        response = await api.client.get("/api/me")
        assert response.json() == {"id": "local", "name": "local", "auth_mode": "local"}
        assert (await api.client.get("/api/chats")).status_code == 200
        # DNS rebinding: a page on another name pointed at 127.0.0.1 gets nothing.
        rebound = await api.client.get("/api/chats", headers={"Host": "evil.example:8000"})
        assert rebound.status_code == 403
        assert rebound.json()["error"]["code"] == "forbidden"


async def test_foreign_origin_is_refused(api: Running, alice: User) -> None:
    evil = await api.client.get("/api/me", headers=alice.auth | {"Origin": "https://evil.test"})
    assert evil.status_code == 403
    assert evil.json()["error"]["code"] == "forbidden"
    own = await api.client.get("/api/me", headers=alice.auth | {"Origin": "http://localhost"})
    assert own.status_code == 200


async def test_allowed_origin_setting(database_url: str, tmp_path: Path, alice: User) -> None:
    settings = make_settings(database_url, tmp_path, allowed_origins="https://ui.test")
    async with running(settings) as api:
        headers = alice.auth | {"Origin": "https://ui.test"}
        assert (await api.client.get("/api/me", headers=headers)).status_code == 200


async def test_cross_user_matrix(api: Running, db: Database, alice: User, bob: User) -> None:
    await seed_chat(db, alice.id, "alices", [SeedTurn("private question")])
    missing = {}
    for method, path in [
        ("GET", "/api/chats/{}"),
        ("GET", "/api/chats/{}/events"),
        ("GET", "/api/chats/{}/events?after_seq=0&limit=10"),
        ("DELETE", "/api/chats/{}"),
    ]:
        theirs = await api.client.request(method, path.format("alices"), headers=bob.auth)
        nothing = await api.client.request(method, path.format("no-such-chat"), headers=bob.auth)
        assert theirs.status_code == 404, (method, path)
        # Indistinguishable from a chat that does not exist.
        assert theirs.json() == nothing.json()
        assert theirs.json()["error"]["code"] == "not_found"
        assert "private" not in theirs.text
        missing[(method, path)] = theirs.json()

    assert (await api.client.get("/api/chats", headers=bob.auth)).json()["chats"] == []
    # Bob's DELETE did nothing: Alice still has her chat and its events.
    chat = await api.client.get("/api/chats/alices", headers=alice.auth)
    assert chat.status_code == 200
    assert chat.json()["turns"][0]["prompt"] == "private question"
    listed = (await api.client.get("/api/chats", headers=alice.auth)).json()["chats"]
    assert [c["id"] for c in listed] == ["alices"]
