"""Text frames that are not UTF-8 (issue 15): closed with 1007, without flooding the log.

uvicorn decodes every text frame before the app sees it; one that is not UTF-8 closes the
socket with 1007 and was logged at ERROR with a traceback, once per connection, so a
client reconnecting in a loop could write as many errors as it liked.
``app.log_setup.configure_logging`` (what ``switchboard serve`` runs) turns those lines into
warnings, at most one per ``CLIENT_NOISE_INTERVAL``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

import pytest
from websockets.exceptions import ConnectionClosedError

from app.log_setup import (
    CLIENT_NOISE_INTERVAL,
    QUIET_AT_DEBUG,
    ClientNoiseFilter,
    configure_logging,
)
from app.settings import Settings
from tests.support.clients import open_client
from tests.support.logs import CapturedLogs, capture_logs
from tests.support.servers import serve

NOT_UTF8 = b'{"type": "ping", "x": "\xff\xfe"}'
ATTEMPTS = 20


@pytest.fixture
def server_logging() -> Iterator[None]:
    """The logging ``switchboard serve`` configures; every logger restored afterwards."""
    # Every logger there is, and those configure_logging may be the first to touch.
    names = {
        *logging.Logger.manager.loggerDict,
        *QUIET_AT_DEBUG,
        "alembic.runtime.plugins",
        "uvicorn",
        "uvicorn.error",
        "uvicorn.access",
    }
    loggers = [logging.getLogger(), *(logging.getLogger(name) for name in names)]
    saved = [
        (logger, logger.level, logger.propagate, list(logger.handlers), list(logger.filters))
        for logger in loggers
    ]
    configure_logging("INFO")
    yield
    for logger, level, propagate, handlers, filters in saved:
        logger.setLevel(level)
        logger.propagate = propagate
        logger.handlers[:] = handlers
        logger.filters[:] = filters


@pytest.mark.parametrize("_migrated_database", ["sqlite"], indirect=True)
async def test_frames_that_are_not_utf8_close_with_1007_and_log_one_warning(
    make_settings: Callable[..., Settings], server_logging: None
) -> None:
    async with serve(make_settings()) as live:
        with capture_logs(logging.INFO) as logs:
            started = time.monotonic()
            for attempt in range(ATTEMPTS):  # one client, reconnecting
                async with open_client(live.ws_url(f"bad-utf8-{attempt}")) as client:
                    await client.connection.send(NOT_UTF8, text=True)
                    with pytest.raises(ConnectionClosedError) as closed:
                        await client.recv()
                    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
            took = time.monotonic() - started
        assert not logs.errors(), logs.describe(logs.errors())
        lines = [record for record in logs.records if "UTF-8" in record.getMessage()]
        # One line per interval (more only if the loop above took longer than one).
        assert 1 <= len(lines) <= 1 + took // CLIENT_NOISE_INTERVAL, logs.describe(lines)
        assert all(record.levelno == logging.WARNING and not record.exc_info for record in lines), (
            logs.describe(lines)
        )


def test_the_next_line_after_the_interval_counts_those_left_out() -> None:
    now = [0.0]  # the filter's clock, in seconds
    logger = logging.getLogger("tests.client_noise")
    logger.propagate = False
    noise = ClientNoiseFilter(interval=60, clock=lambda: now[0])
    logs = CapturedLogs()
    logger.addFilter(noise)
    logger.addHandler(logs)
    try:
        for second in (0, 1, 2, 59.9, 60, 61):
            now[0] = second
            logger.error("Invalid UTF-8 sequence received from client.")
        logger.error("something else")
    finally:
        logger.removeFilter(noise)
        logger.removeHandler(logs)
    assert [(record.levelname, record.getMessage()) for record in logs.records] == [
        ("WARNING", "Invalid UTF-8 sequence received from client"),
        (
            "WARNING",
            "Invalid UTF-8 sequence received from client (3 more since the last such line)",
        ),
        ("ERROR", "something else"),
    ]
