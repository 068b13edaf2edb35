"""The bare-driver transactions of the turn's writes (storage/drivers.py,
storage/plain_sql.py): one hop on SQLite, rollback on failure, errors that reach the
caller, and on PostgreSQL a connection that died silently costs a retry, not the write."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from storage.chats import ChatRepository
from storage.drivers import SqliteWriteThread
from storage.engine import Database, PoolSizing
from storage.events import EventStore
from storage.plain_sql import BINDINGS, Append, append_plan, postgres_sql, sqlite_sql
from storage.records import ChatRecord, NewEvent
from storage.users import UserRepository
from tests.support.db import POSTGRES_URL
from tests.support.proxies import dropping_proxy


def test_an_in_memory_database_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="in-memory database is private to one connection"):
        SqliteWriteThread(":memory:", 100)


async def test_a_failed_transaction_writes_nothing_and_the_next_one_runs(tmp_path: Path) -> None:
    path = str(tmp_path / "w.db")
    sqlite3.connect(path).execute("CREATE TABLE t (x INTEGER)").connection.close()
    writer = SqliteWriteThread(path, 1000)
    try:

        def fails(connection: sqlite3.Connection) -> None:
            connection.execute("INSERT INTO t VALUES (1)")
            raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            await writer.run(fails)
        await writer.run(lambda connection: connection.execute("INSERT INTO t VALUES (2)"))
        rows = await writer.run(lambda connection: connection.execute("SELECT x FROM t").fetchall())
        assert rows == [(2,)]
    finally:
        await writer.close()


async def test_a_database_that_cannot_be_opened_fails_the_call_not_the_thread(
    tmp_path: Path,
) -> None:
    writer = SqliteWriteThread(str(tmp_path), 1000)  # a directory, not a file
    try:
        for _ in range(2):  # the thread is still there to answer the second
            with pytest.raises(sqlite3.OperationalError, match="unable to open"):
                await writer.run(lambda connection: None)
    finally:
        await writer.close()


def test_the_sql_is_spelled_for_each_engine() -> None:
    assert sqlite_sql("turn_status") == (
        "SELECT status, cancel_requested FROM turns WHERE id = ? AND chat_id = ?"
    )
    assert postgres_sql("turn_status") == (
        "SELECT status, cancel_requested FROM turns WHERE id = $1 AND chat_id = $2"
    )
    assert postgres_sql("lock_chat").endswith("WHERE id = $1 FOR UPDATE")
    assert postgres_sql("update_turn:status,usage") == (
        "UPDATE turns SET status = $1, usage = $2 WHERE id = $3 AND chat_id = $4"
    )


def test_an_append_plan_allocates_seqs_before_it_checks_the_fence() -> None:
    events = [NewEvent("tool_call", "t1", {"name": "x"}, "ts")] * 2
    steps = append_plan(Append("c1", events, None, "t1", False), BINDINGS["sqlite"])
    first = next(steps)
    assert (first.name, first.params[0], first.params[2]) == ("allocate", 2, "c1")
    assert steps.send(7).name == "insert_events"  # seqs 6 and 7
    status = steps.send(None)
    assert (status.name, status.params) == ("turn_status", ("t1", "c1"))
    with pytest.raises(StopIteration) as done:
        steps.send(("running", False))
    assert [record.seq for record in done.value.value] == [6, 7]


def test_on_postgresql_an_append_takes_its_seqs_and_inserts_in_one_statement() -> None:
    events = [
        NewEvent("tool_call", "t1", {"name": "x"}, "ts1"),
        NewEvent("tool_output", None, {"n": 1}, "ts2"),
    ]
    steps = append_plan(Append("c1", events, None, "t1", False), BINDINGS["postgresql"])
    first = next(steps)
    assert first.name == "allocate_insert"
    assert first.params[0] == 2 and first.params[2] == "c1"
    assert first.params[3:] == (
        ["t1", None],
        ["tool_call", "tool_output"],
        [
            '{"name":"x"}',
            '{"n":1}',
        ],
        ["ts1", "ts2"],
    )
    assert postgres_sql("allocate_insert").startswith("WITH s AS (UPDATE chats SET last_seq")
    status = steps.send(7)  # seqs 6 and 7; no separate insert
    assert (status.name, status.params) == ("turn_status", ("t1", "c1"))
    with pytest.raises(StopIteration) as done:
        steps.send(("running", False))
    assert [(r.seq, r.type) for r in done.value.value] == [(6, "tool_call"), (7, "tool_output")]


async def test_postgresql_reads_run_outside_a_transaction_and_writes_inside_one(
    database_url: str,
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's transactions (SQLite's reads take a snapshot in BEGIN)")
    db = Database(database_url)

    async def in_transaction(connection: Any) -> bool:
        return bool(connection.is_in_transaction())

    try:
        assert await db.postgres_run(in_transaction, write=True) is True
        assert await db.postgres_run(in_transaction, write=False) is False
    finally:
        await db.dispose()


async def _chat(db: Database) -> ChatRecord:
    user, _ = await UserRepository(db).create_user("alice")
    return await ChatRepository(db, user.id).get_or_create("chat-1")


async def test_a_silently_dead_postgres_connection_costs_a_retry_not_the_write(
    database_url: str,
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("a pooled connection of PostgreSQL's (SQLite has no connection to lose)")
    async with dropping_proxy(make_url(POSTGRES_URL).port or 5432) as proxy:
        url = make_url(database_url).set(port=proxy.port).render_as_string(hide_password=False)
        # One connection, so the write after the silence must use the dead one first.
        db = Database(url, pool=PoolSizing(size=1, max_overflow=0))
        try:
            chat = await _chat(db)
            store = EventStore(db)
            turn, _, _ = await store.start_turn(chat.id, "hi", None, "2026-01-01T00:00:00Z")
            backends = await _backends(db)
            proxy.silence()  # the pooled connection is dead; the client has not heard
            records = await store.append(
                chat.id, [NewEvent("tool_call", turn.id, {"n": 1}, "2026-01-01T00:00:01Z")]
            )
            assert [r.seq for r in records] == [2]
            assert await _backends(db) != backends  # written on a new connection
            stored = await store.list_after(chat.id, 0)
            assert [(e.seq, e.type) for e in stored] == [(1, "user_prompt"), (2, "tool_call")]
            # A read without a transaction is retried the same way.
            backends = await _backends(db)
            proxy.silence()
            again = await ChatRepository(db, chat.user_id).get_or_create(chat.id)
            assert again is not None and again.last_seq == 2
            assert await _backends(db) != backends
        finally:
            await db.dispose()


async def _backends(db: Database) -> Any:
    async with db.transaction() as conn:
        return (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
