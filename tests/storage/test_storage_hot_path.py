"""The turn's storage hot path: Core transactions, fewer statements, fewer history reads.

These guard the behaviour the optimisations must keep (bench/ measures their speed):
seqs stay gap-free when a prompt is refused, a failed write transaction releases the
SQLite write turn, JSON columns store what the stdlib could, and the turn's session
answers the SDK's tail reads from what it holds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, insert, select

from storage import plain_sql
from storage.engine import Database, json_dumps, json_loads
from storage.events import EventStore
from storage.models import chats, users, utcnow
from storage.records import ChatRecord, NewEvent, TurnUpdate
from storage.session import ChatSession, TurnSession

USAGE = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "requests": 1}


async def finish(store: EventStore, chat_id: str, turn_id: str, ts: str) -> None:
    await store.append(
        chat_id,
        [NewEvent("end_of_stream", turn_id, {"status": "completed", "usage": USAGE}, ts)],
        TurnUpdate(turn_id, status="completed", final_text="done", usage=USAGE),
    )


async def test_a_repeated_prompt_gives_its_seq_back(
    store: EventStore, chat: ChatRecord, ts: str
) -> None:
    turn, first, _ = await store.start_turn(chat.id, "hello", "m1", ts)
    # The retry allocates a seq before it finds the turn, then rolls it back.
    _, again, created = await store.start_turn(chat.id, "hello", "m1", ts)
    assert not created and again.seq == first.seq == 1
    await finish(store, chat.id, turn.id, ts)
    _, next_prompt, created = await store.start_turn(chat.id, "next", "m2", ts)
    assert created and next_prompt.seq == 3  # user_prompt, end_of_stream, user_prompt
    assert [e.seq for e in await store.list_after(chat.id, 0)] == [1, 2, 3]


async def test_a_running_turn_refuses_even_a_new_message_id(
    store: EventStore, chat: ChatRecord, ts: str
) -> None:
    from storage.errors import TurnInProgress

    running, _, _ = await store.start_turn(chat.id, "one", "m1", ts)
    with pytest.raises(TurnInProgress) as caught:
        await store.start_turn(chat.id, "two", "m2", ts)
    assert caught.value.turn_id == running.id
    # The retry of the running turn's own message is still answered, not refused.
    same, _, created = await store.start_turn(chat.id, "one", "m1", ts)
    assert same.id == running.id and not created


async def test_a_failed_write_transaction_is_rolled_back_and_frees_the_next(
    db: Database,
) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        async with db.transaction(write=True) as conn:
            await conn.execute(insert(users).values(id="u1", name="one", created_at=utcnow()))
            raise RuntimeError("boom")

    async def write(i: int) -> None:
        async with db.transaction(write=True) as conn:
            await conn.execute(insert(users).values(id=f"w{i}", name=f"w{i}", created_at=utcnow()))

    # Were the write turn (SQLite) left taken, these would wait forever: bound them.
    await asyncio.wait_for(asyncio.gather(*(write(i) for i in range(20))), 30)
    async with db.transaction() as conn:
        ids = set((await conn.scalars(select(users.c.id))).all())
    assert ids == {f"w{i}" for i in range(20)}


async def test_json_columns_store_what_the_stdlib_could(
    store: EventStore, chat: ChatRecord, ts: str
) -> None:
    turn, _, _ = await store.start_turn(chat.id, "p", None, ts)
    payload: dict[str, Any] = {"big": 2**70, "keys": {1: "one"}, "text": "café ✓"}
    await store.append(chat.id, [NewEvent("tool_output", turn.id, payload, ts)])
    stored = (await store.list_after(chat.id, 1))[0].payload
    assert stored == {"big": 2**70, "keys": {"1": "one"}, "text": "café ✓"}


def test_json_helpers_fall_back_to_the_stdlib() -> None:
    assert json_loads(json_dumps({"a": [1, 2.5, None]})) == {"a": [1, 2.5, None]}
    assert json_dumps({1: 2}) == json.dumps({1: 2})
    # Rows the stdlib wrote may hold NaN, which orjson cannot read.
    value = json_loads('{"x": NaN}')
    assert value["x"] != value["x"]
    with pytest.raises(ValueError):
        json_loads("{not json")


@pytest.fixture
def selects(db: Database, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every SELECT on conversation_items the test runs, through SQLAlchemy or as plain
    SQL (storage/plain_sql.py spells each statement it runs with ``<engine>_sql``)."""
    seen: list[str] = []

    def counts(statement: str) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "conversation_items" in statement:
            seen.append(statement)

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        counts(statement)

    spell = "sqlite_sql" if db.dialect == "sqlite" else "postgres_sql"
    real = getattr(plain_sql, spell)

    def spelled(name: str) -> str:
        sql: str = real(name)
        counts(sql)
        return sql

    monkeypatch.setattr(plain_sql, spell, spelled)
    event.listen(db.engine.sync_engine, "before_cursor_execute", record)
    yield seen
    event.remove(db.engine.sync_engine, "before_cursor_execute", record)


async def test_turn_session_reads_the_tail_from_pending_items(
    db: Database, chat: ChatRecord, selects: list[str]
) -> None:
    stored: list[Any] = [{"role": "user", "content": f"old {i}"} for i in range(3)]
    await ChatSession(db, chat.id).add_items(stored)
    session = TurnSession(ChatSession(db, chat.id))
    pending: list[Any] = [{"role": "user", "content": f"new {i}"} for i in range(2)]
    await session.add_items(pending)

    assert await session.get_items(limit=2) == pending
    assert await session.get_items(limit=1) == pending[-1:]
    assert await session.get_items(limit=0) == []
    assert selects == []  # all answered from the turn's own items
    assert await session.get_items(limit=4) == stored[-2:] + pending
    assert await session.get_items() == stored + pending
    assert len(selects) == 2


async def test_chat_row_is_locked_by_the_seq_allocation(
    db: Database, store: EventStore, chat: ChatRecord, ts: str
) -> None:
    """Concurrent prompts and appends on one chat: one turn, seqs gap-free."""
    results = await asyncio.gather(
        *(store.start_turn(chat.id, f"p{i}", f"m{i}", ts) for i in range(8)),
        return_exceptions=True,
    )
    created = [r for r in results if not isinstance(r, BaseException) and r[2]]
    assert len(created) == 1
    turn = created[0][0]
    await asyncio.gather(
        *(
            store.append(
                chat.id,
                [
                    NewEvent(
                        "agent_updated",
                        turn.id,
                        {"new_agent": "Yelp", "name": "Yelp", "current_agent": "Yelp"},
                        ts,
                    )
                ],
            )
            for _ in range(10)
        )
    )
    assert [e.seq for e in await store.list_after(chat.id, 0)] == list(range(1, 12))
    async with db.transaction() as conn:
        assert await conn.scalar(select(chats.c.last_seq).where(chats.c.id == chat.id)) == 11
