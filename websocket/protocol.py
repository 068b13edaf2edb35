"""Wire protocol v1.1: client frames and their parsing, with the server events, envelope
and serialiser they answer with (docs/protocol.md §2, §3, §5).

Client frames are defined here: only the socket reads them. Server events are defined in
``wire.events`` (storage writes some of them) and re-exported, so this module is the whole
protocol in one import.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from wire.events import (
    CHAT_ID,
    CHAT_ID_PATTERN,
    ENVELOPE_KEYS,
    MAX_APPROVAL_ID,
    MAX_CLIENT_MESSAGE_ID,
    TS_PATTERN,
    EndStatus,
    ErrorCode,
    Event,
    encode,
    envelope,
    now_ts,
    server_event_adapter,
    server_event_json_schema,
    validate_server_event,
)

MAX_APPROVAL_REASON = 500
# Seqs are 32-bit columns (PostgreSQL INTEGER); a larger after_seq could never match and
# would make the database query fail, so it is refused like any other bad value.
MAX_SEQ = 2**31 - 1
DEFAULT_MAX_PROMPT_CHARS = 32_000
MAX_ATTACHMENTS = 10
MAX_ATTACHMENT_ID = 64


class FrameError(ValueError):
    """A client frame that cannot be accepted; ``message`` is short and safe to send back."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --------------------------------------------------------------------------- client frames


class _Frame(BaseModel):
    # strict: 5 is not a prompt text and true is not a seq; extra: unknown fields are errors.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class PromptFrame(_Frame):
    type: Literal["prompt"] = "prompt"
    # The upper bound is a setting (``max_prompt_chars``), checked by ``parse_client_frame``;
    # the schema shows the default.
    text: str = Field(min_length=1, json_schema_extra={"maxLength": DEFAULT_MAX_PROMPT_CHARS})
    client_message_id: str | None = Field(
        default=None, min_length=1, max_length=MAX_CLIENT_MESSAGE_ID
    )
    # Ids of attachments uploaded into this chat (POST /api/chats/{id}/attachments), in
    # the order to show them; optional, so a v1 prompt is still a prompt.
    attachments: list[Annotated[str, Field(min_length=1, max_length=MAX_ATTACHMENT_ID)]] | None = (
        Field(default=None, max_length=MAX_ATTACHMENTS)
    )


class CancelFrame(_Frame):
    type: Literal["cancel"] = "cancel"
    turn_id: str | None = None


class ResumeFrame(_Frame):
    type: Literal["resume"] = "resume"
    after_seq: int = Field(ge=0, le=MAX_SEQ)


class PingFrame(_Frame):
    type: Literal["ping"] = "ping"


class ApprovalFrame(_Frame):
    type: Literal["approval"] = "approval"
    approval_id: str = Field(min_length=1, max_length=MAX_APPROVAL_ID)
    decision: Literal["approve", "reject"]
    reason: str | None = Field(default=None, max_length=MAX_APPROVAL_REASON)


# Project frames (docs/protocol.md, "Regenerate, edit and continue"): each starts a turn
# made from the chat's turn ``turn_id``; idempotent by ``client_message_id`` like a prompt.
# (No shared FieldInfo between models: pydantic may change one as it builds a model.)
MAX_TURN_ID = 64


class RegenerateFrame(_Frame):
    type: Literal["regenerate"] = "regenerate"
    turn_id: str = Field(min_length=1, max_length=MAX_TURN_ID)
    client_message_id: str | None = Field(
        default=None, min_length=1, max_length=MAX_CLIENT_MESSAGE_ID
    )


class EditFrame(_Frame):
    type: Literal["edit"] = "edit"
    turn_id: str = Field(min_length=1, max_length=MAX_TURN_ID)
    # Bounded like a prompt's text (``max_prompt_chars``, checked by parse_client_frame).
    prompt: str = Field(min_length=1, json_schema_extra={"maxLength": DEFAULT_MAX_PROMPT_CHARS})
    client_message_id: str | None = Field(
        default=None, min_length=1, max_length=MAX_CLIENT_MESSAGE_ID
    )


