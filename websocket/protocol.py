"""Wire protocol v1.1: client frames, server events and the one serialiser (docs/protocol.md §2, §3, §5).

The pydantic models describe every frame and event exactly; they are used to parse client
frames, to validate server events in tests and to publish JSON schema. The hot path (one
event per streamed token) never builds a model: it builds plain dicts with ``envelope`` and
serialises them with ``encode``.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeAlias

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

# --------------------------------------------------------------------------- shared types

ErrorCode: TypeAlias = Literal[
    "invalid_request",
    "turn_in_progress",
    "unauthorized",
    "forbidden",
    "not_found",
    "rate_limited",
    "account_needed",
    "tool_error",
    "tool_timeout",
    "model_error",
    "model_unavailable",
    "server_error",
]

EndStatus: TypeAlias = Literal["completed", "cancelled", "failed"]

DEFAULT_MAX_PROMPT_CHARS = 32_000
MAX_CLIENT_MESSAGE_ID = 64
MAX_APPROVAL_ID = 64
MAX_APPROVAL_REASON = 500
# Seqs are 32-bit columns (PostgreSQL INTEGER); a larger after_seq could never match and
# would make the database query fail, so it is refused like any other bad value.
MAX_SEQ = 2**31 - 1

# RFC 3339, UTC, milliseconds, 'Z' (exactly what ``now_ts`` produces).
TS_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"
CHAT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"

# Envelope keys, in wire order; payload keys follow them.
ENVELOPE_KEYS = ("type", "chat_id", "turn_id", "seq", "ts")
_ENVELOPE_KEY_SET = frozenset(ENVELOPE_KEYS)


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


ClientFrame: TypeAlias = Annotated[
    PromptFrame | CancelFrame | ResumeFrame | PingFrame | ApprovalFrame,
    Field(discriminator="type"),
]
CLIENT_FRAME_ADAPTER: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)

_FRAME_MODELS: dict[str, type[_Frame]] = {
    "prompt": PromptFrame,
    "cancel": CancelFrame,
    "resume": ResumeFrame,
    "ping": PingFrame,
    "approval": ApprovalFrame,
}
_FRAME_TYPES = "prompt, cancel, resume, ping or approval"

# What a field must be, phrased for a human; used instead of pydantic's error text.
_FIELD_RULES: dict[tuple[str, str], str] = {
    ("prompt", "client_message_id"): f"must be a string of 1..{MAX_CLIENT_MESSAGE_ID} characters",
    ("cancel", "turn_id"): "must be a string or null",
    ("resume", "after_seq"): "must be an integer >= 0",
    ("approval", "approval_id"): f"must be a string of 1..{MAX_APPROVAL_ID} characters",
    ("approval", "decision"): 'must be "approve" or "reject"',
    ("approval", "reason"): f"must be a string of at most {MAX_APPROVAL_REASON} characters, "
    "or null",
}


def _frame_error(frame_type: str, exc: ValidationError, max_prompt_chars: int) -> FrameError:
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else ""
    if err["type"] == "extra_forbidden":
        return FrameError(f"unknown field '{field}' in {frame_type} frame")
    if err["type"] == "missing":
        return FrameError(f"{frame_type}.{field} is required")
    if (frame_type, field) == ("prompt", "text"):
        if err["type"] == "string_type":
            return FrameError("prompt.text must be a string")
        return FrameError(f"prompt.text must be 1..{max_prompt_chars} characters")
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


# --------------------------------------------------------------------------- server events


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class DisplayHint(_Strict):
    type: Literal["text", "markdown", "json", "diff", "link", "card"]
    content: Any


class ToolResponseModel(_Strict):
    """The ToolResponse dict of a ``tool_output`` (connectors.responses.ToolResponse.to_dict)."""

    response_type: str = Field(min_length=1)
    agent_name: str = Field(min_length=1)
    friendly_name: str = Field(min_length=1)
    response: dict[str, Any] | list[Any] | str
    display_response: bool
    display_as: list[DisplayHint] | None = None
    content_chunks: list[dict[str, Any]] | None = None
    error_message: str | None = None
    # Persisted, stripped before sending (EventRecord.to_wire); valid in both forms.
    debug_info: dict[str, Any] | None = None


class Usage(_Strict):
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)
    requests: int = Field(ge=0)


class _Event(_Strict):
    """Envelope of a persisted turn event: turn_id and seq are set."""

    type: str
    chat_id: str = Field(pattern=CHAT_ID_PATTERN)
    turn_id: str = Field(min_length=1)
    seq: int = Field(ge=1)
    ts: str = Field(pattern=TS_PATTERN)


class UserPromptEvent(_Event):
    type: Literal["user_prompt"]
    text: str = Field(min_length=1)
    client_message_id: str | None = Field(max_length=MAX_CLIENT_MESSAGE_ID)


class HandoffEvent(_Event):
    type: Literal["handoff"]
    from_agent: str
    to_agent: str


class AgentUpdatedEvent(_Event):
    type: Literal["agent_updated"]
    new_agent: str
    name: str
    current_agent: str


class ToolCallEvent(_Event):
    type: Literal["tool_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    description: str
    arguments: dict[str, Any]
    current_agent: str


class ToolOutputEvent(_Event):
    type: Literal["tool_output"]
    call_id: str = Field(min_length=1)
    output: ToolResponseModel
    current_agent: str


class LlmResponseDeltaEvent(_Event):
    type: Literal["llm_response_delta"]
    seq: None  # type: ignore[assignment]  # ephemeral: never numbered
    delta: str
    current_agent: str


class LlmResponseEvent(_Event):
    type: Literal["llm_response"]
    text: str
    current_agent: str


class ErrorEvent(_Event):
    type: Literal["error"]
    # Connection-level errors (bad frame, turn_in_progress) have neither turn nor seq.
    turn_id: str | None = Field(min_length=1)  # type: ignore[assignment]
    seq: int | None = Field(ge=1)  # type: ignore[assignment]
    code: ErrorCode
    message: str = Field(min_length=1)
    retryable: bool
    # On the refusal of an ``approval`` frame: the approval it was about (docs/protocol.md,
    # "Approval records"); absent otherwise.
    approval_id: str | None = Field(default=None, max_length=MAX_APPROVAL_ID)

    @model_validator(mode="after")
    def _seq_iff_turn(self) -> ErrorEvent:
        if (self.turn_id is None) != (self.seq is None):
            raise ValueError("an error has both turn_id and seq (turn) or neither (connection)")
        return self


class EndOfStreamEvent(_Event):
    type: Literal["end_of_stream"]
    status: EndStatus
    usage: Usage


class SuggestedPromptsEvent(_Event):
    type: Literal["suggested_prompts"]
    prompts: list[str] = Field(max_length=4)


class ApprovalRequiredEvent(_Event):
    type: Literal["approval_required"]
    approval_id: str = Field(min_length=1, max_length=MAX_APPROVAL_ID)
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    description: str
    arguments: dict[str, Any]
    current_agent: str
    expires_at: str = Field(pattern=TS_PATTERN)


class ApprovalResolvedEvent(_Event):
    type: Literal["approval_resolved"]
    approval_id: str = Field(min_length=1, max_length=MAX_APPROVAL_ID)
    call_id: str = Field(min_length=1)
    decision: Literal["approved", "rejected", "expired", "superseded"]
    reason: str | None
    # The decision's record (docs/protocol.md, "Approval records"): the user who decided,
    # or null when the server did (expiry, a new prompt), and through what.
    decided_by: str | None = None
    decided_via: str | None = None


class PongEvent(_Event):
    type: Literal["pong"]
    turn_id: None  # type: ignore[assignment]
    seq: None  # type: ignore[assignment]


ServerEvent: TypeAlias = Annotated[
    UserPromptEvent
    | HandoffEvent
    | AgentUpdatedEvent
    | ToolCallEvent
    | ToolOutputEvent
    | LlmResponseDeltaEvent
    | LlmResponseEvent
    | ErrorEvent
    | EndOfStreamEvent
    | SuggestedPromptsEvent
    | PongEvent
    | ApprovalRequiredEvent
    | ApprovalResolvedEvent,
    Field(discriminator="type"),
]
SERVER_EVENT_ADAPTER: TypeAdapter[ServerEvent] = TypeAdapter(ServerEvent)

# Event types that are never persisted and carry ``seq: null``.
EPHEMERAL_TYPES = frozenset({"llm_response_delta", "pong"})


def validate_server_event(event: dict[str, Any]) -> BaseModel:
    """Check a wire event against its model (tests, debugging); raises ``ValidationError``."""
    return SERVER_EVENT_ADAPTER.validate_python(event)


def client_frame_json_schema() -> dict[str, Any]:
    return CLIENT_FRAME_ADAPTER.json_schema()


def server_event_json_schema() -> dict[str, Any]:
    return SERVER_EVENT_ADAPTER.json_schema()


# --------------------------------------------------------------------------- hot path


def now_ts() -> str:
    """Current time as RFC 3339 UTC with milliseconds, e.g. ``2025-01-31T12:00:00.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def envelope(
    type: str,
    chat_id: str,
    turn_id: str | None,
    seq: int | None,
    payload: dict[str, Any],
    ts: str | None = None,
) -> dict[str, Any]:
    """The wire dict: envelope keys first (type, chat_id, turn_id, seq, ts), then the payload."""
    if not _ENVELOPE_KEY_SET.isdisjoint(payload):
        # A payload key would silently overwrite the envelope: a programming error.
        raise ValueError(
            f"payload must not contain envelope keys: {sorted(_ENVELOPE_KEY_SET & payload.keys())}"
        )
    return {
        "type": type,
        "chat_id": chat_id,
        "turn_id": turn_id,
        "seq": seq,
        "ts": ts if ts is not None else now_ts(),
        **payload,
    }


def _encode_orjson(event: dict[str, Any]) -> str:
    try:
        return orjson.dumps(event).decode()
    except orjson.JSONEncodeError:
        pass
    # Rare: non-str keys (json and pydantic-core stringify them). The option costs ~40%,
    # so it is only the retry.
    try:
        return orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError as exc:
        raise TypeError(str(exc)) from None


# bench/serialise.py: pydantic-core is ~3x faster than stdlib json and orjson ~2x faster
# again, with the same compact UTF-8 JSON.
_encode = _encode_orjson


def encode(event: dict[str, Any]) -> str:
    """The one serialiser for everything sent on a socket: compact UTF-8 JSON, keys in order.

    NaN and Infinity become ``null`` (they are not JSON and a browser would reject the frame);
    a value JSON cannot represent raises ``TypeError``.
    """
    return _encode(event)
