"""The bare drivers under the engine, for the few transactions every turn runs many times.

SQLAlchemy costs more CPU than the database for a turn's small writes: through aiosqlite
every statement is several round trips to its worker thread, and on both engines building
and binding a statement outweighs running it (bench/storage.py). The turn writer's
appends, and a few other statements of every turn, run as plain SQL on the driver
(storage/plain_sql.py); everything else stays on SQLAlchemy.

- SQLite: ``SqliteWriteThread`` runs a whole transaction as one function on its own
  thread and connection: one hop from the event loop per transaction instead of one per
  statement. A write takes the ``Database``'s write lock, as SQLAlchemy's write sessions
  do, so the process still has one writer at a time (see storage/engine.py).
- PostgreSQL: ``postgres_transaction`` runs a function on a pooled connection's asyncpg
  connection, which caches its prepared statements. A pooled connection the server dropped without the
  client noticing fails its first statement; that transaction is retried once on a fresh
  connection (nothing of it was written): the pre-ping paid only on error. Reads run
  without a transaction: under READ COMMITTED it would not make them more consistent, and
  BEGIN and COMMIT are two round trips.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

T = TypeVar("T")
log = logging.getLogger("switchboard.storage")

# Every SQLite connection's settings (with its busy timeout).
SQLITE_PRAGMAS = (
    "PRAGMA foreign_keys = ON",
    # Readers and the single writer no longer block each other.
    "PRAGMA journal_mode = WAL",
    # In WAL mode NORMAL never corrupts and survives a process crash (kill -9); it only
    # gives up the last commits on a power loss, and saves an fsync per commit, which is
    # most of the cost of persisting a turn event by event.
    "PRAGMA synchronous = NORMAL",
)


class SqliteWriteThread:
    """One SQLite connection on its own thread, for transactions run as functions.

    A plain queue and ``call_soon_threadsafe``, not ``run_in_executor``: a third less CPU
    and a quarter of the latency per hop on this path.
    """

    def __init__(self, path: str, busy_timeout_ms: int) -> None:
        if path in ("", ":memory:") or path.startswith("file:"):
            raise ValueError(
                "the turn writer needs a SQLite database file: an in-memory database is "
                "private to one connection"
            )
        self._path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="sqlite-writer", daemon=True)
        self._thread.start()

    async def run(self, work: Callable[[sqlite3.Connection], T], write: bool = True) -> T:
        """``work(connection)`` in a transaction on the thread, committed when it returns,
        rolled back if it raises. ``write``: ``BEGIN IMMEDIATE`` (the caller holds the
        database's write lock), else a plain ``BEGIN``: a read, which never waits (WAL)."""
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put((work, write, done))
        return await done

    async def close(self) -> None:
        """Finish the queued transactions, close the connection, end the thread."""
        self._jobs.put(None)
        await asyncio.to_thread(self._thread.join)

    def _serve(self) -> None:
        connection: sqlite3.Connection | None = None
        while (job := self._jobs.get()) is not None:
            work, write, done = job
            try:
                if connection is None:  # here, so a failure to open reaches the caller
                    connection = self._connect()
                outcome: tuple[bool, Any] = (True, self._transaction(connection, work, write))
            except BaseException as exc:
                outcome = (False, exc)
            try:
                done.get_loop().call_soon_threadsafe(_settle, done, *outcome)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass
        if connection is not None:
            connection.close()

    @staticmethod
    def _transaction(
        connection: sqlite3.Connection, work: Callable[[sqlite3.Connection], T], write: bool
    ) -> T:
        connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            result = work(connection)
            connection.commit()
        except BaseException:
            # Also after a failed COMMIT: the next job must not find a transaction open.
            if connection.in_transaction:
                connection.rollback()
            raise
        return result

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: the driver never opens transactions by itself;
        # _transaction says BEGIN IMMEDIATE (the write lock up front, no upgrade).
        connection = sqlite3.connect(
            self._path, timeout=self._busy_timeout_ms / 1000, isolation_level=None
        )
        for pragma in SQLITE_PRAGMAS:
            connection.execute(pragma)
        return connection


_Job = tuple[Callable[[sqlite3.Connection], Any], bool, "asyncio.Future[Any]"]


def _settle(done: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if done.cancelled():  # its caller was cancelled; the transaction ran all the same
        return
    if ok:
        done.set_result(value)
    else:
        done.set_exception(value)


# The server ends the session after an error of these severities (PostgreSQL's docs,
# "Message Severity Levels"): pg_terminate_backend, a restart, an idle-session timeout.
_SESSION_ENDING = frozenset({"FATAL", "PANIC"})


def is_disconnect(exc: BaseException) -> bool:
    """Whether ``exc``, raised by asyncpg, means that its connection is gone or can no
    longer be used, so that it must be dropped.

    asyncpg says so in several ways (by name: asyncpg is imported only where PostgreSQL is
    used): a SQLSTATE of class 08 (``ConnectionDoesNotExistError``, "connection was closed
    in the middle of operation"), the server's own FATAL error (``AdminShutdownError``),
    "connection is closed", or an ``InternalClientError`` such as "cannot switch to state
    15; another operation (2) is in progress": the server's FATAL error came while the
    connection sat idle in the pool, before its socket closed, and left the protocol in
    a state nothing can follow.
    """
    if isinstance(exc, ConnectionError):
        return True
    sqlstate = getattr(exc, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate.startswith("08"):
        return True
    if (getattr(exc, "severity_en", None) or getattr(exc, "severity", None)) in _SESSION_ENDING:
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return "InternalClientError" in names or (
        "InterfaceError" in names and "connection is closed" in str(exc)
    )


async def postgres_transaction(
    engine: AsyncEngine, work: Callable[[Any], Awaitable[T]], write: bool = True
) -> T:
    """``await work(asyncpg_connection)`` in a transaction on a pooled connection.

    Committed if it returns, rolled back if it raises. A connection found gone before the
    commit is dropped from the pool and the whole transaction runs once more on another
    (nothing of it was written); a failed commit is never retried (it may have happened).
    A connection lost again, or at the commit, raises SQLAlchemy's ``OperationalError``
    with ``connection_invalidated`` set, as a lost connection does under SQLAlchemy.

    Not ``write``: the statements run as they are, without BEGIN and COMMIT (two round
    trips less). Under READ COMMITTED every statement reads its own snapshot either way,
    so a transaction would make a read no more consistent.
    """
    for attempt in (1, 2):
        async with engine.connect() as pooled:
            driver = (await pooled.get_raw_connection()).driver_connection
            assert driver is not None, "a pooled connection always has its driver connection"
            transaction = driver.transaction() if write else None
            try:
                if transaction is not None:
                    await transaction.start()
                result = await work(driver)
            except BaseException as exc:
                # A read has no transaction to roll back: its connection, perhaps cut off
                # mid-statement, is in doubt all the same.
                if transaction is None or not await _rolled_back(transaction):
                    await pooled.invalidate()  # never lend a connection in doubt again
                if not is_disconnect(exc):
                    raise
                if attempt == 1:
                    log.warning("database connection lost (%s); retrying", type(exc).__name__)
                    continue
                raise _lost(exc) from exc
            if transaction is None:
                return result
            try:
                await transaction.commit()
            except BaseException as exc:
                await pooled.invalidate()
                if is_disconnect(exc):
                    raise _lost(exc) from exc
                raise
            return result
    raise AssertionError("unreachable")


def _lost(exc: BaseException) -> OperationalError:
    return OperationalError(None, None, exc, connection_invalidated=True)


async def _rolled_back(transaction: Any) -> bool:
    try:
        await transaction.rollback()
    except Exception:
        return False
    return True