class ContinueFrame(_Frame):
    type: Literal["continue"] = "continue"
    turn_id: str = Field(min_length=1, max_length=MAX_TURN_ID)
    client_message_id: str | None = Field(
        default=None, min_length=1, max_length=MAX_CLIENT_MESSAGE_ID
    )


ActionFrame: TypeAlias = RegenerateFrame | EditFrame | ContinueFrame

ClientFrame: TypeAlias = Annotated[
    PromptFrame
    | CancelFrame
    | ResumeFrame
    | PingFrame
    | ApprovalFrame
    | RegenerateFrame
    | EditFrame
    | ContinueFrame,
    Field(discriminator="type"),
]
CLIENT_FRAME_ADAPTER: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)

_FRAME_MODELS: dict[str, type[_Frame]] = {
    "prompt": PromptFrame,
    "cancel": CancelFrame,
    "resume": ResumeFrame,
    "ping": PingFrame,
    "approval": ApprovalFrame,
    "regenerate": RegenerateFrame,
    "edit": EditFrame,
    "continue": ContinueFrame,
}
_FRAME_TYPES = "prompt, cancel, resume, ping, approval, regenerate, edit or continue"

# What a field must be, phrased for a human; used instead of pydantic's error text.
_FIELD_RULES: dict[tuple[str, str], str] = {
    ("prompt", "client_message_id"): f"must be a string of 1..{MAX_CLIENT_MESSAGE_ID} characters",
    ("prompt", "attachments"): f"must be a list of at most {MAX_ATTACHMENTS} attachment ids "
    f"(strings of 1..{MAX_ATTACHMENT_ID} characters), or null",
    ("cancel", "turn_id"): "must be a string or null",
    ("resume", "after_seq"): "must be an integer >= 0",
    ("approval", "approval_id"): f"must be a string of 1..{MAX_APPROVAL_ID} characters",
    ("approval", "decision"): 'must be "approve" or "reject"',
    ("approval", "reason"): f"must be a string of at most {MAX_APPROVAL_REASON} characters, "
    "or null",
    **{
        (kind, field): rule
        for kind in ("regenerate", "edit", "continue")
        for field, rule in (
            ("turn_id", "must be a string of 1..64 characters"),
            ("client_message_id", f"must be a string of 1..{MAX_CLIENT_MESSAGE_ID} characters"),
        )
    },
}


def _frame_error(frame_type: str, exc: ValidationError, max_prompt_chars: int) -> FrameError:
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else ""
    if err["type"] == "extra_forbidden":
        return FrameError(f"unknown field '{field}' in {frame_type} frame")
    if err["type"] == "missing":
        return FrameError(f"{frame_type}.{field} is required")
    if (frame_type, field) in (("prompt", "text"), ("edit", "prompt")):
        if err["type"] == "string_type":
            return FrameError(f"{frame_type}.{field} must be a string")
        return FrameError(f"{frame_type}.{field} must be 1..{max_prompt_chars} characters")
    if err["type"] == "less_than_equal":
        return FrameError(f"{frame_type}.{field} must be at most {err['ctx']['le']}")
    rule = _FIELD_RULES.get((frame_type, field), "is invalid")
    return FrameError(f"{frame_type}.{field} {rule}")


