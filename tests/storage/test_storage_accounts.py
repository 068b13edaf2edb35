"""Connected accounts: encrypted at rest, per user, survive key rotation."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet, MultiFernet
from sqlalchemy import select

from storage.accounts import AccountRepository
from storage.engine import Database
from storage.models import connected_accounts
from storage.records import UserRecord

SECRET = "ya29.a0AfH6SMBxTOPSECRETACCESSTOKEN"
CREDENTIALS = {"access_token": SECRET, "refresh_token": "1//refresh-SECRET", "expires_in": 3599}


async def raw_rows(db: Database) -> list[tuple]:
    async with db.session() as session:
        return [tuple(row) for row in (await session.execute(select(connected_accounts))).all()]


async def test_connect_get_list_disconnect(
    db: Database, alice: UserRecord, fernet: MultiFernet
) -> None:
    accounts = AccountRepository(db, alice.id, fernet)
    assert await accounts.get("gmail") is None
    connected = await accounts.connect("gmail", CREDENTIALS, {"email": "alice@example.com"})
    assert connected.connector == "gmail" and connected.connected_at.tzinfo is not None
    assert await accounts.get("gmail") == CREDENTIALS
    await accounts.connect("plaid", {"access_token": "access-sandbox-1"}, {})
    listed = await accounts.list()
    assert [(a.connector, a.meta) for a in listed] == [
        ("gmail", {"email": "alice@example.com"}),
        ("plaid", {}),
    ]
    assert await accounts.disconnect("gmail") is True
    assert await accounts.disconnect("gmail") is False
    assert await accounts.get("gmail") is None
    assert [a.connector for a in await accounts.list()] == ["plaid"]


async def test_credentials_are_not_stored_in_clear(
    db: Database, alice: UserRecord, fernet: MultiFernet
) -> None:
    await AccountRepository(db, alice.id, fernet).connect("gmail", CREDENTIALS, {"email": "a@x"})
    [row] = await raw_rows(db)
    dump = repr(row).encode() + b"".join(v for v in row if isinstance(v, bytes))
    assert SECRET.encode() not in dump
    assert b"refresh-SECRET" not in dump
    assert b"access_token" not in dump


async def test_reconnect_replaces(db: Database, alice: UserRecord, fernet: MultiFernet) -> None:
    accounts = AccountRepository(db, alice.id, fernet)
    await accounts.connect("gmail", {"access_token": "old"}, {"email": "old@x"})
    await accounts.connect("gmail", {"access_token": "new"}, {"email": "new@x"})
    assert await accounts.get("gmail") == {"access_token": "new"}
    assert [a.meta for a in await accounts.list()] == [{"email": "new@x"}]
    assert len(await raw_rows(db)) == 1


async def test_accounts_are_per_user(
    db: Database, alice: UserRecord, bob: UserRecord, fernet: MultiFernet
) -> None:
    await AccountRepository(db, alice.id, fernet).connect("gmail", CREDENTIALS, {})
    bobs = AccountRepository(db, bob.id, fernet)
    assert await bobs.get("gmail") is None
    assert await bobs.list() == []
    assert await bobs.disconnect("gmail") is False
    assert await AccountRepository(db, alice.id, fernet).get("gmail") == CREDENTIALS


async def test_key_rotation_and_lost_key(db: Database, alice: UserRecord) -> None:
    old = Fernet(Fernet.generate_key())
    await AccountRepository(db, alice.id, MultiFernet([old])).connect("gmail", CREDENTIALS, {})
    rotated = MultiFernet([Fernet(Fernet.generate_key()), old])
    assert await AccountRepository(db, alice.id, rotated).get("gmail") == CREDENTIALS
    lost = MultiFernet([Fernet(Fernet.generate_key())])
    assert await AccountRepository(db, alice.id, lost).get("gmail") is None


async def test_unknown_user(db: Database, fernet: MultiFernet) -> None:
    with pytest.raises(ValueError, match="no user with id 'ghost'"):
        await AccountRepository(db, "ghost", fernet).connect("gmail", CREDENTIALS, {})
