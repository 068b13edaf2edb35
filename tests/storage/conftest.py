"""Fixtures for the storage tests: two users, a chat of the first, the repositories."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from storage.chats import ChatRepository
from storage.engine import Database
from storage.events import EventStore
from storage.records import ChatRecord, UserRecord
from storage.users import UserRepository


@pytest.fixture
def ts() -> str:
    """Now, as the wire writes it (RFC 3339, milliseconds, ``Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture
def users(db: Database) -> UserRepository:
    return UserRepository(db)


@pytest.fixture
async def alice(users: UserRepository) -> UserRecord:
    user, _token = await users.create_user("alice")
    return user


@pytest.fixture
async def bob(users: UserRepository) -> UserRecord:
    user, _token = await users.create_user("bob")
    return user


@pytest.fixture
def alice_chats(db: Database, alice: UserRecord) -> ChatRepository:
    return ChatRepository(db, alice.id)


@pytest.fixture
def bob_chats(db: Database, bob: UserRecord) -> ChatRepository:
    return ChatRepository(db, bob.id)


@pytest.fixture
async def chat(alice_chats: ChatRepository) -> ChatRecord:
    return await alice_chats.get_or_create("chat-1")


@pytest.fixture
def store(db: Database) -> EventStore:
    return EventStore(db)
