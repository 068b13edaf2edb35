"""Server events: one pydantic model per event type, the envelope and the one serialiser
(docs/protocol.md §3, §5).

An event model holds what follows the envelope (``type, chat_id, turn_id, seq, ts``); the
code that emits an event builds its model, the writer puts the envelope around
``payload()`` and ``encode`` serialises it. The models also generate the validators of
whole wire events (tests, docs examples, replay checks) and the published JSON schema, so
adding an event type is one class here, the one place that emits it and one UI handler.
"""

from __future__ import annotations

import builtins
import re
import time
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, Union

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    create_model,
    model_validator,
)

from wire.tool_response import ToolResponseData

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
Decision: TypeAlias = Literal["approved", "rejected", "expired", "superseded"]
# Project frames after the shared contract (docs/protocol.md, "Regenerate, edit and
# continue"): how a turn was made from an earlier one, and why such a frame was refused.
TurnAction: TypeAlias = Literal["regenerate", "edit", "continue"]
ActionRefusal: TypeAlias = Literal[
    "turn_not_found",
    "turn_running",
    "awaiting_approval",
    "not_latest_turn",
    "turn_superseded",
    "not_stopped",
    "not_editable",
]
# Whose event it is: a turn's (turn_id set), the connection's (turn_id null), or either
# (an ``error``: a turn's failure, or a refused frame).
Scope: TypeAlias = Literal["turn", "connection", "either"]

MAX_CLIENT_MESSAGE_ID = 64
MAX_APPROVAL_ID = 64
MAX_SUGGESTIONS = 4
# RFC 3339, UTC, milliseconds, 'Z' (exactly what ``now_ts`` produces).
TS_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"
CHAT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
CHAT_ID = re.compile(CHAT_ID_PATTERN)
# Envelope keys, in wire order; payload keys follow them.
ENVELOPE_KEYS = ("type", "chat_id", "turn_id", "seq", "ts")
ENVELOPE_KEY_SET = frozenset(ENVELOPE_KEYS)


