"""A watchdog for the event loop: one warning, with the loop's stack, when it stops turning.

A blocking call on the loop (``time.sleep`` or ``requests`` in an async tool, a long
CPU-bound loop) freezes every socket and request of the process, and the loop cannot
notice it itself: its timeouts only fire once it turns again. So the loop touches a
heartbeat every ``interval`` seconds, and a daemon thread looks at it as often; once the
beat is ``threshold`` seconds late, the thread logs where the loop's thread is (one
``file:line function`` per frame: no locals, no source text, so no secrets) and how long
it has been stuck. One warning per episode: the next needs the loop to have beaten again
(which is logged too, with how long the episode lasted).

When a connector tool is on that stack (``connectors.tool_frames``: the tool functions
``connector_tool`` registered), the warning names it and its connector, and ``on_stall``
is called with both (the app counts ``switchboard_loop_stalls_total{connector, tool}``);
a stall outside any tool is counted with both empty.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import FrameType

from prometheus_client import CollectorRegistry, Counter

from connectors.tool_frames import tool_in

__all__ = ["LoopStalls", "LoopWatchdog", "OnStall", "loop_stack", "watch_loop"]

logger = logging.getLogger("switchboard.watchdog")

# The innermost frames are where the loop is stuck; the outer ones are uvicorn and asyncio.
MAX_FRAMES = 40
# stop() waits this long at most for the thread, which wakes at once when told to stop.
_JOIN_TIMEOUT = 1.0

# Told of each stall, from the watchdog's thread: (connector, tool), both "" when the loop
# was not in a connector tool.
OnStall = Callable[[str, str], None]


def loop_stack(frame: FrameType | None, limit: int = MAX_FRAMES) -> list[str]:
    """``file:line function`` for each frame from ``frame`` outwards, innermost last (as
    in a traceback), at most ``limit`` of the innermost."""
    lines: list[str] = []
    while frame is not None and len(lines) < limit:
        code = frame.f_code
        lines.append(f"{code.co_filename}:{frame.f_lineno} {code.co_name}")
        frame = frame.f_back
    return lines[::-1]


class LoopWatchdog:
    """Watches the running event loop from a daemon thread; ``start`` and ``stop`` are
    called on the loop's thread."""

    def __init__(
        self, threshold: float, *, interval: float | None = None, on_stall: OnStall | None = None
    ) -> None:
        if not threshold > 0:
            raise ValueError(f"the watchdog threshold must be > 0 seconds, got {threshold!r}")
        if interval is not None and not interval > 0:
            raise ValueError(f"the watchdog interval must be > 0 seconds, got {interval!r}")
        self.threshold = threshold
        # A few looks per threshold, so a block is reported soon after it passes it.
        self.interval = interval if interval is not None else threshold / 4
        # How many times the thread has looked at the heartbeat (tests wait on it).
        self.checks = 0
        self.on_stall = on_stall
        # A tool knows its connector's agent; the app fills in agent -> connector name once
        # the connectors are loaded (an unknown agent is named as it is).
        self.connector_names: Mapping[str, str] = {}
        self._due = 0.0  # when the loop's next heartbeat is due (time.monotonic)
        self._stopping = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._beat_handle: asyncio.TimerHandle | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("this watchdog was already started; make a new one")
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._beat()
        self._thread = threading.Thread(
            target=self._watch, name="switchboard-loop-watchdog", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop the heartbeat and the thread; safe to call twice."""
        self._stopping.set()
        if self._beat_handle is not None:
            self._beat_handle.cancel()
        if self._thread is not None:
            self._thread.join(_JOIN_TIMEOUT)

    def _beat(self) -> None:
        # On the loop: the next beat is due one interval from now, if the loop turns.
        if self._stopping.is_set() or self._loop is None:
            return
        self._due = time.monotonic() + self.interval
        self._beat_handle = self._loop.call_later(self.interval, self._beat)

    def _watch(self) -> None:
        reported: float | None = None  # the due time of the episode already reported
        while not self._stopping.wait(self.interval):
            due = self._due
            if reported is not None and due != reported:
                # The loop beat again: the episode is over (it began about when the
                # missed beat was due, and ended one interval before the new due time).
                logger.info(
                    "event loop turning again after about %.1f s",
                    due - self.interval - reported,
                )
                reported = None
            late = time.monotonic() - due
            if late >= self.threshold and reported is None and self._loop_is_running():
                reported = due
                self._report(late)
            self.checks += 1

    def _loop_is_running(self) -> bool:
        # A loop that is stopped or closed is idle, not blocked.
        loop = self._loop
        return loop is not None and loop.is_running() and not loop.is_closed()

    def _report(self, late: float) -> None:
        frame = sys._current_frames().get(self._loop_thread)
        stack = loop_stack(frame) or ["(the loop's thread has ended)"]
        running = tool_in(frame)
        connector = tool = ""
        where = ""
        if running is not None:
            connector = self.connector_names.get(running.agent, running.agent)
            tool = running.tool
            where = f" in tool {tool} of connector {connector}"
        logger.warning(
            "event loop blocked for %.1f s so far (threshold %.1f s)%s: nothing else runs "
            "until it returns; the loop's thread is at (innermost last):\n  %s",
            late,
            self.threshold,
            where,
            "\n  ".join(stack),
            extra={"blocked_seconds": round(late, 3), "connector": connector, "tool": tool},
        )
        if self.on_stall is not None:
            self.on_stall(connector, tool)


@contextmanager
def watch_loop(
    threshold: float, *, interval: float | None = None, on_stall: OnStall | None = None
) -> Iterator[LoopWatchdog | None]:
    """A watchdog on the running loop for the block (``SWITCHBOARD_LOOP_WATCHDOG_SECONDS``);
    none when ``threshold`` is 0 (turned off)."""
    if threshold == 0:
        yield None
        return
    watchdog = LoopWatchdog(threshold, interval=interval, on_stall=on_stall)
    watchdog.start()
    try:
        yield watchdog
    finally:
        watchdog.stop()


class LoopStalls:
    """``switchboard_loop_stalls_total{connector, tool}`` in the app's registry (``GET
    /metrics``): each stall the watchdog reports, by the connector tool that held the loop;
    both labels empty when it was no connector tool. Its ``count`` is an ``OnStall``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._stalls = Counter(
            "switchboard_loop_stalls",
            "Event-loop stalls past SWITCHBOARD_LOOP_WATCHDOG_SECONDS, by the connector tool "
            "running (empty: none)",
            ["connector", "tool"],
            registry=registry,
        )

    def count(self, connector: str, tool: str) -> None:
        self._stalls.labels(connector, tool).inc()
