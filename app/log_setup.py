"""One-line JSON logs on stderr.

Every record becomes ``{"ts", "level", "logger", "message", **extra}``; pass context with
``logger.info("turn finished", extra={"chat_id": ..., "turn_id": ...})``. Tokens never reach
the log: ``?token=`` query values (uvicorn's access log prints full paths), ``sb_…`` API
tokens, ``Bearer …`` values and extra fields with secret-looking names are redacted. Lines
a client can cause at will are warnings, at most one per minute (``ClientNoiseFilter``).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

REDACTED = "[redacted]"

# Attributes every LogRecord has; anything else on a record came in through ``extra=``.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys()
    | {"message", "asctime", "color_message"}  # uvicorn's ANSI-coloured copy of the message
)
_SECRET_KEYS = ("token", "authorization", "password", "secret", "cookie", "api_key")
_SECRET_PATTERNS = (
    # Query parameters that carry credentials: our tokens, and the OAuth callback's
    # one-time code and state (uvicorn's access log prints full paths).
    (
        re.compile(r"([?&](?:token|access_token|code|state)=)[^&\s\"']+", re.IGNORECASE),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"(\bBearer\s+)[^\s\"']+", re.IGNORECASE), rf"\1{REDACTED}"),
    (re.compile(r"\bsb_[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),  # OpenAI-style API keys
)
_HANDLER_NAME = "switchboard-json"
QUIET_AT_DEBUG = (
    "aiosqlite",
    "asyncpg",
    "sqlalchemy.engine",
    "websockets",
    "httpcore",
    "httpx",
    "openai",
    "redis",
)


def redact(text: str) -> str:
    """Remove anything that looks like a credential from a log message."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in _SECRET_KEYS)


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return redact(value) if isinstance(value, str) else value
    if isinstance(value, datetime):
        return value.isoformat()
    return redact(repr(value))


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        for key, value in vars(record).items():
            if key in _STANDARD_ATTRS or key.startswith("_") or key in entry:
                continue
            entry[key] = REDACTED if _is_secret_key(key) else _jsonable(value)
        if record.exc_info:
            entry["exc"] = redact(self.formatException(record.exc_info))
        if record.stack_info:
            entry["stack"] = redact(self.formatStack(record.stack_info))
        return json.dumps(entry, ensure_ascii=False)


# uvicorn's lines that any client can cause, once per connection: the start of each message.
CLIENT_NOISE = (
    # A text frame that is not UTF-8 (logged at ERROR with a traceback; the socket is
    # closed with 1007 whatever the log says).
    "Invalid UTF-8 sequence received from client",
)
CLIENT_NOISE_INTERVAL = 60.0  # seconds between two lines of one kind


class ClientNoiseFilter(logging.Filter):
    """Turns the lines of ``CLIENT_NOISE`` into warnings, at most one per interval each.

    They say a client sent something bad, not that the server failed, and a client that
    reconnects in a loop could otherwise write one error (and a traceback) per connection:
    a full disk, or a page to whoever is on call. Each line that does get through says
    how many were left out since the last one.
    """

    def __init__(
        self, interval: float = CLIENT_NOISE_INTERVAL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.interval = interval
        self.clock = clock
        self._next_line: dict[str, float] = {}
        self._left_out: Counter[str] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        kind = next((kind for kind in CLIENT_NOISE if message.startswith(kind)), None)
        if kind is None:
            return True
        now = self.clock()
        if kind in self._next_line and now < self._next_line[kind]:
            self._left_out[kind] += 1
            return False
        self._next_line[kind] = now + self.interval
        left_out = self._left_out.pop(kind, 0)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        # uvicorn's traceback only shows the client's bytes failing to decode.
        record.exc_info = record.exc_text = None
        record.msg = kind + (f" ({left_out} more since the last such line)" if left_out else "")
        record.args = ()
        return True


def _install_filter(logger: logging.Logger, log_filter: logging.Filter) -> None:
    """Add ``log_filter``, replacing one of its class added before (configure twice)."""
    for existing in list(logger.filters):
        if type(existing) is type(log_filter):
            logger.removeFilter(existing)
    logger.addFilter(log_filter)


def configure_logging(level: str = "INFO") -> None:
    """Send every log record (ours and uvicorn's) to stderr as JSON. Safe to call twice."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() == _HANDLER_NAME:
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level.upper())
    # uvicorn installs its own plain-text handlers unless told otherwise; route its
    # records through the root handler so every line has the same shape.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
    # On the logger itself (uvicorn's protocols log there), not on a handler: a handler
    # added later, or a test capturing records, sees the same lines.
    _install_filter(logging.getLogger("uvicorn.error"), ClientNoiseFilter())
    # Alembic announces every plugin it loads at INFO; its "Running upgrade" lines stay.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    # At DEBUG these print SQL parameters and raw frames, i.e. prompts, conversation
    # items and tokens; our own DEBUG lines are enough to debug a turn.
    for name in QUIET_AT_DEBUG:
        logging.getLogger(name).setLevel(max(logging.INFO, root.level))
    # SQLAlchemy's INFO is its statement echo (every SQL with its parameters): WARNING,
    # which is also what SQLAlchemy itself defaults to.
    logging.getLogger("sqlalchemy.engine").setLevel(max(logging.WARNING, root.level))
