"""A first-come, first-served queue for the PostgreSQL connection pool.

SQLAlchemy's asyncio pool keeps its idle connections in an ``asyncio.Queue``
(``AsyncAdaptedQueue``). A connection put back while transactions are waiting sits in
that queue until the first waiter's task runs again, and any task that asks for one in
the meantime takes it at once ("an item that's already available is taken without
awaiting"); the waiter that lost it goes back to the *end* of the line. Under load that
is unbounded overtaking: with 1,000 turns streaming, hundreds of tasks run between a
connection's return and its waiter's next step, and the running turns (their event
writers, history reads, tools' account lookups) kept taking the connections while the
prompts queued since the start (``EventStore.start_turn``) waited out the pool timeout:
refused prompts, while every transaction was short (bench/concurrency.py, PostgreSQL).

``FairQueue`` hands a returned connection straight to the longest waiter, and a task
that asks while others wait queues behind them, so a transaction waits for the ones
ahead of it, never for ever-newer ones.

Its timeout is a stall detector, not a deadline per waiter: a waiter gives up (the
pool's ``PoolExhausted``) when no connection has come back for ``timeout`` seconds, the
pool then being stuck (a hung database, leaked connections). While connections keep
coming back the line moves and it keeps its place: a waiter that gave up after 30 s in
a long but moving line would only join the end of it again on its retry, and a turn's
writer gives up after three such tries, failing the turn, with the database healthy.

A pool uses it as its ``_queue_class`` (the class SQLAlchemy's ``QueuePool`` builds its
queue from): ``storage.engine._SizedPool``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

from sqlalchemy.util import queue as sqla_queue
from sqlalchemy.util.concurrency import await_only

T = TypeVar("T")


class FairQueue(sqla_queue.AsyncAdaptedQueue[T], Generic[T]):
    """``AsyncAdaptedQueue`` (SQLAlchemy's asyncio pool queue) served in arrival order.

    Invariant: idle items and waiters never coexist. ``put`` gives the item to the first
    waiter that still waits (its future resolved with it, so nobody can take it on the
    way); only with nobody waiting does the item join the idle ones. Called by the pool
    from the event loop's thread only (its greenlets), so no lock is needed.
    """

    def __init__(self, maxsize: int = 0, use_lifo: bool = False) -> None:
        # Not super().__init__: its asyncio.Queue is what this replaces.
        self.maxsize = maxsize
        self.use_lifo = use_lifo
        self._idle: deque[T] = deque()
        self._waiters: deque[asyncio.Future[T]] = deque()
        self.returned = 0  # connections put back so far: the line's progress
        self.kept_waiting = 0  # waits that outlasted ``timeout`` in a line that moved

    def empty(self) -> bool:
        return not self._idle

    def full(self) -> bool:
        return self.maxsize > 0 and len(self._idle) >= self.maxsize

    def qsize(self) -> int:
        return len(self._idle)

    @property
    def waiting(self) -> int:
        """Waiters still waiting (for tests and diagnostics)."""
        return sum(not waiter.done() for waiter in self._waiters)

    def put_nowait(self, item: T) -> None:
        self.returned += 1
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():  # one that timed out or was cancelled is skipped
                waiter.set_result(item)
                return
        if self.full():
            raise sqla_queue.Full()  # the pool closes an overflow connection then
        if self.use_lifo:
            self._idle.appendleft(item)
        else:
            self._idle.append(item)

    def put(self, item: T, block: bool = True, timeout: float | None = None) -> None:
        # Never blocks: a returned connection goes to a waiter, to the idle ones, or
        # (past maxsize) raises Full for the pool to close it.
        self.put_nowait(item)

    def get_nowait(self) -> T:
        if not self._idle:
            raise sqla_queue.Empty()
        return self._idle.popleft()

    def get(self, block: bool = True, timeout: float | None = None) -> T:
        if self._idle:  # nobody waits when some are idle (see the class docstring)
            return self._idle.popleft()
        if not block:
            raise sqla_queue.Empty()
        return await_only(self._wait(within=timeout))

    async def _wait(self, *, within: float | None) -> T:
        """Wait in line until a connection is handed over; ``Empty`` once none has come
        back for ``within`` seconds (see the module docstring)."""
        waiter: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            while True:
                returned = self.returned
                try:
                    async with asyncio.timeout(within):
                        # Shielded: a quiet period ends this wait, not the place in line.
                        return await asyncio.shield(waiter)
                except TimeoutError:
                    if self.returned == returned:
                        raise  # nothing came back: the pool is stuck
                    self.kept_waiting += 1
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                # Given a connection just as the wait ended (timeout or cancel): it is
                # not ours to keep, it goes to the next in line.
                self.put_nowait(waiter.result())
            else:
                waiter.cancel()
                try:
                    self._waiters.remove(waiter)
                except ValueError:
                    pass
            if isinstance(exc, TimeoutError):
                raise sqla_queue.Empty() from None  # the pool turns it into its timeout
            raise
