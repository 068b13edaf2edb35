"""The PostgreSQL pool: sized by settings, no ping per checkout, dropped connections
replaced, lost ones recognised, an exhausted pool named in its error."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from app.services import pool_sizing
from storage.engine import Database, PoolExhausted, PoolSizing, connection_lost
from tests.support.db import POSTGRES_URL
from tests.support.proxies import DroppingProxy
from tests.support.waiting import wait_until


@pytest.fixture
async def pg_url(database_url: str) -> str:
    if not database_url.startswith("postgresql"):
        pytest.skip("the pool is PostgreSQL's (SQLite has no server to drop connections)")
    return database_url


@pytest.fixture
async def admin() -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(POSTGRES_URL.replace("postgresql+asyncpg", "postgresql"))
    try:
        yield connection
    finally:
        await connection.close()


async def _backend_pid(db: Database) -> int:
    async with db.transaction() as conn:
        return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def test_pool_is_sized_from_settings(pg_url: str, make_settings: Any) -> None:
    settings = make_settings(
        database_pool_size=7, database_max_overflow=3, database_pool_timeout=12.5
    )
    db = Database(pg_url, pool=pool_sizing(settings))
    try:
        pool: Any = db.engine.pool
        assert (pool.size(), pool._max_overflow, pool.timeout()) == (7, 3, 12.5)
    finally:
        await db.dispose()


async def test_a_checkout_sends_no_ping(pg_url: str) -> None:
    db = Database(pg_url)
    queries: list[str] = []
    try:
        async with db.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            raw.driver_connection.add_query_logger(lambda record: queries.append(record.query))
        for _ in range(3):
            await _backend_pid(db)  # the same pooled connection each time
        # Statements with parameters or prepared are not logged; transaction control is.
        # SQLAlchemy's pre-ping (";" in a transaction of its own) would add a BEGIN and a
        # ROLLBACK before each transaction.
        assert queries == ["BEGIN;", "COMMIT;"] * 3
    finally:
        await db.dispose()


async def test_a_terminated_backend_is_replaced_and_the_next_transaction_succeeds(
    pg_url: str, admin: asyncpg.Connection
) -> None:
    db = Database(pg_url, pool=PoolSizing(size=1, max_overflow=0))
    try:
        async with db.transaction() as conn:  # back in the pool, idle, afterwards
            pooled = (await conn.get_raw_connection()).driver_connection
            old = int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", old)
        await wait_until(
            lambda: _gone(admin, old), what="the terminated backend to leave pg_stat_activity"
        )
        # The backend leaves pg_stat_activity a moment before it closes its socket: what
        # the checkout relies on is the client having seen the socket close.
        await wait_until(pooled.is_closed, what="the pooled connection to see its socket close")
        new = await _backend_pid(db)
        assert new != old
        async with db.transaction() as conn:  # and the pool goes on working
            assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1
    finally:
        await db.dispose()


async def _ended_but_not_closed(
    db: Database, proxy: DroppingProxy, admin: asyncpg.Connection
) -> int:
    """End the backend of ``db``'s one pooled connection, whose client hears the server's
    FATAL "terminating connection due to administrator command" but not yet its close (a
    FIN lagging behind): the socket looks open, the protocol cannot go on. Its pid."""
    pid = await _backend_pid(db)
    proxy.hold_closes()
    assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
    await wait_until(lambda: proxy.held == 1, what="the server to end the connection")
    # A round trip through the event loop: the client has read what came before it.
    await admin.fetchval("SELECT 1")
    return pid


def _through(proxy: DroppingProxy, url: str) -> str:
    return make_url(url).set(port=proxy.port).render_as_string(hide_password=False)


async def test_a_connection_ended_before_its_close_arrived_is_a_lost_connection(
    pg_url: str, admin: asyncpg.Connection, postgres_proxy: DroppingProxy
) -> None:
    db = Database(_through(postgres_proxy, pg_url), pool=PoolSizing(size=1, max_overflow=0))
    try:
        old = await _ended_but_not_closed(db, postgres_proxy, admin)
        # asyncpg: "cannot switch to state 15; another operation (2) is in progress"
        with pytest.raises(OperationalError) as raised:
            await _backend_pid(db)
        assert connection_lost(raised.value)
        assert await _backend_pid(db) != old  # dropped, not lent again
    finally:
        await db.dispose()


async def test_on_the_plain_sql_path_such_a_connection_costs_a_retry(
    pg_url: str, admin: asyncpg.Connection, postgres_proxy: DroppingProxy
) -> None:
    db = Database(_through(postgres_proxy, pg_url), pool=PoolSizing(size=1, max_overflow=0))

    async def backend_pid(connection: Any) -> int:
        return int(await connection.fetchval("SELECT pg_backend_pid()"))

    try:
        for write in (False, True):
            old = await _ended_but_not_closed(db, postgres_proxy, admin)
            assert await db.postgres_run(backend_pid, write=write) != old
    finally:
        await db.dispose()


async def _gone(admin: asyncpg.Connection, pid: int) -> bool:
    return not await admin.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid)


async def test_an_exhausted_pool_says_which_settings_to_raise(pg_url: str) -> None:
    db = Database(pg_url, pool=PoolSizing(size=1, max_overflow=0, timeout=0.05))
    try:
        async with db.transaction() as held:
            await held.execute(text("SELECT 1"))
            with pytest.raises(PoolExhausted) as raised:
                async with db.transaction():
                    pass
        message = str(raised.value)
        assert "all 1 database connections stayed busy for 0.05 s" in message
        assert "SWITCHBOARD_DATABASE_POOL_SIZE (now 1)" in message
        assert "SWITCHBOARD_DATABASE_MAX_OVERFLOW (now 0)" in message
        # Nothing is left broken: the connection came back and serves the next one.
        assert await _backend_pid(db) > 0
    finally:
        await db.dispose()
