"""Secret-key rotation: ``switchboard rekey`` re-encrypts stored credentials with the first
key of SWITCHBOARD_SECRET_KEY, after which the old keys can be dropped (docs/deploy.md)."""

from __future__ import annotations

import asyncio

import pytest
from cryptography.fernet import Fernet, MultiFernet
from sqlalchemy import select

from app.cli import main
from storage.accounts import AccountRepository
from storage.engine import Database
from storage.models import connected_accounts
from storage.users import UserRepository

OLD, NEW, LOST = (Fernet.generate_key().decode() for _ in range(3))


def keys(*secrets: str) -> MultiFernet:
    return MultiFernet([Fernet(secret) for secret in secrets])


async def rekey(monkeypatch: pytest.MonkeyPatch, database_url: str, secret: str) -> int:
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", database_url)
    monkeypatch.setenv("SWITCHBOARD_SECRET_KEY", secret)
    return await asyncio.to_thread(main, ["rekey"])  # main runs its own event loop


async def stored_tokens(db: Database) -> dict[str, bytes]:
    async with db.session() as session:
        rows = await session.execute(
            select(connected_accounts.c.connector, connected_accounts.c.credentials)
        )
        return {row.connector: bytes(row.credentials) for row in rows}


async def test_rekey_moves_credentials_to_the_newest_key_so_old_keys_can_go(
    db: Database,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    alice, _ = await UserRepository(db).create_user("alice")
    bob, _ = await UserRepository(db).create_user("bob")
    await AccountRepository(db, alice.id, keys(OLD)).connect("gmail", {"refresh": "a-1"})
    await AccountRepository(db, bob.id, keys(OLD)).connect("plaid", {"access": "b-1"})
    # Under the new key already (connected after the new key was put first).
    await AccountRepository(db, bob.id, keys(NEW, OLD)).connect("yelp", {"key": "b-2"})
    # Under a key nobody has any more: left as it is, counted.
    await AccountRepository(db, alice.id, keys(LOST)).connect("search", {"key": "a-2"})
    lost_before = (await stored_tokens(db))["search"]

    assert await rekey(monkeypatch, database_url, f"{NEW},{OLD}") == 0
    out = capsys.readouterr().out
    assert "re-encrypted 2 stored credential(s)" in out and "1 already used it" in out
    assert "1 could not be decrypted" in out
    assert "a-1" not in out and "b-1" not in out  # no secret is ever printed

    # The old key can go: the new one alone opens everything it could open before.
    only_new = keys(NEW)
    assert await AccountRepository(db, alice.id, only_new).get("gmail") == {"refresh": "a-1"}
    assert await AccountRepository(db, bob.id, only_new).get("plaid") == {"access": "b-1"}
    assert await AccountRepository(db, bob.id, only_new).get("yelp") == {"key": "b-2"}
    assert await AccountRepository(db, alice.id, only_new).get("search") is None
    assert (await stored_tokens(db))["search"] == lost_before

    # Run again: nothing left to do, nothing rewritten.
    before = await stored_tokens(db)
    assert await rekey(monkeypatch, database_url, f"{NEW},{OLD}") == 0
    assert "re-encrypted 0 stored credential(s)" in capsys.readouterr().out
    assert await stored_tokens(db) == before


async def test_rekey_refuses_a_bad_key_and_an_unmigrated_database(
    database_url: str,
    tmp_path: object,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await rekey(monkeypatch, database_url, f"{NEW},not-a-key") == 2
    err = capsys.readouterr().err
    assert "SWITCHBOARD_SECRET_KEY: not a valid Fernet key" in err and NEW not in err

    empty = f"sqlite+aiosqlite:///{tmp_path}/empty.db"
    assert await rekey(monkeypatch, empty, NEW) == 1
    assert "database is not migrated" in capsys.readouterr().err
