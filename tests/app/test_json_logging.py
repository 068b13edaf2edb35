"""JSON log lines, extra fields, and redaction of tokens."""

from __future__ import annotations

import json
import logging

from app.log_setup import JsonFormatter, redact


def record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("switchboard.test", logging.INFO, __file__, 1, message, args, None)
    for key, value in extra.items():
        setattr(rec, key, value)
    return rec


def test_one_json_line_with_extra_fields() -> None:
    line = JsonFormatter().format(record("turn %s finished", "t1", chat_id="c1", turn_id="t1"))
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "turn t1 finished"
    assert entry["level"] == "INFO"
    assert entry["logger"] == "switchboard.test"
    assert entry["ts"].endswith("Z")
    assert entry["chat_id"] == "c1" and entry["turn_id"] == "t1"


def test_tokens_are_redacted() -> None:
    token = "sb_" + "A" * 43
    # uvicorn's access log prints the full path, query string included.
    access = record('%s - "GET /ws/chats/c1?token=%s&after_seq=3 HTTP/1.1" 101', "1.2.3.4", "abc")
    entry = json.loads(JsonFormatter().format(access))
    assert "abc" not in entry["message"] and "after_seq=3" in entry["message"]
    line = JsonFormatter().format(
        record(f"auth with {token}", authorization=f"Bearer {token}", api_token="secret!")
    )
    assert token not in line and "secret!" not in line
    assert redact("Authorization: Bearer xyz.123") == "Authorization: Bearer [redacted]"


def test_exception_traceback_is_one_field() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        rec = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    entry = json.loads(JsonFormatter().format(rec))
    assert "RuntimeError: boom" in entry["exc"]


def test_oauth_callback_codes_and_api_keys_are_redacted() -> None:
    path = "GET /oauth/google/callback?state=s3cr3tstate&code=4/0AbCdEf&scope=mail HTTP/1.1"
    line = redact(path)
    assert "s3cr3tstate" not in line and "4/0AbCdEf" not in line and "scope=mail" in line
    key = "sk-proj-" + "x" * 40
    assert key not in redact(f"calling with {key}")


def test_debug_level_keeps_driver_loggers_quiet() -> None:
    from app.log_setup import QUIET_AT_DEBUG, configure_logging

    root = logging.getLogger()
    before = root.level
    try:
        configure_logging("DEBUG")
        for name in QUIET_AT_DEBUG:
            # SQL parameters and raw frames hold prompts and tokens.
            assert not logging.getLogger(name).isEnabledFor(logging.DEBUG), name
        assert logging.getLogger("switchboard.app").isEnabledFor(logging.DEBUG)
    finally:
        configure_logging(logging.getLevelName(before))
