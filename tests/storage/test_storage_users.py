"""Users and tokens: hashed at rest, last use recorded cheaply."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import datetime, timedelta

import pytest
from sqlalchemy import select, update

from storage.engine import Database
from storage.errors import DuplicateName
from storage.models import api_tokens, utcnow
from storage.users import LOCAL_USER_ID, UserRepository


async def test_ensure_local_user_is_idempotent_and_race_free(users: UserRepository) -> None:
    results = await asyncio.gather(*(users.ensure_local_user() for _ in range(5)))
    assert {(u.id, u.name) for u in results} == {(LOCAL_USER_ID, LOCAL_USER_ID)}
    assert [u.id for u in await users.list_users()] == [LOCAL_USER_ID]


async def test_create_user_stores_only_the_token_hash(db: Database, users: UserRepository) -> None:
    user, token = await users.create_user("  carol ")
    assert user.name == "carol"
    assert token.startswith("sb_") and len(token) > 40
    async with db.session() as session:
        rows = (await session.execute(select(api_tokens))).all()
    assert [row.token_hash for row in rows] == [hashlib.sha256(token.encode()).hexdigest()]
    assert all(token not in str(tuple(row)) for row in rows)


async def test_duplicate_and_reserved_names(users: UserRepository) -> None:
    await users.create_user("dave")
    with pytest.raises(DuplicateName, match="'dave' already exists"):
        await users.create_user("dave")
    with pytest.raises(DuplicateName):
        await users.create_user(LOCAL_USER_ID)
    with pytest.raises(ValueError, match="must not be empty"):
        await users.create_user("   ")


async def test_user_for_token(users: UserRepository) -> None:
    user, token = await users.create_user("erin")
    second = await users.create_token(user.id, "laptop")
    assert second != token
    assert await users.user_for_token(token) == user
    assert await users.user_for_token(second) == user
    assert await users.user_for_token(token + "x") is None
    assert await users.user_for_token("") is None


async def test_create_token_for_unknown_user(users: UserRepository) -> None:
    with pytest.raises(ValueError, match="no user with id 'ghost'"):
        await users.create_token("ghost", "x")


async def test_last_used_at_is_recorded_at_most_once_a_minute(
    db: Database, users: UserRepository
) -> None:
    _user, token = await users.create_user("frank")
    digest = hashlib.sha256(token.encode()).hexdigest()

    async def last_used() -> datetime | None:
        async with db.session() as session:
            return await session.scalar(
                select(api_tokens.c.last_used_at).where(api_tokens.c.token_hash == digest)
            )

    assert await last_used() is None
    before = utcnow()
    await users.user_for_token(token)
    first = await last_used()
    assert first is not None and first >= before - timedelta(seconds=1)
    assert first.tzinfo is not None
    await users.user_for_token(token)
    assert await last_used() == first  # within the resolution: no write

    stale = utcnow() - timedelta(minutes=5)
    async with db.session(write=True) as session:
        await session.execute(
            update(api_tokens).where(api_tokens.c.token_hash == digest).values(last_used_at=stale)
        )
        await session.commit()
    await users.user_for_token(token)
    refreshed = await last_used()
    assert refreshed is not None and refreshed > stale


async def test_get_by_name_and_list(users: UserRepository) -> None:
    bob, _ = await users.create_user("bob")
    alice, _ = await users.create_user("alice")
    assert await users.get_by_name("bob") == bob
    assert await users.get_by_name("nobody") is None
    assert await users.list_users() == [alice, bob]
