"""Plain, frozen records the repositories return: no SQLAlchemy objects leak out.

Timestamps are timezone-aware UTC ``datetime``s; event ``ts`` stays the RFC 3339 string
that was sent on the socket, so a replayed event carries exactly the live ``ts``. (On
PostgreSQL, JSONB does not keep object key order: a replayed payload equals the live one
as JSON, not necessarily byte for byte.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from wire.events import ENVELOPE_KEY_SET, Event, envelope

TurnStatus = Literal["running", "completed", "cancelled", "failed"]


@dataclass(frozen=True)
class UserRecord:
    id: str
    name: str


@dataclass(frozen=True)
class ChatRecord:
    id: str
    user_id: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    last_seq: int
    preview: str | None


@dataclass(frozen=True)
class TurnRecord:
    id: str
    chat_id: str
    client_message_id: str | None
    prompt: str
    status: TurnStatus
    final_text: str | None
    partial_text: str
    usage: dict[str, Any] | None
    created_at: datetime
    finished_at: datetime | None
    user_prompt_seq: int
    # The agent active at the last checkpoint (for the resume delta of a running turn).
    current_agent: str | None = None
    # Running, but waiting for the person's approval: no process runs it (PROTOCOL §3a).
    paused: bool = False
    # The instance running it and until when its lease holds (storage.models.Turn).
    runner: str | None = None
    lease_until: datetime | None = None
    # Lineage (docs/protocol.md "Regenerate, edit and continue"): the turn that replaced
    # this one, and the stopped turn this one continues.
    superseded_by: str | None = None
    continues: str | None = None


@dataclass(frozen=True)
class Lease:
    """An instance's claim on the turns it runs: ``runner`` names the instance, and a
    claim or renewal holds for ``seconds`` from when it is written. Instances compare
    leases with their own clocks, so their clocks must agree to well within ``seconds``
    (NTP does)."""

    runner: str
    seconds: float

    def until(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.seconds)


@dataclass(frozen=True)
class Renewal:
    """What renewing an instance's leases found: the turns it still runs, and those of
    them someone asked to stop."""

    kept: frozenset[str] = field(default_factory=frozenset)
    cancel: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class RunningTurnRef:
    """A turn marked running, and who owns its chat."""

    chat_id: str
    turn_id: str
    user_id: str


@dataclass(frozen=True)
class EventRecord:
    chat_id: str
    seq: int
    turn_id: str | None
    type: str
    payload: dict[str, Any]
    ts: str

    def to_wire(self, include_debug: bool = False) -> dict[str, Any]:
        """The event exactly as the socket sends it (docs/protocol.md §3).

        ``debug_info`` of a tool output is persisted but only shown when asked for; the
        stored payload is never mutated.
        """
        payload = self.payload
        output = payload.get("output")
        if not include_debug and isinstance(output, Mapping) and "debug_info" in output:
            payload = {
                **payload,
                "output": {k: v for k, v in output.items() if k != "debug_info"},
            }
        return envelope(self.type, self.chat_id, self.turn_id, self.seq, payload, self.ts)


@dataclass(frozen=True)
class NewEvent:
    """An event before it is persisted and given its seq."""

    type: str
    turn_id: str | None
    payload: dict[str, Any]
    ts: str

    def __post_init__(self) -> None:
        clash = ENVELOPE_KEY_SET & self.payload.keys()
        if clash:
            # to_wire spreads the payload after the envelope; a clash would corrupt it.
            raise ValueError(
                f"{self.type} event payload must not contain envelope keys {sorted(clash)}"
            )

    @classmethod
    def of(cls, event: Event, turn_id: str | None, ts: str) -> NewEvent:
        return cls(event.type, turn_id, event.payload(), ts)


@dataclass(frozen=True)
class TurnUpdate:
    """Changes to a turn applied with an append; ``None`` leaves a field unchanged.

    Setting a final ``status`` (anything but ``running``) also sets ``finished_at``.
    """

    turn_id: str
    partial_text: str | None = None
    status: TurnStatus | None = None
    final_text: str | None = None
    usage: dict[str, Any] | None = None
    current_agent: str | None = None
    # Model-side items (``conversation_items``) to append in the same transaction, so a
    # turn's history lands together with its ``end_of_stream``.
    items: tuple[dict[str, Any], ...] = ()


ApprovalStatus = Literal["pending", "approved", "rejected", "expired", "superseded"]


@dataclass(frozen=True)
class ApprovalRecord:
    """One approval and, once decided, the record of the decision."""

    id: str
    chat_id: str
    turn_id: str
    call_id: str
    name: str
    description: str
    arguments: dict[str, Any]
    current_agent: str
    status: ApprovalStatus
    reason: str | None
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None = None
    decided_by: str | None = None
    decided_via: str | None = None
    # What the call will do, as resolved before asking (``ApprovalEffect``'s dict).
    effect: dict[str, Any] | None = None


@dataclass(frozen=True)
class PausedRun:
    """A paused turn whose last approval was just decided: what resuming it needs.

    ``state`` is what the turn stored when it paused (the serialised ``RunState`` and its
    unsaved conversation items); ``approvals`` are the decisions of this pause;
    ``after_seq`` the chat's last seq when the pause was claimed.
    """

    chat_id: str
    turn_id: str
    user_id: str
    prompt: str
    prompt_seq: int
    state: dict[str, Any]
    approvals: tuple[ApprovalRecord, ...]
    after_seq: int


@dataclass(frozen=True)
class ConnectedAccount:
    connector: str
    meta: dict[str, Any]
    connected_at: datetime


def user_from_row(row: Any) -> UserRecord:
    return UserRecord(id=row.id, name=row.name)


def chat_from_row(row: Any) -> ChatRecord:
    return ChatRecord(
        id=row.id,
        user_id=row.user_id,
        title=row.title,
        created_at=row.created_at,
        updated_at=row.updated_at,
        last_seq=row.last_seq,
        preview=row.preview,
    )


def turn_from_row(row: Any) -> TurnRecord:
    return TurnRecord(
        id=row.id,
        chat_id=row.chat_id,
        client_message_id=row.client_message_id,
        prompt=row.prompt,
        status=row.status,
        final_text=row.final_text,
        partial_text=row.partial_text,
        usage=row.usage,
        created_at=row.created_at,
        finished_at=row.finished_at,
        user_prompt_seq=row.user_prompt_seq,
        current_agent=row.current_agent,
        runner=row.runner,
        lease_until=row.lease_until,
        superseded_by=getattr(row, "superseded_by", None),
        continues=getattr(row, "continues", None),
    )


def approval_from_row(row: Any) -> ApprovalRecord:
    return ApprovalRecord(
        id=row.id,
        chat_id=row.chat_id,
        turn_id=row.turn_id,
        call_id=row.call_id,
        name=row.name,
        description=row.description,
        arguments=row.arguments,
        current_agent=row.current_agent,
        status=row.status,
        reason=row.reason,
        created_at=row.created_at,
        expires_at=row.expires_at,
        decided_at=row.decided_at,
        decided_by=row.decided_by,
        decided_via=row.decided_via,
        effect=row.effect,
    )


def event_from_row(row: Any) -> EventRecord:
    return EventRecord(
        chat_id=row.chat_id,
        seq=row.seq,
        turn_id=row.turn_id,
        type=row.type,
        payload=row.payload,
        ts=row.ts,
    )
