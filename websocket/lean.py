"""A queue and an event that cost next to nothing while nobody uses them.

An idle socket holds two queues (uvicorn's inbound one, the hub's outbound one) and an
event (uvicorn's ``writable``). ``asyncio.Queue`` allocates three deques and an
``asyncio.Event`` (a fourth) up front, ``asyncio.Event`` one: about 760 bytes each, some
6.8 KiB of a socket's ~36 KiB that sit empty for as long as the socket is idle. These
allocate their storage when something waits or is queued and free it once empty.

Only what those users call is here: ``put_nowait``/``get``/``get_nowait``/``qsize``/
``empty`` and ``set``/``clear``/``is_set``/``wait``. Both keep asyncio's semantics for
several waiters and for a waiter cancelled just after it was woken.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class LeanQueue(Generic[T]):
    """An unbounded FIFO queue, for ``asyncio.Queue``'s non-blocking put and async get."""

    __slots__ = ("_items", "_getters")

    def __init__(self) -> None:
        self._items: deque[T] | None = None
        self._getters: list[asyncio.Future[None]] | None = None

    def qsize(self) -> int:
        return len(self._items) if self._items is not None else 0

    def empty(self) -> bool:
        return not self._items

    def put_nowait(self, item: T) -> None:
        if self._items is None:
            self._items = deque()
        self._items.append(item)
        self._wake_one()

    def get_nowait(self) -> T:
        items = self._items
        if not items:
            raise asyncio.QueueEmpty
        item = items.popleft()
        if not items:
            self._items = None  # an empty deque still holds a 64-slot block
        return item

    def clear(self) -> None:
        """Drop every queued item (the waiting getters keep waiting)."""
        self._items = None

    async def get(self) -> T:
        while not self._items:
            getter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            if self._getters is None:
                self._getters = [getter]
            else:
                self._getters.append(getter)
            try:
                await getter
            except BaseException:
                self._forget(getter)
                # Woken for an item, then cancelled: hand the item's wake-up on.
                if getter.done() and not getter.cancelled() and self._items:
                    self._wake_one()
                raise
        return self.get_nowait()

    def _wake_one(self) -> None:
        getters = self._getters
        while getters:
            getter = getters.pop(0)
            if not getter.done():
                getter.set_result(None)
                break
        if not getters:
            self._getters = None

    def _forget(self, getter: asyncio.Future[None]) -> None:
        if self._getters is not None and getter in self._getters:
            self._getters.remove(getter)
            if not self._getters:
                self._getters = None


class LeanEvent:
    """``asyncio.Event``: ``wait`` returns once the flag is set."""

    __slots__ = ("_value", "_waiters")

    def __init__(self, value: bool = False) -> None:
        self._value = value
        self._waiters: list[asyncio.Future[bool]] | None = None

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if self._value:
            return
        self._value = True
        waiters, self._waiters = self._waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(True)

    def clear(self) -> None:
        self._value = False

    async def wait(self) -> bool:
        if self._value:
            return True
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = [waiter]
        else:
            self._waiters.append(waiter)
        try:
            return await waiter
        finally:
            if self._waiters is not None and waiter in self._waiters:
                self._waiters.remove(waiter)
                if not self._waiters:
                    self._waiters = None
