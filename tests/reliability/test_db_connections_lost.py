"""PostgreSQL ending the server's connections (``pg_terminate_backend``), and REST after it;
SQLite's write lock held past the busy timeout.

Issue 33 (10): after the server's backends were terminated, REST answered 500 "unhandled
error" to some calls: the driver's errors for a lost connection (``connection was closed in
the middle of operation``; ``cannot switch to state 15``, when the server's farewell had
come but the socket had not closed yet) were not taken for one. A lost connection is a
503 with ``Retry-After`` at worst; a REST read runs once more on a fresh connection, so it
answers 200; a write is not run again (it may have committed).

Both ways of losing a connection are made to happen, not waited for by luck:

- idle in the pool: the server's connections reach PostgreSQL through a proxy that
  passes on the server's FATAL "terminating connection due to administrator command" but
  holds back its close, so every pooled connection is in the state the outside test hit
  for a moment (``DroppingProxy.hold_closes``);
- mid-statement: the reads wait on a lock the test holds when their backends are ended.

The server's connections are found by their ``application_name``, unique to the test, so
nothing else on the shared PostgreSQL is touched.

SQLite's equivalent is another process holding the write lock past the busy timeout (5 s):
"database is locked", temporary, so a 503 too. It was already one where SQLAlchemy runs
the statement, but a 500 on the plain-SQL path, which raised the driver's own error.
"""

from __future__ import annotations

import asyncio
import secrets
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.settings import Settings
from storage.chats import ChatRepository
from storage.engine import Database
from storage.users import UserRepository
from tests.support.db import POSTGRES_URL
from tests.support.proxies import DroppingProxy
from tests.support.servers import LiveServer, serve
from tests.support.waiting import wait_until

POSTGRESQL_ONLY = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)
SQLITE_ONLY = pytest.mark.parametrize("_migrated_database", ["sqlite"], indirect=True)

SEQUENTIAL = 20
CONCURRENT = 40  # the pool's default capacity (20 + 20 overflow): all of them at once
CHAT = "c1"
# Every one reads the chats table, which the mid-statement case locks.
READS = ["/api/chats", f"/api/chats/{CHAT}", f"/api/chats/{CHAT}/events"]


def reads(count: int) -> list[str]:
    return (READS * count)[:count]


async def admin_connection() -> asyncpg.Connection:
    return await asyncpg.connect(POSTGRES_URL.replace("postgresql+asyncpg", "postgresql"))


async def terminate_backends(application_name: str) -> int:
    """End every backend of ``application_name``; how many there were."""
    admin = await admin_connection()
    try:
        ended = await admin.fetchval(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
            "FROM pg_stat_activity WHERE application_name = $1",
            application_name,
        )
    finally:
        await admin.close()
    return int(ended)


async def waiting_on_a_lock(application_name: str) -> int:
    admin = await admin_connection()
    try:
        return int(
            await admin.fetchval(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE application_name = $1 AND wait_event_type = 'Lock'",
                application_name,
            )
        )
    finally:
        await admin.close()


