"""``storage.turn_actions`` on both engines: the checks, the marks and the history a
superseded turn leaves, atomically (docs/protocol.md, "Regenerate, edit and continue")."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select

from storage.chats import ChatRepository
from storage.engine import Database
from storage.errors import ChatNotFound, TurnInProgress
from storage.events import EventStore
from storage.memory import Compaction, MemoryStore
from storage.models import conversation_items
from storage.records import ChatRecord, Lease, TurnUpdate, UserRecord
from storage.session import ChatSession
from storage.turn_actions import ActionRefused, ActionRequest, start_action_turn

LEASE = Lease("test-instance", 30)


async def finished(store: EventStore, chat_id: str, prompt: str, ts: str) -> str:
    """A completed turn whose model history is one user and one assistant message."""
    turn, _, _ = await store.start_turn(chat_id, prompt, None, ts, lease=LEASE)
    items = ({"role": "user", "content": prompt}, {"role": "assistant", "content": f"re {prompt}"})
    await store.append(
        chat_id, [], TurnUpdate(turn.id, status="completed", final_text="ok", items=items)
    )
    return turn.id


async def test_two_regenerates_at_once_start_one_turn(
    db: Database, store: EventStore, chat: ChatRecord, alice: UserRecord, ts: str
) -> None:
    old = await finished(store, chat.id, "hello", ts)

    async def regenerate(message_id: str) -> object:
        try:
            return await start_action_turn(
                db,
                chat.id,
                ActionRequest("regenerate", old),
                message_id,
                ts,
                owner=alice.id,
                lease=LEASE,
            )
        except (ActionRefused, TurnInProgress) as exc:
            return exc

    outcomes = await asyncio.gather(regenerate("a"), regenerate("b"))
    started = [o for o in outcomes if not isinstance(o, Exception)]
    refused = [o for o in outcomes if isinstance(o, Exception)]
    assert len(started) == 1 and len(refused) == 1
    assert isinstance(refused[0], TurnInProgress)  # the winner's turn runs
    events = await store.list_after(chat.id, 0)
    assert [e.type for e in events] == ["user_prompt", "turn_superseded", "user_prompt"]
    assert [e.seq for e in events] == [1, 2, 3]


async def test_a_superseded_turns_items_leave_the_history_but_stay_stored(
    db: Database,
    store: EventStore,
    chat: ChatRecord,
    alice: UserRecord,
    alice_chats: ChatRepository,
    ts: str,
) -> None:
    first = await finished(store, chat.id, "one", ts)
    second = await finished(store, chat.id, "two", ts)
    await start_action_turn(
        db, chat.id, ActionRequest("edit", first, "uno"), "e", ts, owner=alice.id, lease=LEASE
    )
    assert await ChatSession(db, chat.id).get_items() == []
    assert await ChatSession(db, chat.id).get_items(limit=1) == []
    async with db.session() as session:
        kept = await session.scalars(
            select(conversation_items.c.turn_id).where(conversation_items.c.chat_id == chat.id)
        )
        assert sorted(kept) == sorted([first, first, second, second])  # nothing deleted
    turns = {t.id: t for t in await alice_chats.turns(chat.id)}
    assert turns[first].superseded_by == turns[second].superseded_by
    assert turns[first].superseded_by is not None


async def test_another_users_chat_is_not_found(
    db: Database, store: EventStore, chat: ChatRecord, bob: UserRecord, ts: str
) -> None:
    old = await finished(store, chat.id, "hello", ts)
    with pytest.raises(ChatNotFound):
        await start_action_turn(
            db, chat.id, ActionRequest("regenerate", old), None, ts, owner=bob.id, lease=LEASE
        )
    assert len(await store.list_after(chat.id, 0)) == 1


async def test_a_summary_that_covers_a_replaced_turn_is_forgotten(
    db: Database, store: EventStore, chat: ChatRecord, alice: UserRecord, ts: str
) -> None:
    """Memory (storage/memory.py) summarised the chat's first turns; editing one of them
    drops the summary, as it tells of answers that no longer stand. Replacing a turn after
    the summary keeps it."""
    first = await finished(store, chat.id, "one", ts)
    second = await finished(store, chat.id, "two", ts)
    memory = MemoryStore(db)
    rows = await ChatSession(db, chat.id).get_rows()
    through_first = rows[1][0]  # the first turn's two items
    assert await memory.save(chat.id, Compaction(through_first, "They said one.", 5, 2, 1))

    await start_action_turn(
        db, chat.id, ActionRequest("regenerate", second), "r", ts, owner=alice.id, lease=LEASE
    )
    kept = await memory.load(chat.id)
    assert kept is not None and kept.summary == "They said one."
    await store.append(chat.id, [], TurnUpdate(await _running(store, chat.id), status="completed"))

    await start_action_turn(
        db, chat.id, ActionRequest("edit", first, "uno"), "e", ts, owner=alice.id, lease=LEASE
    )
    assert await memory.load(chat.id) is None
    assert await ChatSession(db, chat.id).get_rows() == []  # both old turns are replaced


async def _running(store: EventStore, chat_id: str) -> str:
    running = await store.running_turn(chat_id)
    assert running is not None
    return running.id
