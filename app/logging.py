"""One-line JSON logs on stderr.

Every record becomes ``{"ts", "level", "logger", "message", **extra}``; pass context with
``logger.info("turn finished", extra={"chat_id": ..., "turn_id": ...})``. Tokens never reach
the log: ``?token=`` query values (uvicorn's access log prints full paths), ``sb_…`` API
tokens, ``Bearer …`` values and extra fields with secret-looking names are redacted.
"""

from __future__ import annotations

import json
import logging
import re
import sys
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
    (re.compile(r"([?&](?:token|access_token|code|state)=)[^&\s\"']+", re.IGNORECASE),
     rf"\1{REDACTED}"),
    (re.compile(r"(\bBearer\s+)[^\s\"']+", re.IGNORECASE), rf"\1{REDACTED}"),
    (re.compile(r"\bsb_[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),  # OpenAI-style API keys
)
_HANDLER_NAME = "switchboard-json"
QUIET_AT_DEBUG = ("aiosqlite", "asyncpg", "sqlalchemy.engine", "websockets", "httpcore",
                  "httpx", "openai", "redis")


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
    # Alembic announces every plugin it loads at INFO; its "Running upgrade" lines stay.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    # At DEBUG these print SQL parameters and raw frames, i.e. prompts, conversation
    # items and tokens; our own DEBUG lines are enough to debug a turn.
    for name in QUIET_AT_DEBUG:
        logging.getLogger(name).setLevel(max(logging.INFO, root.level))
    # SQLAlchemy's INFO is its statement echo (every SQL with its parameters): WARNING,
    # which is also what SQLAlchemy itself defaults to.
    logging.getLogger("sqlalchemy.engine").setLevel(max(logging.WARNING, root.level))
