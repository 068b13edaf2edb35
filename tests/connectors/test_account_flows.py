"""A plug-in brings its own live account flow: an installed package (a real ``.dist-info``
with its entry point) whose connector asks for an API key, checked against a local fake
of its service, connected and disconnected through the generic endpoints of a real
server; and every bad request to those endpoints is answered clearly and loses nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from app.settings import Settings, load_settings
from storage.accounts import AccountRepository
from storage.engine import Database
from storage.models import connected_accounts
from storage.users import UserRepository
from tests.fakes.fake_service import serve_fake
from tests.support.connectors import FAST
from tests.support.notes_plugin import GOOD_KEY, FakeNotes, install_notes
from tests.support.servers import serve


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from install_notes(tmp_path, monkeypatch)


@pytest.fixture
async def notes() -> AsyncIterator[FakeNotes]:
    fake = FakeNotes()
    async with serve_fake(fake):
        yield fake


@pytest.fixture
def settings_for(database_url: str, tmp_path: Path) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        return load_settings(
            **{
                "database_url": database_url,
                "data_dir": tmp_path / "data",
                "secret_key": Fernet.generate_key().decode(),
                "auth_mode": "token",
                **FAST,
                **overrides,
            }
        )

    return make


@pytest.fixture
async def alice(db: Database) -> tuple[str, str]:
    user, token = await UserRepository(db).create_user("alice")
    return user.id, token


def live_notes(settings_for: Callable[..., Settings], fake: FakeNotes) -> Settings:
    return settings_for(
        connector_modes={"notes": "live"},
        connector_options={"notes": {"base_url": fake.base_url}},
    )


async def raw_rows(db: Database) -> list[Any]:
    async with db.session() as session:
        return list((await session.execute(select(connected_accounts))).all())


def notes_in(listing: httpx.Response) -> dict[str, Any]:
    return next(c for c in listing.json()["connectors"] if c["name"] == "notes")


async def test_a_plugin_connects_with_its_own_api_key_flow_end_to_end(
    installed: None,
    notes: FakeNotes,
    settings_for: Callable[..., Settings],
    alice: tuple[str, str],
    db: Database,
) -> None:
    user_id, token = alice
    async with serve(live_notes(settings_for, notes)) as server, server.client(token) as http:
        assert notes_in(await http.get("/api/connectors"))["connected"] is False

        started = await http.post("/api/connectors/notes/connect")
        assert started.status_code == 200, started.text
        assert started.json() == {
            "status": "api_key",
            "label": "Notes API key",
            "help": "Create one under Settings, API keys, in Notes.",
            "finish": "/api/connectors/notes/finish",
        }
        assert notes.requests == []  # nothing asked of the service before there is a key

        finished = await http.post("/api/connectors/notes/finish", json={"api_key": GOOD_KEY})
        assert finished.status_code == 200, finished.text
        state = finished.json()["connector"]
        assert finished.json()["status"] == "connected"
        assert state["connected"] is True and state["connected_at"] is not None
        assert state["account"] == {"mode": "live", "email": "ada@notes.example"}
        (checked,) = notes.calls("/v1/me")
        assert checked.headers["authorization"] == f"Bearer {GOOD_KEY}"
        assert GOOD_KEY not in finished.text

        # Stored encrypted, where the plug-in's tools read it (AccountLookup.get).
        (row,) = await raw_rows(db)
        assert GOOD_KEY.encode() not in bytes(row.credentials) and GOOD_KEY not in str(row.meta)
        accounts = AccountRepository(db, user_id, server.services.fernet)
        assert await accounts.get("notes") == {"mode": "live", "api_key": GOOD_KEY}
        listed = await http.get("/api/connectors")
        assert notes_in(listed)["account"] == state["account"] and GOOD_KEY not in listed.text

        # Disconnecting revokes the key at the service and deletes it here.
        gone = await http.delete("/api/connectors/notes")
        assert gone.status_code == 200 and gone.json()["connector"]["connected"] is False
        assert notes.revoked == [GOOD_KEY]
        assert await raw_rows(db) == []


async def test_bad_requests_to_the_generic_endpoints_are_clear_and_lose_nothing(
    installed: None,
    notes: FakeNotes,
    settings_for: Callable[..., Settings],
    alice: tuple[str, str],
    db: Database,
) -> None:
    _user_id, token = alice
    async with serve(live_notes(settings_for, notes)) as server, server.client(token) as http:
        connected = await http.post("/api/connectors/notes/finish", json={"api_key": GOOD_KEY})
        assert connected.status_code == 200, connected.text
        before = await raw_rows(db)

        example = '(expected {"api_key": "…"})'
        bodies = [
            (b"", 'the body must be a JSON object like {"api_key": "…"}'),
            (b"not json", 'the body must be a JSON object like {"api_key": "…"}'),
            (b'["nk"]', 'the body must be a JSON object like {"api_key": "…"}'),
            (b"{}", f"api_key: Field required {example}"),
            (b'{"api_key": ""}', f"api_key: String should have at least 1 character {example}"),
            (b'{"api_key": 7}', f"api_key: Input should be a valid string {example}"),
            (b'{"api_key": "k", "user": "bob"}', f"user: Extra inputs are not permitted {example}"),
            (b'{"api_key": "   "}', "api_key: the key is empty; paste the whole key"),
            (
                b'{"api_key": "nk_live_wrong"}',
                "Notes refused this key: check it and paste it again",
            ),
        ]
        for body, message in bodies:
            answer = await http.post(
                "/api/connectors/notes/finish",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            assert answer.status_code == 400, (body, answer.text)
            assert answer.json()["error"] == {"code": "invalid_request", "message": message}

        refusals = [
            (
                "POST",
                "/api/connectors/telegram/finish",
                404,
                "no connector named 'telegram'; GET /api/connectors lists them",
            ),
            (
                "POST",
                "/api/connectors/yelp/finish",
                409,
                "yelp has no per-user account to connect: it uses the server's keys",
            ),
            (
                "POST",
                "/api/connectors/gmail/finish",
                409,
                "gmail has no finish step: it connects by signing in at the provider "
                "(POST /api/connectors/gmail/connect), which sends the browser back to "
                "GET /oauth/google/callback",
            ),
        ]
        for method, path, status, message in refusals:
            answer = await http.request(method, path, json={"api_key": GOOD_KEY})
            assert answer.status_code == status, (path, answer.text)
            assert answer.json()["error"]["message"] == message

        # No OAuth callback for a connector that does not sign in that way, nor for a name
        # nobody has: a page that says so, and nothing stored.
        for name in ("notes", "telegram"):
            page = await http.get(f"/oauth/{name}/callback", params={"code": "c", "state": "s"})
            assert page.status_code == 404
            assert "No connector signs in at this address." in page.text
        assert (await http.get("/api/connectors/notes/finish")).status_code == 405

        # Alice's key is still connected, untouched, and nothing else was stored.
        assert await raw_rows(db) == before
        assert notes_in(await http.get("/api/connectors"))["connected"] is True
        assert notes.revoked == []


async def test_a_plugin_in_demo_mode_connects_without_its_flow(
    installed: None,
    notes: FakeNotes,
    settings_for: Callable[..., Settings],
    alice: tuple[str, str],
) -> None:
    _user_id, token = alice
    async with serve(settings_for()) as server, server.client(token) as http:
        assert (await http.delete("/api/connectors/notes")).status_code == 200
        back = await http.post("/api/connectors/notes/connect")
        assert back.json()["status"] == "connected" and back.json()["connector"]["connected"]
        refused = await http.post("/api/connectors/notes/finish", json={"api_key": GOOD_KEY})
        assert refused.status_code == 409
        assert refused.json()["error"]["message"] == (
            "notes runs in demo mode on this server: connect it with "
            "POST /api/connectors/notes/connect (there is nothing to finish)"
        )
    assert notes.requests == []  # demo mode never reaches the service