class Usage(BaseModel):
    """Tokens and model requests of a turn (``end_of_stream.usage``)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    total_tokens: int = Field(default=0, ge=0)
    requests: int = Field(default=0, ge=0)


ZERO_USAGE: dict[str, int] = Usage().model_dump()


class Event(BaseModel):
    """The part of a server event after its envelope. Subclasses name their ``type``;
    ``persisted`` False means never stored and sent with ``seq: null``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    type: ClassVar[str]
    persisted: ClassVar[bool] = True
    scope: ClassVar[Scope] = "turn"
    by_type: ClassVar[dict[str, builtins.type[Event]]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.type in Event.by_type:
            raise TypeError(f"two event models for {cls.type!r}")
        Event.by_type[cls.type] = cls

    def payload(self) -> dict[str, Any]:
        """The JSON-ready payload, as stored and sent after the envelope."""
        return self.model_dump()

    def enveloped(
        self, chat_id: str, turn_id: str | None, seq: int | None, ts: str | None = None
    ) -> dict[str, Any]:
        """The whole wire event, ready for ``encode``."""
        return envelope(self.type, chat_id, turn_id, seq, self.payload(), ts)


class AttachmentSummary(BaseModel):
    """An attachment as a prompt shows it (docs/protocol.md, "Attachments")."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    content_type: str
    size: int
    width: int | None = None
    height: int | None = None


class UserPromptEvent(Event):
    type = "user_prompt"
    text: str = Field(min_length=1)
    client_message_id: str | None = Field(max_length=MAX_CLIENT_MESSAGE_ID)
    # Project fields (docs/protocol.md, "Regenerate, edit and continue"), absent unless
    # set: the turn was started by that frame, from ``source_turn_id``.
    action: TurnAction | None = None
    source_turn_id: str | None = Field(default=None, min_length=1)
    # The prompt's attachments, in the order sent; absent when it has none (a v1 client
    # that ignores the field sees the same event as before).
    attachments: list[AttachmentSummary] | None = None

    def payload(self) -> dict[str, Any]:
        payload = self.model_dump()
        if self.action is None:
            del payload["action"], payload["source_turn_id"]
        if self.attachments is None:
            del payload["attachments"]
        return payload


class HandoffEvent(Event):
    type = "handoff"
    from_agent: str
    to_agent: str


class AgentUpdatedEvent(Event):
    type = "agent_updated"
    new_agent: str
    name: str
    current_agent: str


class ToolCallEvent(Event):
    type = "tool_call"
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    description: str
    arguments: dict[str, Any]
    current_agent: str


class ToolOutputEvent(Event):
    type = "tool_output"
    call_id: str = Field(min_length=1)
    output: ToolResponseData
    current_agent: str


class LlmResponseDeltaEvent(Event):
    type = "llm_response_delta"
    persisted = False
    delta: str
    current_agent: str

    # One per streamed token: both skip the generic dump and checks (two plain strings,
    # and no key of them can shadow the envelope). bench/streaming.py measures them.
    def payload(self) -> dict[str, Any]:
        return {"delta": self.delta, "current_agent": self.current_agent}

    def enveloped(
        self, chat_id: str, turn_id: str | None, seq: int | None, ts: str | None = None
    ) -> dict[str, Any]:
        return {
            "type": "llm_response_delta",
            "chat_id": chat_id,
            "turn_id": turn_id,
            "seq": seq,
            "ts": ts if ts is not None else now_ts(),
            "delta": self.delta,
            "current_agent": self.current_agent,
        }


class LlmResponseEvent(Event):
    type = "llm_response"
    text: str
    current_agent: str
    # Project fields after the shared contract (docs/protocol.md, "Refusals and cut-off
    # answers"), absent unless set, so a v1 client sees the event it knows: ``refusal``
    # when the text is the model's refusal, ``incomplete_reason`` when the answer was cut
    # off (``max_output_tokens``, ``content_filter``).
    refusal: Literal[True] | None = None
    incomplete_reason: str | None = Field(default=None, max_length=40)

    def payload(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class ErrorEvent(Event):
    type = "error"
    scope = "either"
    code: ErrorCode
    message: str = Field(min_length=1)
    retryable: bool
    # On the refusal of an ``approval`` frame: the approval it was about (docs/protocol.md,
    # "Approval records"); absent otherwise.
    approval_id: str | None = Field(default=None, max_length=MAX_APPROVAL_ID)
    # On the refusal of a ``regenerate``, ``edit`` or ``continue`` frame (docs/protocol.md,
    # "Regenerate, edit and continue"): why, as a code, and the frame's own id.
    refusal: ActionRefusal | None = None
    client_message_id: str | None = Field(default=None, max_length=MAX_CLIENT_MESSAGE_ID)

    def payload(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class EndOfStreamEvent(Event):
    type = "end_of_stream"
    status: EndStatus
    usage: Usage


class SuggestedPromptsEvent(Event):
    type = "suggested_prompts"
    prompts: list[str] = Field(max_length=MAX_SUGGESTIONS)


# What an approval's effect may carry to a card: a summary, not a payload.
MAX_EFFECT_SUMMARY = 300
MAX_EFFECT_FIELDS = 20
MAX_EFFECT_LABEL = 40
MAX_EFFECT_VALUE = 2_000


class EffectField(BaseModel):
    """One labelled line of what an action will do ("To", "mallory@evil.example")."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    label: str = Field(min_length=1, max_length=MAX_EFFECT_LABEL)
    value: str = Field(max_length=MAX_EFFECT_VALUE)


class ApprovalEffect(BaseModel):
    """What an action will do, resolved by its connector before the person is asked
    (docs/protocol.md, "What an approval will do"): a line to read, labelled fields, and
    the plan the tool executes after approval, exactly as resolved here."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    summary: str = Field(min_length=1, max_length=MAX_EFFECT_SUMMARY)
    fields: list[EffectField] = Field(max_length=MAX_EFFECT_FIELDS)
    plan: dict[str, Any]


class ApprovalRequiredEvent(Event):
    type = "approval_required"
    approval_id: str = Field(min_length=1, max_length=MAX_APPROVAL_ID)
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    description: str
    arguments: dict[str, Any]
    current_agent: str
    expires_at: str = Field(pattern=TS_PATTERN)
    # Project field: what the call will do, when its connector resolves it (a reply's
    # recipients, an id's name); absent when the arguments say it all.
    effect: ApprovalEffect | None = None

    def payload(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class ApprovalResolvedEvent(Event):
    type = "approval_resolved"
    approval_id: str = Field(min_length=1, max_length=MAX_APPROVAL_ID)
    call_id: str = Field(min_length=1)
    decision: Decision
    reason: str | None
    # The decision's record (docs/protocol.md, "Approval records"): the user who decided,
    # or null when the server did (expiry, a new prompt), and through what.
    decided_by: str | None = None
    decided_via: str | None = None


class TurnSupersededEvent(Event):
    """The turn (envelope ``turn_id``) was replaced by ``by_turn_id`` (docs/protocol.md,
    "Regenerate, edit and continue"); it stays in the log. Persisted right before the
    new turn's ``user_prompt``, in the same transaction."""

    type = "turn_superseded"
    by_turn_id: str = Field(min_length=1)
    action: Literal["regenerate", "edit"]


class ChatRenamedEvent(Event):
    """A person renamed the chat: told to every socket on it. Ephemeral: a client reads
    the title again from the REST API."""

    type = "chat_renamed"
    persisted = False
    scope = "connection"
    title: str = Field(min_length=1)


class PongEvent(Event):
    type = "pong"
    persisted = False
    scope = "connection"


# --------------------------------------------------------------------------- whole events


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="after")
    def _seq_iff_turn(self) -> _Wire:
        turn_id, seq = getattr(self, "turn_id"), getattr(self, "seq")  # noqa: B009
        if turn_id is None and seq is not None:
            raise ValueError("an event without a turn_id has no seq")
        return self


