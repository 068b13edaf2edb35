"""Chats: per-user isolation, keyset pagination, cascading delete."""

from __future__ import annotations

import asyncio
import base64
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Table, func, select, update

from storage.chats import ChatRepository
from storage.engine import Database
from storage.errors import ChatForbidden, ChatNotFound
from storage.events import EventStore
from storage.models import chat_events, chats, conversation_items, turns
from storage.records import ChatRecord, NewEvent
from storage.session import ChatSession


async def test_get_or_create_creates_once(alice_chats: ChatRepository) -> None:
    created = await alice_chats.get_or_create("c1")
    assert created.user_id == alice_chats.user_id
    assert (created.title, created.preview, created.last_seq) == (None, None, 0)
    assert created.created_at.tzinfo == UTC and created.updated_at.tzinfo == UTC
    assert await alice_chats.get_or_create("c1") == created
    assert await alice_chats.get("c1") == created


async def test_concurrent_get_or_create_of_one_new_chat(alice_chats: ChatRepository) -> None:
    results = await asyncio.gather(*(alice_chats.get_or_create("same") for _ in range(8)))
    assert len({r.created_at for r in results}) == 1


async def test_chat_ids_are_validated(alice_chats: ChatRepository) -> None:
    for bad in ["", "x" * 65]:
        with pytest.raises(ValueError, match="1 to 64 characters"):
            await alice_chats.get_or_create(bad)


async def test_another_users_chat_is_invisible(
    db: Database, alice_chats: ChatRepository, bob_chats: ChatRepository, chat: ChatRecord, ts: str
) -> None:
    await EventStore(db).start_turn(chat.id, "secret plans", None, ts)
    with pytest.raises(ChatForbidden, match="belongs to another user"):
        await bob_chats.get_or_create(chat.id)
    assert await bob_chats.get(chat.id) is None
    assert await bob_chats.list() == ([], None)
    assert await bob_chats.delete(chat.id) is False
    for call in (
        bob_chats.set_title(chat.id, "mine now"),
        bob_chats.turns(chat.id),
        bob_chats.events(chat.id),
    ):
        with pytest.raises(ChatNotFound):
            await call
    # Alice's chat is untouched.
    assert (await alice_chats.get(chat.id)).title is None  # type: ignore[union-attr]
    assert len(await alice_chats.events(chat.id)) == 1


async def test_missing_chat(alice_chats: ChatRepository) -> None:
    assert await alice_chats.get("nope") is None
    assert await alice_chats.delete("nope") is False
    with pytest.raises(ChatNotFound, match="'nope' not found"):
        await alice_chats.turns("nope")


async def test_set_title(alice_chats: ChatRepository, chat: ChatRecord) -> None:
    await alice_chats.set_title(chat.id, "Dinner plans")
    assert (await alice_chats.get(chat.id)).title == "Dinner plans"  # type: ignore[union-attr]


async def _set_updated_at(db: Database, chat_id: str, when: datetime) -> None:
    async with db.session(write=True) as session:
        await session.execute(update(chats).where(chats.c.id == chat_id).values(updated_at=when))
        await session.commit()


async def test_list_pages_newest_first_with_ties(
    db: Database, alice_chats: ChatRepository, store: EventStore, ts: str
) -> None:
    base = datetime(2025, 1, 1, tzinfo=UTC)
    # 7 chats, several sharing an updated_at, so the id tie-break matters.
    stamps = {
        "a": base,
        "b": base + timedelta(minutes=1),
        "c": base + timedelta(minutes=1),
        "d": base + timedelta(minutes=1),
        "e": base + timedelta(minutes=2, microseconds=1),
        "f": base + timedelta(minutes=2),
        "g": base + timedelta(minutes=3),
    }
    for chat_id, when in stamps.items():
        await alice_chats.get_or_create(chat_id)
        await store.start_turn(chat_id, "hello", None, ts)  # only chats with a prompt list
        await _set_updated_at(db, chat_id, when)

    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page, cursor = await alice_chats.list(limit=3, cursor=cursor)
        pages += 1
        seen += [c.id for c in page]
        if cursor is None:
            break
    assert seen == ["g", "e", "f", "d", "c", "b", "a"]
    assert pages == 3
    everything, last = await alice_chats.list(limit=7)
    assert [c.id for c in everything] == seen and last is None


@pytest.mark.parametrize(
    "cursor",
    [
        "not base64!",
        base64.urlsafe_b64encode(b"not json").decode(),
        base64.urlsafe_b64encode(b'{"u": "yesterday", "i": "x"}').decode(),
        base64.urlsafe_b64encode(b'{"u": "2025-01-01T00:00:00", "i": "x"}').decode(),
        base64.urlsafe_b64encode(b"[1, 2]").decode(),
        "",
    ],
)
async def test_invalid_cursor(alice_chats: ChatRepository, cursor: str) -> None:
    with pytest.raises(ValueError, match="invalid cursor"):
        await alice_chats.list(cursor=cursor)


async def test_invalid_limit(alice_chats: ChatRepository) -> None:
    with pytest.raises(ValueError, match="limit"):
        await alice_chats.list(limit=0)


async def _count(db: Database, table: Table, chat_id: str) -> int:
    async with db.session() as session:
        count = await session.scalar(
            select(func.count()).select_from(table).where(table.c.chat_id == chat_id)
        )
    return int(count or 0)


async def test_delete_cascades(
    db: Database, alice_chats: ChatRepository, chat: ChatRecord, ts: str
) -> None:
    store = EventStore(db)
    turn, _, _ = await store.start_turn(chat.id, "hello", "m1", ts)
    await store.append(chat.id, [NewEvent("llm_response", turn.id, {"text": "hi"}, ts)])
    await ChatSession(db, chat.id).add_items([{"role": "user", "content": "hello"}])

    assert await alice_chats.delete(chat.id) is True
    assert await alice_chats.get(chat.id) is None
    for table in (turns, chat_events, conversation_items):
        assert await _count(db, table, chat.id) == 0
    # The id is free again.
    assert (await alice_chats.get_or_create(chat.id)).last_seq == 0
