"""Database set-up: SQLite pragmas and write locking, PostgreSQL schemas, ping."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select, text

from storage.engine import Database
from storage.models import users, utcnow


async def test_sqlite_pragmas_and_parent_dir(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "deeper" / "x.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        assert path.parent.is_dir()
        async with db.session() as session:
            assert await session.scalar(text("PRAGMA journal_mode")) == "wal"
            assert await session.scalar(text("PRAGMA foreign_keys")) == 1
            assert await session.scalar(text("PRAGMA busy_timeout")) == 5000
    finally:
        await db.dispose()


@pytest.mark.parametrize("param", ["schema=abc", "application_name=abc"])
async def test_sqlite_rejects_postgres_params(tmp_path: Path, param: str) -> None:
    with pytest.raises(ValueError, match="only supported on postgresql"):
        Database(f"sqlite+aiosqlite:///{tmp_path}/x.db?{param}")


def test_unsupported_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported database 'mysql'"):
        Database("mysql+aiomysql://u@h/db")


@pytest.mark.parametrize("schema", ["1abc", "a-b", "a;drop", "x" * 64])
def test_invalid_schema_name_is_refused(schema: str) -> None:
    with pytest.raises(ValueError, match="invalid \\?schema="):
        Database(f"postgresql+asyncpg://postgres@127.0.0.1/test?schema={schema}")


def test_repr_hides_password_and_schema_is_parsed() -> None:
    db = Database("postgresql+asyncpg://u:s3cret@127.0.0.1/test?schema=tenant_1")
    assert "s3cret" not in repr(db)
    assert db.schema == "tenant_1"
    assert db.dialect == "postgresql"
    # The engine never sees our private query parameter.
    assert "schema" not in db.engine.url.query


async def test_postgres_schema_becomes_search_path(db: Database) -> None:
    if db.dialect == "sqlite":
        assert db.schema is None
        return
    async with db.session() as session:
        assert await session.scalar(text("SHOW search_path")) == db.schema
        # The tables resolve inside the test schema.
        assert await session.scalar(text("SELECT current_schema()")) == db.schema


@pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)
async def test_postgres_connections_name_themselves(database_url: str) -> None:
    for query, expected in (("", "switchboard"), ("&application_name=eu-1", "eu-1")):
        db = Database(database_url + query)
        try:
            assert "application_name" not in db.engine.url.query  # asyncpg would refuse it
            async with db.session() as session:
                assert await session.scalar(text("SHOW application_name")) == expected
        finally:
            await db.dispose()


async def test_ping(db: Database) -> None:
    assert await db.ping() is True


async def test_ping_unreachable_is_false() -> None:
    db = Database("postgresql+asyncpg://postgres@127.0.0.1:1/test")
    try:
        assert await db.ping() is False
    finally:
        await db.dispose()


async def test_write_sessions_never_hit_database_is_locked(db: Database) -> None:
    """Read-then-write transactions from many connections at once all succeed."""

    async def writer(i: int) -> None:
        async with db.session(write=True) as session:
            await session.scalar(select(users.c.id).limit(1))
            await asyncio.sleep(0.005)  # let the others read too
            await session.execute(
                insert(users).values(id=f"u{i}", name=f"user {i}", created_at=utcnow())
            )
            await session.commit()

    await asyncio.gather(*(writer(i) for i in range(12)))
    async with db.session() as session:
        assert len((await session.execute(select(users.c.id))).all()) == 12


async def test_foreign_keys_enforced(db: Database) -> None:
    from sqlalchemy.exc import IntegrityError

    from storage.models import chats

    now = utcnow()
    async with db.session(write=True) as session:
        with pytest.raises(IntegrityError):
            await session.execute(
                insert(chats).values(id="c", user_id="nobody", created_at=now, updated_at=now)
            )


async def test_a_transaction_cancelled_while_its_begin_waits_leaves_no_transaction_open(
    tmp_path: Path,
) -> None:
    """aiosqlite runs BEGIN on its own thread: a task cancelled while BEGIN waits there
    (another process holds the write lock) gives the connection back to the pool before
    the BEGIN has run. Once it runs, the pooled connection would sit in a transaction and
    every later use of it fail with "cannot start a transaction within a transaction"."""
    import sqlite3
    import threading

    from sqlalchemy import event
    from sqlalchemy.util import await_only

    path = tmp_path / "x.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    begin_running = threading.Event()

    def trace(statement: str) -> None:  # on the driver's thread, as a statement starts
        if statement.startswith("BEGIN IMMEDIATE"):
            begin_running.set()

    @event.listens_for(db.engine.sync_engine, "connect")
    def _traced(dbapi_connection: Any, _record: Any) -> None:
        await_only(dbapi_connection.driver_connection.set_trace_callback(trace))

    try:
        async with db.session() as session:
            await session.execute(text("CREATE TABLE t (x INTEGER)"))
            await session.commit()
        other.execute("BEGIN IMMEDIATE")  # another process writing: BEGIN IMMEDIATE waits

        async def write(value: int) -> None:
            async with db.transaction(write=True) as conn:
                await conn.execute(text("INSERT INTO t VALUES (:x)"), {"x": value})

        task = asyncio.create_task(write(0))
        assert await asyncio.to_thread(begin_running.wait, 30), "BEGIN IMMEDIATE never ran"
        task.cancel()
        await asyncio.sleep(0)  # the task handles its cancellation (and frees the connection)
        other.execute("COMMIT")  # now the waiting BEGIN runs
        with pytest.raises(asyncio.CancelledError):
            await task

        for value in range(1, 4):
            await write(value)
        async with db.session() as session:
            assert await session.scalar(text("SELECT count(*) FROM t")) == 3
    finally:
        other.close()
        await db.dispose()
