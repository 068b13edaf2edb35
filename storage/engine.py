"""The database handle: one async engine, configured for SQLite or PostgreSQL.

``Database(url)`` is all a caller needs. Two URL forms are supported:

- ``sqlite+aiosqlite:///path/to/file.db`` — the parent directory is created if missing;
  every connection runs WAL mode, ``busy_timeout=5000`` and ``foreign_keys=ON``.
- ``postgresql+asyncpg://user@host:port/db`` — a pool sized by ``PoolSizing`` (settings
  ``SWITCHBOARD_DATABASE_POOL_SIZE``, ``…_MAX_OVERFLOW``, ``…_POOL_TIMEOUT``). An optional
  ``?schema=NAME`` query parameter (ours, not asyncpg's) is removed from the URL and
  becomes the connection's ``search_path``, so a whole test session or tenant can live
  in its own schema while callers still pass a single URL string around. Connections
  name themselves ``switchboard`` in ``pg_stat_activity.application_name`` (an operator
  can tell them apart, and end them, by it); ``?application_name=NAME``, as in libpq's
  URLs, gives another name, e.g. one per instance.

PostgreSQL connections are not pinged on every checkout (``pool_pre_ping`` is one round
trip per transaction, most of a small transaction's latency). Instead a checkout asks
the driver, without a round trip, whether the connection's socket is still open: a
backend ended by the server (``pg_terminate_backend``, a restart, an idle timeout) has
closed it, and the pool replaces it before anyone uses it. A connection that dies
silently fails its first statement; SQLAlchemy then invalidates it and every connection
checked in before it, so the next transaction gets a fresh one. A pool that stays
exhausted for ``pool_timeout`` seconds raises ``PoolExhausted``, which names the
settings to raise.

A lost connection, whichever way asyncpg words it (``storage.drivers.is_disconnect``),
raises SQLAlchemy's ``OperationalError`` (PEP 249's class for "an unexpected
disconnect") with ``connection_invalidated`` set: ``connection_lost(exc)``. What ran on
it was not committed unless the loss came at the commit itself, so only a caller that
knows its work is a read may run it again (app.errors retries a REST read once).
SQLite's own errors from the plain-SQL path (storage/drivers.py) are raised as
SQLAlchemy reports them too: "database is locked" past the busy timeout is an
``OperationalError``.

SQLite transactions: a plain ``db.session()`` begins with a deferred ``BEGIN``, so
readers never wait (WAL). ``db.session(write=True)`` begins with ``BEGIN IMMEDIATE``,
taking the write lock up front: a read-then-write transaction can otherwise fail at once
with "database is locked" (SQLite cannot upgrade a read snapshot that another writer has
moved on from, and does not wait in that case). Within one process, write transactions
take turns on an ``asyncio.Lock`` before they ask SQLite for its lock: waiting in SQLite's
busy handler sleeps in growing steps while holding a pooled connection, and with hundreds
of concurrent turns that convoy left the lock idle, exhausted the pool and failed turns
("database is locked", pool timeouts; ``bench/concurrency.py`` at 1,000 chats). Between
processes ``busy_timeout`` still applies. On PostgreSQL ``write`` changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
from sqlalchemy import Table, event, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, CursorResult, ExceptionContext, Result, make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as SQLAlchemyPoolTimeout
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import AsyncAdaptedQueuePool, ConnectionPoolEntry, PoolResetState
from sqlalchemy.util import await_only

from storage.drivers import SQLITE_PRAGMAS, SqliteWriteThread, is_disconnect, postgres_transaction
from storage.pool_queue import FairQueue

log = logging.getLogger("switchboard.storage")
T = TypeVar("T")

# Execution option that marks connections of write sessions (see the module docstring).
WRITE_OPTION = "switchboard_write"
SCHEMA_PARAM = "schema"
APPLICATION_NAME_PARAM = "application_name"
APPLICATION_NAME = "switchboard"
# Query parameters of ours on a PostgreSQL URL, which asyncpg would refuse.
OUR_PARAMS = (SCHEMA_PARAM, APPLICATION_NAME_PARAM)
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
SQLITE_BUSY_TIMEOUT_MS = 5000
# Marks a pooled SQLite connection whose BEGIN was interrupted (see _configure_sqlite).
_BEGIN_UNFINISHED = "switchboard_begin_unfinished"
# A readiness probe must answer even when the database hangs.
PING_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class PoolSizing:
    """How many PostgreSQL connections one process keeps and may open (SQLite: unused).

    A connection is held for one transaction, not for a chat, so a few dozen serve
    thousands of concurrent chats; the defaults (40 at most) leave two instances under
    PostgreSQL's default ``max_connections`` of 100. SQLAlchemy's own default (5 + 10)
    refused prompts under 500 concurrent chats ("QueuePool limit of size 5 overflow 10
    reached").
    """

    size: int = 20  # kept open
    max_overflow: int = 20  # opened beyond ``size`` under load, closed when returned
    # Seconds with no connection coming back before a waiting transaction fails (a stuck
    # pool); in a line that moves it keeps its place (storage.pool_queue).
    timeout: float = 30.0


class PoolExhausted(SQLAlchemyPoolTimeout):
    """No database connection came free within the pool timeout."""


class _SizedPool(AsyncAdaptedQueuePool):
    """SQLAlchemy's async queue pool served first come, first served (a returned
    connection goes to the longest waiter: storage.pool_queue.FairQueue), whose timeout
    says which settings to raise."""

    _queue_class = FairQueue[ConnectionPoolEntry]

    def _do_get(self) -> ConnectionPoolEntry:
        try:
            return super()._do_get()
        except PoolExhausted:
            raise
        except SQLAlchemyPoolTimeout as exc:
            raise PoolExhausted(
                f"all {self.size() + self._max_overflow} database connections stayed busy for "
                f"{self._timeout:g} s; raise SWITCHBOARD_DATABASE_POOL_SIZE (now "
                f"{self.size()}) or SWITCHBOARD_DATABASE_MAX_OVERFLOW (now {self._max_overflow}),"
                " within the server's max_connections, or SWITCHBOARD_DATABASE_POOL_TIMEOUT"
            ) from exc


class Database:
    """An async engine plus session factories; create one per process and share it."""

    def __init__(
        self,
        url: str | URL,
        *,
        pool: PoolSizing | None = None,
        connect_args: dict[str, Any] | None = None,
        **engine_kwargs: Any,
    ) -> None:
        parsed = make_url(url)
        self.url: str = parsed.render_as_string(hide_password=False)
        self.dialect: str = parsed.get_backend_name()
        self.schema: str | None = None
        args: dict[str, Any] = dict(connect_args or {})

        if self.dialect == "sqlite":
            for param in OUR_PARAMS:
                if param in parsed.query:
                    raise ValueError(f"?{param}= is only supported on postgresql URLs")
            _ensure_sqlite_parent_dir(parsed)
            # _configure_sqlite rolls back only connections left in a transaction.
            engine_kwargs.setdefault("pool_reset_on_return", None)
        elif self.dialect == "postgresql":
            parsed, self.schema, application_name = _pop_our_params(parsed)
            settings = dict(args.get("server_settings") or {})
            settings.setdefault("application_name", application_name)
            if self.schema is not None:
                settings["search_path"] = self.schema
            args["server_settings"] = settings
            if "poolclass" not in engine_kwargs:  # e.g. migrations: a NullPool
                sizing = pool or PoolSizing()
                engine_kwargs.update(
                    poolclass=_SizedPool,
                    pool_size=sizing.size,
                    max_overflow=sizing.max_overflow,
                    pool_timeout=sizing.timeout,
                )
        else:
            raise ValueError(
                f"unsupported database {self.dialect!r}: use sqlite+aiosqlite:// "
                "or postgresql+asyncpg://"
            )

        engine_kwargs.setdefault("json_serializer", json_dumps)
        engine_kwargs.setdefault("json_deserializer", json_loads)
        # hide_parameters: a failed statement's message (logged with its trace) would
        # otherwise carry its parameters, which are prompts, mail and bank data.
        self.engine: AsyncEngine = create_async_engine(
            parsed, connect_args=args, hide_parameters=True, **engine_kwargs
        )
        if self.dialect == "sqlite":
            _configure_sqlite(self.engine)
        else:
            _replace_closed_connections(self.engine)
            _recognise_lost_connections(self.engine)

        # expire_on_commit=False: rows stay readable after commit without another query.
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self._write_engine = self.engine.execution_options(**{WRITE_OPTION: True})
        self._write_sessions = async_sessionmaker(self._write_engine, expire_on_commit=False)
        # SQLite only (see the module docstring): one write transaction at a time.
        self._write_lock: asyncio.Lock | None = asyncio.Lock() if self.dialect == "sqlite" else None
        self._sqlite_path = parsed.database or ""
        self._sqlite_writer: SqliteWriteThread | None = None  # made on first use
        self._abandoned_pings: set[asyncio.Task[None]] = set()  # see ping
        # Set by tracing (app.telemetry_db): wraps each plain-SQL transaction
        # (storage/plain_sql.py), which SQLAlchemy's events never see, and is given the
        # list its statements' SQL is added to. None: nothing is recorded.
        self.plain_sql_span: Callable[[], AbstractContextManager[list[str]]] | None = None

    def __repr__(self) -> str:
        return f"Database({make_url(self.url).render_as_string(hide_password=True)!r})"

    def session(self, *, write: bool = False) -> AbstractAsyncContextManager[AsyncSession]:
        """A new ``AsyncSession``; use it as ``async with db.session() as s:``.

        Pass ``write=True`` when the transaction writes (see the module docstring).
        """
        if write and self._write_lock is not None:
            return self._serialised(self._write_sessions())
        return (self._write_sessions if write else self._sessions)()

    def transaction(self, *, write: bool = False) -> AbstractAsyncContextManager[AsyncConnection]:
        """A Core connection in a transaction: ``async with db.transaction() as conn:``.

        Commits when the block ends, rolls back if it raises. For the hot path (the turn
        writer, one transaction per batch of events): it skips the ORM ``Session`` layer,
        which costs about a quarter of a small transaction's CPU time and buys nothing for
        Core statements. ``write`` as for ``session``.
        """
        if write and self._write_lock is not None:
            return self._serialised(self._write_engine.begin())
        return (self._write_engine if write else self.engine).begin()

    @asynccontextmanager
    async def _serialised(self, inner: AbstractAsyncContextManager[Any]) -> AsyncIterator[Any]:
        assert self._write_lock is not None
        async with self._write_lock, inner as handle:
            yield handle

    async def sqlite_run(self, work: Callable[[sqlite3.Connection], T], write: bool) -> T:
        """``work(connection)`` as one transaction on the bare ``sqlite3`` driver, on its own
        thread (storage/drivers.py); a ``write`` in turn with every other write of this
        process."""
        if self._write_lock is None:
            raise RuntimeError(f"sqlite_run on a {self.dialect} database")
        if self._sqlite_writer is None:
            self._sqlite_writer = SqliteWriteThread(self._sqlite_path, SQLITE_BUSY_TIMEOUT_MS)
        try:
            if not write:
                return await self._sqlite_writer.run(work, write=False)
            async with self._write_lock:
                return await self._sqlite_writer.run(work)
        except sqlite3.Error as exc:  # e.g. "database is locked": as SQLAlchemy reports it
            raise DBAPIError.instance(None, None, exc, sqlite3.Error) from exc

    async def postgres_run(self, work: Callable[[Any], Awaitable[T]], write: bool) -> T:
        """``await work(asyncpg_connection)`` on a pooled connection, in one transaction
        when it ``write``s (storage/drivers.py)."""
        if self.dialect != "postgresql":
            raise RuntimeError(f"postgres_run on a {self.dialect} database")
        return await postgres_transaction(self.engine, work, write)

    def insert(self, table: Table) -> postgresql.Insert | sqlite.Insert:
        """A dialect INSERT with ``on_conflict_do_nothing`` / ``on_conflict_do_update``.

        Both engines spell upserts the same way, which keeps get-or-create race-free
        without catching IntegrityError.
        """
        if self.dialect == "sqlite":
            return sqlite.insert(table)
        return postgresql.insert(table)

    async def dispose(self) -> None:
        writer, self._sqlite_writer = self._sqlite_writer, None
        if writer is not None:
            await writer.close()
        await self.engine.dispose()

    # A caller's asyncio.timeout would wait for the driver, as wait_for does (see below).
    async def ping(self, timeout: float = PING_TIMEOUT) -> bool:  # noqa: ASYNC109
        """True when a ``SELECT 1`` answers within ``timeout`` seconds (readiness).

        Returns within ``timeout`` whatever the database does. A probe that has not answered
        by then is cancelled and left to end in the background: waiting for it to end (as
        ``asyncio.wait_for`` does) waits for the driver to let go of a hung connection, which
        takes seconds more (SQLAlchemy's terminate gives asyncpg's graceful close 2 s,
        shielded from the cancellation). It is cancelled exactly once: a second cancellation
        lands inside that shield and leaves the shielded close's exception unretrieved.
        """
        probe = asyncio.create_task(self._select_one(), name="database ping")
        try:
            done, _ = await asyncio.wait({probe}, timeout=timeout)
        finally:
            if not probe.done():  # timed out, or the caller itself was cancelled
                self._abandon(probe)
        if not done:
            log.warning("database ping timed out after %.1f s", timeout)
            return False
        try:
            probe.result()
        except Exception as exc:  # readiness must answer, not raise
            log.warning("database ping failed: %s", exc.__class__.__name__)
            return False
        return True

    async def _select_one(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    def _abandon(self, probe: asyncio.Task[None]) -> None:
        probe.cancel()
        self._abandoned_pings.add(probe)  # the loop keeps only a weak reference to a task
        probe.add_done_callback(self._abandoned_ping_ended)

    def _abandoned_ping_ended(self, probe: asyncio.Task[None]) -> None:
        self._abandoned_pings.discard(probe)
        # Retrieved here, once: nobody else is waiting for it any more.
        exc = None if probe.cancelled() else probe.exception()
        if exc is not None:
            log.debug("an abandoned database ping ended: %s", exc.__class__.__name__)


def json_dumps(value: Any) -> str:
    """JSON columns: orjson (several times faster than ``json``), the same JSON values.

    What orjson refuses (non-string keys, integers past 64 bits) goes through ``json``,
    so anything the stdlib could store is still stored. NaN and infinities become null,
    as on the wire (``websocket.protocol.encode``), so a replayed event equals the live one.
    """
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value)


def json_loads(text: str | bytes) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        # Rows written by the stdlib may hold NaN or Infinity, which orjson rejects.
        return json.loads(text)


def _pop_our_params(url: URL) -> tuple[URL, str | None, str]:
    """The URL without ``?schema=`` and ``?application_name=``, and their values."""
    schema = url.query.get(SCHEMA_PARAM)
    if schema is not None and (not isinstance(schema, str) or not _SCHEMA_NAME.match(schema)):
        raise ValueError(
            f"invalid ?schema= value {schema!r}: use one plain identifier "
            "(letters, digits, underscore; not starting with a digit)"
        )
    name = url.query.get(APPLICATION_NAME_PARAM, APPLICATION_NAME)
    if not isinstance(name, str):
        raise ValueError(f"give ?{APPLICATION_NAME_PARAM}= once, not {len(name)} times")
    return url.difference_update_query(OUR_PARAMS), schema, name


def _ensure_sqlite_parent_dir(url: URL) -> None:
    database = url.database or ""
    # In-memory and URI-style databases have no directory to create.
    if database in ("", ":memory:") or database.startswith("file:"):
        return
    # A one-off mkdir when the app starts, before any event loop work depends on it.
    Path(database).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)


def _replace_closed_connections(engine: AsyncEngine) -> None:
    """The pre-ping without the round trip (see the module docstring)."""

    @event.listens_for(engine.sync_engine, "checkout")
    def _on_checkout(_dbapi: Any, record: ConnectionPoolEntry, _proxy: Any) -> None:
        driver = record.driver_connection
        if driver is not None and driver.is_closed():
            # The pool discards this one and checks out (or opens) another.
            raise DisconnectionError("the database closed this pooled connection")


def _recognise_lost_connections(engine: AsyncEngine) -> None:
    """Every lost connection is one to SQLAlchemy (see the module docstring).

    SQLAlchemy's asyncpg dialect counts an error as a disconnect only once the connection's
    socket is closed, and gives the errors of a connection closed mid-statement the
    generic ``DBAPIError``: the connection went back to the pool for the next request to
    fail on, and the error answered 500.
    """

    @event.listens_for(engine.sync_engine, "handle_error")
    def _on_error(context: ExceptionContext) -> BaseException | None:
        error = context.original_exception  # the dialect's; the driver's is its ``orig``
        if not context.is_disconnect and is_disconnect(getattr(error, "orig", None) or error):
            context.is_disconnect = True  # SQLAlchemy drops it, and the pool's older ones
        raised = context.sqlalchemy_exception
        if not context.is_disconnect or not isinstance(raised, DBAPIError):
            return None
        if isinstance(raised, OperationalError | InterfaceError):
            return None  # connection_invalidated is set already
        return OperationalError(
            raised.statement, None, error, hide_parameters=True, connection_invalidated=True
        )


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` is a database connection lost under its work, which did not commit
    unless the loss came at the commit (see the module docstring)."""
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def _configure_sqlite(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        # Take BEGIN away from the sqlite3 driver (it would defer it and skip it for
        # SELECTs); _on_begin below emits the right BEGIN for each transaction.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            for pragma in SQLITE_PRAGMAS:
                cursor.execute(pragma)
        finally:
            cursor.close()

    # Every statement through aiosqlite is a round trip to its worker thread (a cursor, the
    # statement, closing the cursor: three), so a one-event append was twelve of them.
    # BEGIN goes straight to the driver (one trip), and a connection going back to the
    # pool is rolled back only if it is still in a transaction (after a commit, the usual
    # case, there is nothing to undo). bench/storage.py: about 15% less CPU per append.

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(WRITE_OPTION, False)
        statement = "BEGIN IMMEDIATE" if immediate else "BEGIN"
        pooled = conn.connection
        driver = pooled.driver_connection
        assert driver is not None, "a pooled connection always has its driver connection"
        try:
            await_only(driver.execute(statement))
        except sqlite3.Error as exc:  # e.g. "database is locked": as SQLAlchemy reports it
            raise OperationalError(statement, (), exc) from exc
        except BaseException:
            # Cancelled while BEGIN waits on the driver's thread (for another process's
            # write lock): it still runs there, after the connection is back in the pool.
            pooled.info[_BEGIN_UNFINISHED] = True
            raise

    @event.listens_for(sync_engine, "reset")
    def _on_reset(
        dbapi_connection: Any, record: ConnectionPoolEntry, state: PoolResetState
    ) -> None:
        if state.terminate_only or not state.asyncio_safe:
            return
        # The rollback queues behind an unfinished BEGIN on the driver's thread, so it
        # undoes that BEGIN too.
        if (
            record.info.pop(_BEGIN_UNFINISHED, False)
            or dbapi_connection.driver_connection.in_transaction
        ):
            dbapi_connection.rollback()


def rowcount(result: Result[Any]) -> int:
    """The rows an INSERT, UPDATE or DELETE touched (SQLAlchemy types ``execute`` as
    returning a ``Result``; for those statements it is a ``CursorResult``)."""
    assert isinstance(result, CursorResult), type(result)
    return result.rowcount
