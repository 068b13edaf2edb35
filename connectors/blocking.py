"""Synchronous client code, run off the event loop: ``connector_tool(..., blocking=True)``.

A vendor SDK built on ``requests`` blocks the thread that calls it; on the event loop that
freezes every socket and request of the server. ``run_blocking`` calls such a function in a
worker thread and awaits its result, so the caller's timeout (``asyncio.timeout``) still
applies to the wait.

Why not ``asyncio.to_thread``: its threads are the loop's default executor, which DNS
look-ups share, and ``asyncio.run`` waits for all of them at exit, so a vendor call that
never returns would hold a slot for good and keep the server from stopping. Here each call
gets a daemon thread, at most ``MAX_BLOCKING_CALLS`` at once per pool; a call past that
waits for a free one (under its timeout). Each connector has a pool of its own (named by
its agent, which ``connector_tool`` knows): a plug-in whose vendor hangs fills its own pool
and no other connector's.

A thread cannot be stopped from outside: when its caller gives up (a timeout, a cancelled
turn) the function runs on to its end in the background, still holding its slot, and
its result is dropped; a log line says when it ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MAX_BLOCKING_CALLS", "run_blocking"]

logger = logging.getLogger("switchboard.connectors.tools")

T = TypeVar("T")

# Per pool (connector): enough for a few slow vendor calls per turn across many turns; a
# limit, so that calls that hang cannot pile up threads without end.
MAX_BLOCKING_CALLS = 16

# Per event loop (an asyncio.Semaphore belongs to one), then per pool.
_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def _slots_of(loop: asyncio.AbstractEventLoop, pool: str) -> asyncio.Semaphore:
    pools = _slots.setdefault(loop, {})
    slots = pools.get(pool)
    if slots is None:
        slots = pools[pool] = asyncio.Semaphore(MAX_BLOCKING_CALLS)
    return slots


async def run_blocking(pool: str, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` in a worker thread of ``pool`` (a connector's, by its agent
    name), with this task's context variables; its result, or its exception raised here."""
    loop = asyncio.get_running_loop()
    slots = _slots_of(loop, pool)
    await slots.acquire()
    result: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()
    what = getattr(func, "__qualname__", type(func).__name__)
    started = time.monotonic()

    def settle(value: T | None, error: BaseException | None) -> None:
        # On the loop's thread, when the function has returned or raised.
        slots.release()
        if result.cancelled():
            logger.info(
                "blocking call %s (%s) ended %.1f s after it started, its caller gone (%s)",
                what,
                pool,
                time.monotonic() - started,
                # The type only: an exception's message may hold secrets.
                "returned" if error is None else f"raised {type(error).__name__}",
            )
        elif error is not None:
            result.set_exception(error)
        else:
            result.set_result(value)  # type: ignore[arg-type]

    def work() -> None:
        try:
            value = context.run(func, *args, **kwargs)
        except BaseException as exc:  # handed to the awaiting task, as an async call would
            outcome: tuple[T | None, BaseException | None] = (None, exc)
        else:
            outcome = (value, None)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:
            pass  # the loop was closed meanwhile: nobody is waiting any more

    try:
        threading.Thread(
            target=work, name=f"switchboard-blocking {what} ({pool})", daemon=True
        ).start()
    except BaseException:
        slots.release()
        raise
    return await result
