"""A chat's stored compaction (storage/memory.py) and the bounded read after it
(``ChatSession.get_rows``), on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from storage.chats import ChatRepository
from storage.engine import Database
from storage.memory import Compaction, MemoryStore
from storage.records import ChatRecord
from storage.session import ChatSession


def turn(n: int) -> list[Any]:
    return [
        {"role": "user", "content": f"question {n}"},
        {"role": "assistant", "content": [{"type": "output_text", "text": f"answer {n}"}]},
    ]


async def test_a_compaction_is_stored_read_back_and_only_moves_forward(
    db: Database, chat: ChatRecord
) -> None:
    store = MemoryStore(db)
    assert await store.load(chat.id) is None
    first = Compaction(through_item_id=4, summary="two turns", summary_tokens=3, folded_items=4)
    assert await store.save(chat.id, first)
    assert await store.load(chat.id) == first
    later = Compaction(8, "four turns", 4, folded_items=8, compactions=2)
    assert await store.save(chat.id, later)
    assert await store.load(chat.id) == later
    # A stale writer (an older compaction) is refused: the stored one stays.
    assert not await store.save(chat.id, first)
    assert not await store.save(chat.id, Compaction(8, "same reach", 2))
    assert await store.load(chat.id) == later
    await store.forget(chat.id)
    assert await store.load(chat.id) is None


async def test_rows_after_a_compaction_and_nothing_before(db: Database, chat: ChatRecord) -> None:
    session = ChatSession(db, chat.id)
    for n in range(3):
        await session.add_items(turn(n))
    rows = await session.get_rows()
    assert [item for _, item in rows] == turn(0) + turn(1) + turn(2)
    ids = [row_id for row_id, _ in rows]
    assert ids == sorted(ids) and len(set(ids)) == 6
    after = await session.get_rows(ids[3])
    assert after == rows[4:]
    assert await session.get_rows(ids[-1]) == []
    # Another chat's items are never read.
    other = await ChatRepository(db, chat.user_id).get_or_create("chat-2")
    await ChatSession(db, other.id).add_items(turn(9))
    assert await session.get_rows(ids[3]) == rows[4:]

    # What a turn reads: the compaction and the rows after it, in one go.
    store = MemoryStore(db)
    assert await store.history(session) == (None, rows)
    compaction = Compaction(ids[3], "two turns", 3, folded_items=4, compactions=1)
    await store.save(chat.id, compaction)
    assert await store.history(session) == (compaction, rows[4:])


async def test_clearing_the_session_or_deleting_the_chat_forgets_the_summary(
    db: Database, chat: ChatRecord, alice_chats: ChatRepository
) -> None:
    session, store = ChatSession(db, chat.id), MemoryStore(db)
    await session.add_items(turn(0))
    (last, _), *_ = reversed(await session.get_rows())
    await store.save(chat.id, Compaction(last, "a turn", 2))
    await session.clear_session()
    assert await store.load(chat.id) is None  # its items are gone

    await session.add_items(turn(1))
    (last, _), *_ = reversed(await session.get_rows())
    await store.save(chat.id, Compaction(last, "a turn", 2))
    assert await alice_chats.delete(chat.id)
    assert await store.load(chat.id) is None
