"""ChatSession speaks the Agents SDK Session protocol over conversation_items."""

from __future__ import annotations

from typing import Any

import pytest
from agents.memory import Session, SessionSettings

from storage.chats import ChatRepository
from storage.engine import Database
from storage.errors import ChatNotFound
from storage.records import ChatRecord
from storage.session import ChatSession

# Any: the SDK types items as TypedDicts; these literals are what it stores.
ITEMS: list[Any] = [
    {"role": "user", "content": "find sushi"},
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "search_businesses_at_yelp",
        "arguments": '{"term": "sushi"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "3 places"},
    {"role": "assistant", "content": [{"type": "output_text", "text": "Here are 3 places."}]},
]


async def test_is_an_sdk_session(db: Database, chat: ChatRecord) -> None:
    session = ChatSession(db, chat.id)
    assert isinstance(session, Session)
    assert session.session_id == chat.id
    assert session.session_settings is None


async def test_add_get_pop_clear(db: Database, chat: ChatRecord) -> None:
    session = ChatSession(db, chat.id)
    assert await session.get_items() == []
    await session.add_items(ITEMS[:2])
    await session.add_items(ITEMS[2:])
    await session.add_items([])
    assert await session.get_items() == ITEMS
    assert await session.get_items(limit=2) == ITEMS[2:]
    assert await session.get_items(limit=10) == ITEMS
    assert await session.get_items(limit=0) == []

    assert await session.pop_item() == ITEMS[-1]
    assert await session.get_items() == ITEMS[:-1]
    # A new session object on the same chat sees the same history (it is all in the DB).
    assert await ChatSession(db, chat.id).get_items() == ITEMS[:-1]

    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None


async def test_session_settings_limit_applies(db: Database, chat: ChatRecord) -> None:
    session = ChatSession(db, chat.id, session_settings=SessionSettings(limit=1))
    await session.add_items(ITEMS)
    assert await session.get_items() == ITEMS[-1:]
    assert await session.get_items(limit=3) == ITEMS[-3:]


async def test_sessions_of_chats_are_separate(
    db: Database, chat: ChatRecord, alice_chats: ChatRepository
) -> None:
    other = await alice_chats.get_or_create("other")
    await ChatSession(db, chat.id).add_items(ITEMS[:1])
    await ChatSession(db, other.id).add_items(ITEMS[1:2])
    assert await ChatSession(db, chat.id).get_items() == ITEMS[:1]
    await ChatSession(db, other.id).clear_session()
    assert await ChatSession(db, chat.id).get_items() == ITEMS[:1]


async def test_add_items_to_a_missing_chat(db: Database) -> None:
    with pytest.raises(ChatNotFound):
        await ChatSession(db, "missing").add_items(ITEMS[:1])