def parse_client_frame(text: str, *, max_prompt_chars: int) -> ClientFrame:
    """Parse one text frame (PROTOCOL §2). Raises ``FrameError`` with a short message."""
    try:
        data: Any = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        # §2: plain-text clients send the prompt itself.
        data = {"type": "prompt", "text": text}
    except ValueError:
        # Valid JSON, but an integer longer than Python converts (4300 digits): no field
        # takes one, and it is not plain text either.
        raise FrameError("frame holds a number with too many digits") from None
    if not isinstance(data, dict):
        raise FrameError("frame must be a JSON object")
    # Only a \u escape can smuggle in a lone surrogate (the socket layer has checked the
    # UTF-8); such a string can be neither stored, nor echoed in an error, nor sent.
    if "\\u" in text and _has_lone_surrogate(data):
        raise FrameError(
            "frame holds an unpaired surrogate (\\ud800-\\udfff escape); send valid Unicode"
        )
    frame_type = data.get("type")
    if frame_type is None:
        raise FrameError(f"frame needs a 'type' field: {_FRAME_TYPES}")
    model = _FRAME_MODELS.get(frame_type) if isinstance(frame_type, str) else None
    if model is None:
        shown = frame_type if isinstance(frame_type, str) else json.dumps(frame_type)
        raise FrameError(f"unknown frame type '{shown[:40]}'; expected {_FRAME_TYPES}")
    frame = _validate(model, data, max_prompt_chars)
    if isinstance(frame, PromptFrame):
        # The upper bound is a setting, so it is checked here rather than in the model.
        if len(frame.text) > max_prompt_chars:
            raise FrameError(f"prompt.text must be 1..{max_prompt_chars} characters")
        if not frame.text.strip():
            raise FrameError("prompt.text must not be blank")
    if isinstance(frame, EditFrame):
        if len(frame.prompt) > max_prompt_chars:
            raise FrameError(f"edit.prompt must be 1..{max_prompt_chars} characters")
        if not frame.prompt.strip():
            raise FrameError("edit.prompt must not be blank")
    # Every field, not only the stored ones: an approval id is looked up in the database.
    unstorable = unstorable_at(data)
    if unstorable is not None:
        where, problem = unstorable
        raise FrameError(f"{frame_type}.{where} {problem}")
    return frame  # type: ignore[return-value]


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _unstorable(text: str) -> str | None:
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "must not contain NUL (U+0000) characters"
    return "must not contain unpaired surrogates (\\ud800-\\udfff escapes)"


def unstorable_at(value: Any) -> tuple[str, str] | None:
    """Where decoded JSON (or a model dump) holds a character no database can store, and
    what the field must not contain; None when there is none. The place is a path
    (``input[0].content[1].text``; an object's own for a key, "" for ``value`` itself).

    PostgreSQL text and JSON cannot hold U+0000, and an unpaired surrogate is not even
    UTF-8: the edges (frames, REST and Open Responses bodies) refuse both on every engine
    alike, before anything is written. A loop, not recursion, like ``_has_lone_surrogate``.
    """
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str):
            problem = _unstorable(item)
            if problem is not None:
                return path, problem
        elif isinstance(item, dict):
            for key in item:
                problem = _unstorable(str(key))
                if problem is not None:
                    return path, problem
            # Reversed onto the stack, so the first field in the body is the one named.
            pending.extend(
                (f"{path}.{key}" if path else str(key), child)
                for key, child in reversed(item.items())
            )
        elif isinstance(item, list | tuple):
            pending.extend(
                (f"{path}[{index}]", child) for index, child in reversed(list(enumerate(item)))
            )
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a decoded JSON value holds a surrogate code point (json.loads pairs valid
    escapes into one character, so any left is unpaired), in a key or a string.

    A loop, not recursion: json.loads accepts nesting nearly as deep as the stack.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item) is not None:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _validate(model: type[_Frame], data: dict[str, Any], max_prompt_chars: int) -> _Frame:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _frame_error(str(data["type"]), exc, max_prompt_chars) from None


# --------------------------------------------------------------------------- exports

__all__ = [
    "CHAT_ID",
    "CHAT_ID_PATTERN",
    "CLIENT_FRAME_ADAPTER",
    "MAX_APPROVAL_ID",
    "MAX_CLIENT_MESSAGE_ID",
    "TS_PATTERN",
    "Event",
    "ENVELOPE_KEYS",
    "server_event_adapter",
    "ActionFrame",
    "ApprovalFrame",
    "CancelFrame",
    "ClientFrame",
    "ContinueFrame",
    "EditFrame",
    "RegenerateFrame",
    "EndStatus",
    "ErrorCode",
    "FrameError",
    "PingFrame",
    "PromptFrame",
    "ResumeFrame",
    "client_frame_json_schema",
    "encode",
    "envelope",
    "now_ts",
    "parse_client_frame",
    "server_event_json_schema",
    "unstorable_at",
    "validate_server_event",
]


def client_frame_json_schema() -> dict[str, Any]:
    return CLIENT_FRAME_ADAPTER.json_schema()