def _wire_model(event: type[Event]) -> type[BaseModel]:
    """The whole wire event of ``event``: envelope fields (their rules set by its scope and
    whether it is persisted), then its own fields."""
    turn: Any = {
        "turn": (str, Field(min_length=1)),
        "connection": (None, ...),
        "either": (str | None, Field(min_length=1)),
    }[event.scope]
    if not event.persisted:
        seq: Any = (None, ...)
    elif event.scope == "turn":
        seq = (int, Field(ge=1))
    else:
        seq = (int | None, Field(ge=1))
    validators: dict[str, Any] = {}
    if event.scope == "either":
        validators["_both_or_neither"] = model_validator(mode="after")(_both_or_neither)
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        event.__name__,
        __base__=_Wire,
        __validators__=validators,
        type=(Literal[event.type], ...),
        chat_id=(str, Field(pattern=CHAT_ID_PATTERN)),
        turn_id=turn,
        seq=seq,
        ts=(str, Field(pattern=TS_PATTERN)),
        **{name: (info.annotation, info) for name, info in event.model_fields.items()},
    )
    return model


def _both_or_neither(self: Any) -> Any:
    if (self.turn_id is None) != (self.seq is None):
        raise ValueError("an error has both turn_id and seq (turn) or neither (connection)")
    return self


def server_event_adapter() -> TypeAdapter[Any]:
    """The validator of whole wire events, one member per event model: built on first use
    (and again if a model was defined since), so it always covers every event type."""
    global _adapter, _adapter_covers
    if _adapter is None or _adapter_covers != len(Event.by_type):
        models = tuple(_wire_model(event) for event in Event.by_type.values())
        union: Any = Annotated[Union[models], Field(discriminator="type")]  # noqa: UP007
        _adapter, _adapter_covers = TypeAdapter(union), len(Event.by_type)
    return _adapter


_adapter: TypeAdapter[Any] | None = None
_adapter_covers = 0


def validate_server_event(event: dict[str, Any]) -> BaseModel:
    """Check a whole wire event against its model; raises ``ValidationError``."""
    validated: BaseModel = server_event_adapter().validate_python(event)
    return validated


def server_event_json_schema() -> dict[str, Any]:
    return server_event_adapter().json_schema()


# --------------------------------------------------------------------------- hot path


_second: tuple[int, str] = (-1, "")  # the last whole second formatted, and its text
_MILLIS = tuple(f".{ms:03d}Z" for ms in range(1000))  # each ts's tail, formatted once


def now_ts() -> str:
    """Current time as RFC 3339 UTC with milliseconds, e.g. ``2025-01-31T12:00:00.123Z``.

    Called for every event, streamed tokens included: the date and time of day are
    formatted once a second and the milliseconds looked up (0.4 µs a call against 1.5 µs
    for ``datetime.isoformat``; the lookup halves what formatting them cost).
    """
    global _second
    now = time.time()
    whole = int(now)
    if whole != _second[0]:
        _second = (whole, datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return _second[1] + _MILLIS[int((now - whole) * 1000)]


def envelope(
    type: str,
    chat_id: str,
    turn_id: str | None,
    seq: int | None,
    payload: dict[str, Any],
    ts: str | None = None,
) -> dict[str, Any]:
    """The wire dict: envelope keys first (type, chat_id, turn_id, seq, ts), then the payload."""
    if not ENVELOPE_KEY_SET.isdisjoint(payload):
        # A payload key would silently overwrite the envelope: a programming error.
        raise ValueError(
            f"payload must not contain envelope keys: {sorted(ENVELOPE_KEY_SET & payload.keys())}"
        )
    return {
        "type": type,
        "chat_id": chat_id,
        "turn_id": turn_id,
        "seq": seq,
        "ts": ts if ts is not None else now_ts(),
        **payload,
    }


def encode(event: dict[str, Any]) -> str:
    """The one serialiser for everything sent on a socket: compact UTF-8 JSON, keys in order.

    NaN and Infinity become ``null`` (they are not JSON and a browser would reject the frame);
    a value JSON cannot represent raises ``TypeError``. bench/serialise.py: orjson is ~2x
    faster than pydantic-core and ~6x faster than stdlib json, with the same output.
    """
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