async def status_of(http: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> int:
    response = await http.request(method, path, **kwargs)
    if response.status_code == 503:
        assert response.headers["retry-after"], response.headers
        assert response.json()["error"]["code"] == "server_error"
    return response.status_code


async def all_at_once(http: httpx.AsyncClient, paths: list[str]) -> list[int]:
    return list(await asyncio.gather(*(status_of(http, "GET", path) for path in paths)))


@asynccontextmanager
async def chats_locked(database_url: str) -> AsyncIterator[None]:
    """The chats table locked against every reader until the block ends."""
    db = Database(database_url)
    try:
        async with db.transaction() as conn:
            await conn.execute(text("LOCK TABLE chats IN ACCESS EXCLUSIVE MODE"))
            yield
    finally:
        await db.dispose()


@pytest.fixture
async def live(
    make_settings: Callable[..., Settings], database_url: str, postgres_proxy: DroppingProxy
) -> AsyncIterator[tuple[LiveServer, str]]:
    name = f"switchboard-test-{secrets.token_hex(4)}"
    url = (
        make_url(database_url)
        .set(port=postgres_proxy.port)
        .update_query_dict({"application_name": name})
    )
    settings = make_settings(
        database_url=url.render_as_string(hide_password=False), auth_mode="token"
    )
    async with serve(settings) as server:
        user, token = await UserRepository(server.services.db).create_user("alice")
        await ChatRepository(server.services.db, user.id).get_or_create(CHAT)
        server.tokens["alice"] = token
        try:
            yield server, name
        finally:
            postgres_proxy.release_closes()  # the server's shutdown waits for its connections to close


@pytest.fixture
async def idle_connections_lost(
    live: tuple[LiveServer, str], postgres_proxy: DroppingProxy
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the server whose pooled connections were told by PostgreSQL that it
    ends them, their sockets still open: the state a connection is in between the
    server's FATAL and its close."""
    server, name = live
    async with server.client(server.tokens["alice"]) as http:
        # Some connections in the pool (fewer requests than the pool keeps: none closed).
        assert set(await all_at_once(http, reads(10))) == {200}
        postgres_proxy.hold_closes()
        ended = await terminate_backends(name)
        assert ended > 0
        await wait_until(
            lambda: postgres_proxy.held >= ended, what="the server to end every connection"
        )
        yield http


@POSTGRESQL_ONLY
async def test_reads_after_the_pooled_connections_were_ended_answer(
    idle_connections_lost: httpx.AsyncClient,
) -> None:
    http = idle_connections_lost
    codes = [await status_of(http, "GET", path) for path in reads(SEQUENTIAL)]
    assert codes == [200] * SEQUENTIAL, f"{codes.count(500)} of {SEQUENTIAL} answered 500"


@POSTGRESQL_ONLY
async def test_a_write_on_a_lost_connection_is_a_503_and_not_run_again(
    idle_connections_lost: httpx.AsyncClient,
) -> None:
    http = idle_connections_lost
    rename = {"json": {"title": "renamed"}}
    assert await status_of(http, "PATCH", f"/api/chats/{CHAT}", **rename) == 503
    assert (await http.get(f"/api/chats/{CHAT}")).json()["title"] is None
    # The connections in doubt are gone: the person's retry goes through.
    assert await status_of(http, "PATCH", f"/api/chats/{CHAT}", **rename) == 200


@POSTGRESQL_ONLY
async def test_reads_whose_connections_are_ended_mid_statement_answer(
    live: tuple[LiveServer, str], database_url: str
) -> None:
    server, name = live
    async with server.client(server.tokens["alice"]) as http:
        async with chats_locked(database_url):
            calls = asyncio.ensure_future(all_at_once(http, reads(CONCURRENT)))

            async def all_waiting() -> bool:
                assert not calls.done(), f"the reads ended before the lock: {calls.result()}"
                return await waiting_on_a_lock(name) == CONCURRENT

            await wait_until(all_waiting, what=f"{CONCURRENT} reads to wait on the lock")
            assert await terminate_backends(name) >= CONCURRENT
        codes = await calls
    assert codes == [200] * CONCURRENT, f"{codes.count(500)} of {CONCURRENT} answered 500"


@SQLITE_ONLY
async def test_sqlite_locked_past_its_busy_timeout_is_a_503(
    make_settings: Callable[..., Settings], database_url: str
) -> None:
    async with serve(make_settings(auth_mode="token")) as server:
        _user, token = await UserRepository(server.services.db).create_user("alice")
        # Another process's writer: a connection of its own, which the server's own
        # write lock does not know about.
        holder = sqlite3.connect(make_url(database_url).database or "", isolation_level=None)
        try:
            async with server.client(token) as http:
                assert await status_of(http, "GET", "/api/me") == 200  # the token is known
                holder.execute("BEGIN IMMEDIATE")
                # Into a new chat: the chat is created on the plain-SQL path.
                upload = {"files": {"file": ("note.txt", b"hello", "text/plain")}}
                path = "/api/chats/new-chat/attachments"
                assert await status_of(http, "POST", path, **upload) == 503
                holder.execute("ROLLBACK")
                assert await status_of(http, "POST", path, **upload) == 201
        finally:
            holder.close()
