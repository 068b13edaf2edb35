"""Every log record an in-process server emits, for tests that assert on them.

uvicorn re-configures its own loggers (``uvicorn``, ``uvicorn.error``) whenever a server is
created, dropping any handler found there, so start capturing after ``serve()`` has begun:
``async with serve(settings) as live: with capture_logs() as logs: …``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

# ``uvicorn`` does not propagate to the root logger; everything else reaches the root.
_LOGGERS = ("", "uvicorn")


class CapturedLogs(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []
        self._seen: set[int] = set()

    def emit(self, record: logging.LogRecord) -> None:
        if id(record) not in self._seen:  # a record can pass both loggers
            self._seen.add(id(record))
            self.records.append(record)

    def at_least(self, level: int) -> list[logging.LogRecord]:
        return [record for record in self.records if record.levelno >= level]

    def errors(self) -> list[logging.LogRecord]:
        return self.at_least(logging.ERROR)

    def describe(self, records: list[logging.LogRecord]) -> str:
        """The records as text, tracebacks included, for an assertion message."""
        formatter = logging.Formatter("%(levelname)s %(name)s: %(message)s")
        return "\n".join(formatter.format(record) for record in records)


@contextmanager
def capture_logs(level: int = logging.DEBUG) -> Iterator[CapturedLogs]:
    """Capture every record at ``level`` or above; the loggers' levels are lowered to it."""
    handler = CapturedLogs()
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        if logger.getEffectiveLevel() > level:
            logger.setLevel(level)
    try:
        yield handler
    finally:
        for logger, previous in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(previous)
