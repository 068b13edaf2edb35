"""``websocket.lean``: asyncio.Queue's and asyncio.Event's behaviour, no storage when idle."""

from __future__ import annotations

import asyncio

import pytest

from websocket.lean import LeanEvent, LeanQueue


async def test_queue_is_fifo_and_frees_its_storage_once_empty() -> None:
    queue: LeanQueue[int] = LeanQueue()
    assert queue.empty() and queue.qsize() == 0
    for item in range(3):
        queue.put_nowait(item)
    assert queue.qsize() == 3 and not queue.empty()
    assert [await queue.get(), queue.get_nowait(), await queue.get()] == [0, 1, 2]
    assert queue.empty()
    assert queue._items is None and queue._getters is None  # an idle queue holds nothing
    with pytest.raises(asyncio.QueueEmpty):
        queue.get_nowait()


async def test_getters_are_woken_in_order_one_item_each() -> None:
    queue: LeanQueue[str] = LeanQueue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)  # both are waiting
    assert queue._getters is not None and len(queue._getters) == 2
    queue.put_nowait("a")
    queue.put_nowait("b")
    assert [await first, await second] == ["a", "b"]
    assert queue._getters is None and queue._items is None


async def test_a_cancelled_getter_loses_no_item() -> None:
    queue: LeanQueue[str] = LeanQueue()
    waiting = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert queue._getters is None  # forgotten, not left to be woken
    queue.put_nowait("kept")
    assert await queue.get() == "kept"


async def test_a_getter_cancelled_after_its_wake_up_passes_it_on() -> None:
    queue: LeanQueue[str] = LeanQueue()
    woken = asyncio.create_task(queue.get())
    other = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.put_nowait("only")  # wakes ``woken``...
    woken.cancel()  # ...which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await woken
    assert await asyncio.wait_for(other, 5) == "only"


async def test_event_wakes_every_waiter_and_stays_set_until_cleared() -> None:
    event = LeanEvent()
    assert not event.is_set()
    waiters = [asyncio.create_task(event.wait()) for _ in range(2)]
    cancelled = asyncio.create_task(event.wait())
    await asyncio.sleep(0)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    event.set()
    assert await asyncio.gather(*waiters) == [True, True]
    assert event._waiters is None
    assert await event.wait() is True  # set: returns at once
    event.clear()
    assert not event.is_set()
    assert LeanEvent(True).is_set()
