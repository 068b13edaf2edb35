"""Waiting on a condition, never on the clock.

A test that sleeps "long enough" for something to happen fails whenever the machine is busy
and wastes time whenever it is not. Wait for the thing itself instead: an event a fake sets,
a frame the server sends, or, when nothing announces it, a condition polled with a short
interval under a long deadline::

    stored = await wait_until(lambda: stored_events(chat_id), what="the turn's events")

The deadline only bounds how long a broken build takes to fail; a passing test returns as
soon as the condition holds. "Nothing happens" is never waited for: wait for something that
happens after it (a ``pong`` to a later ``ping``, the turn's task ending), then assert.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

# Long enough for any busy CI machine; a test only waits that long when it is going to fail.
DEADLINE = 60.0
POLL_INTERVAL = 0.02


async def wait_until(
    predicate: Callable[[], T | Awaitable[T]],
    *,
    what: str,
    within: float = DEADLINE,
    interval: float = POLL_INTERVAL,
) -> T:
    """Call ``predicate`` (plain or async) until it returns something truthy; return that.

    Raises ``AssertionError`` naming ``what`` (and the last value seen) when ``within``
    seconds pass first.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() >= deadline:
            shown = repr(value)
            shown = shown if len(shown) <= 500 else shown[:500] + "…"
            raise AssertionError(f"waited {within:g} s for {what}; last seen: {shown}")
        await asyncio.sleep(interval)


async def wait_started(
    started: Callable[[], bool], task: asyncio.Task[object], *, what: str, within: float = DEADLINE
) -> None:
    """Wait until an in-process server ``task`` says it has ``started``.

    A task that ended first (a failed start-up) raises its own error, not a timeout.
    """
    await wait_until(lambda: started() or task.done(), what=what, within=within)
    if task.done():
        task.result()  # raises what stopped it
        raise AssertionError(f"{what}: the server stopped before it started")
