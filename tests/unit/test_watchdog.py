"""The event-loop watchdog (app/watchdog.py) on the test's own, real event loop.

The loop is blocked the way a careless tool blocks it: a plain ``time.sleep`` loop on the
loop's thread. That sleep is the thing under test; the test itself waits on conditions
(a warning logged, the watchdog having looked N more times), never on the clock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest

from app.settings import SettingsError, load_settings
from app.watchdog import LoopWatchdog, watch_loop
from tests.support.logs import CapturedLogs, capture_logs
from tests.support.waiting import DEADLINE, wait_until

SECRET = "sk-watchdog-0123456789abcdef"


def blocking_vendor_call(done: Callable[[], bool]) -> None:
    """What a sync SDK call in an async tool does to the loop: holds it until ``done()``."""
    api_key = SECRET  # a local the stack must not show
    deadline = time.monotonic() + DEADLINE
    while not done():
        assert time.monotonic() < deadline, f"the loop was held {DEADLINE} s ({len(api_key)})"
        time.sleep(0.005)


def warnings(logs: CapturedLogs) -> list[logging.LogRecord]:
    return [r for r in logs.at_least(logging.WARNING) if r.name == "switchboard.watchdog"]


def recoveries(logs: CapturedLogs) -> list[logging.LogRecord]:
    return [
        r
        for r in logs.records
        if r.name == "switchboard.watchdog" and r.getMessage().startswith("event loop turning")
    ]


async def test_a_blocked_loop_is_reported_once_with_the_blocking_function() -> None:
    with capture_logs(logging.INFO) as logs, watch_loop(0.2, interval=0.02) as watchdog:
        assert watchdog is not None and watchdog.running
        blocking_vendor_call(lambda: bool(warnings(logs)))
        # Still blocked for ten more looks: still one warning.
        looked = watchdog.checks
        blocking_vendor_call(lambda: watchdog.checks >= looked + 10)
        assert len(warnings(logs)) == 1, logs.describe(warnings(logs))
        await wait_until(lambda: recoveries(logs), what="the end of the episode logged")

        # A second episode is a second warning.
        blocking_vendor_call(lambda: len(warnings(logs)) == 2)

    first = warnings(logs)[0]
    message = first.getMessage()
    assert message.startswith("event loop blocked for "), message
    stack = [line.strip() for line in message.split("(innermost last):\n", 1)[1].splitlines()]
    names = [line.rsplit(" ", 1)[1] for line in stack]
    # Innermost last: the blocking function (past it, at most the check it was making),
    # called by the test.
    at = names.index("blocking_vendor_call")
    assert at >= len(names) - 4, stack
    assert stack[at].startswith(f"{__file__}:"), stack
    assert names[at - 1] == "test_a_blocked_loop_is_reported_once_with_the_blocking_function"
    # Code locations only: no locals, no source lines.
    assert SECRET not in message and "api_key" not in message and "time.sleep" not in message
    assert first.blocked_seconds >= 0.2  # type: ignore[attr-defined]
    assert recoveries(logs)[0].levelno == logging.INFO
    assert not watchdog.running


async def test_a_responsive_loop_gets_no_warning() -> None:
    with capture_logs(logging.INFO) as logs, watch_loop(1.0, interval=0.02) as watchdog:
        assert watchdog is not None
        # The loop keeps turning (wait_until sleeps asynchronously) while it looks 25 times.
        await wait_until(lambda: watchdog.checks >= 25, what="25 looks at the heartbeat")
    assert not warnings(logs), logs.describe(warnings(logs))


async def test_stop_ends_the_thread_and_the_heartbeat() -> None:
    watchdog = LoopWatchdog(1.0, interval=0.02)
    watchdog.start()
    thread = next(t for t in threading.enumerate() if t.name == "switchboard-loop-watchdog")
    assert thread.daemon
    watchdog.stop()
    assert not thread.is_alive() and not watchdog.running
    assert watchdog._beat_handle is not None and watchdog._beat_handle.cancelled()
    watchdog.stop()  # twice is fine
    with pytest.raises(RuntimeError, match="already started"):
        watchdog.start()


async def test_threshold_zero_turns_it_off() -> None:
    before = set(threading.enumerate())
    with watch_loop(0) as watchdog:
        assert watchdog is None
        started = [t.name for t in set(threading.enumerate()) - before]
    assert "switchboard-loop-watchdog" not in started


def test_bad_thresholds_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match=r"threshold must be > 0 seconds, got -1"):
        LoopWatchdog(-1)
    with pytest.raises(ValueError, match=r"interval must be > 0 seconds, got 0"):
        LoopWatchdog(1, interval=0)
    with pytest.raises(SettingsError, match="SWITCHBOARD_LOOP_WATCHDOG_SECONDS"):
        load_settings(loop_watchdog_seconds=-0.5)
    assert load_settings().loop_watchdog_seconds == 1.0
    assert load_settings(loop_watchdog_seconds=0).loop_watchdog_seconds == 0
