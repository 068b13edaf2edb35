"""Approvals and paused turns (docs/protocol.md §3a): pausing, deciding, superseding.

Every operation here is one transaction that first locks the chat row, the same lock the
event log takes to hand out seqs, so it is ordered with every other write to the chat on
any number of instances:

- ``pause`` stores the approvals, the paused run and the ``approval_required`` events,
  only while the turn still runs (a turn closed meanwhile is fenced).
- ``decide`` takes the first decision of a pending approval (``UPDATE … WHERE status =
  'pending'``) and writes its ``approval_resolved``; the decision that leaves no approval
  of the pause pending also deletes the paused run and returns it: exactly one caller,
  on one instance, ever gets it, so a tool runs at most once.
- ``expire`` resolves a pending approval past its deadline as ``expired`` (a rejection).
- ``supersede`` ends a paused turn (a new prompt, a cancel): its pending approvals are
  ``superseded``, the turn ``cancelled``.
- ``ask_again`` replaces a pending approval whose effect changed before it was approved:
  the old one is ``superseded`` (``decided_via`` ``changed``), a new one shows the new
  effect, and the pause waits on it instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import Database, rowcount
from storage.errors import ApprovalDecided, ApprovalNotFound, ChatNotFound, TurnFenced
from storage.events import append_events
from storage.models import (
    approvals,
    chats,
    conversation_items,
    paused_turns,
    turns,
    utcnow,
)
from storage.records import (
    ApprovalRecord,
    EventRecord,
    Lease,
    NewEvent,
    PausedRun,
    approval_from_row,
)
from storage.session import answer_unanswered
from wire.events import (
    ZERO_USAGE,
    ApprovalEffect,
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    Decision,
    EndOfStreamEvent,
    Usage,
)

# What the model reads for a call that never ran because its turn was stopped.
NOT_RUN = (
    "Not run: the user stopped this request (or sent a new one) before approving "
    "this call. Nothing was done."
)


@dataclass(frozen=True)
class ApprovalRequest:
    """A tool call the SDK paused on, as the person will see it."""

    id: str
    call_id: str
    name: str
    description: str
    arguments: dict[str, Any]
    current_agent: str
    effect: ApprovalEffect | None = None  # what it will do, resolved before asking


@dataclass(frozen=True)
class Paused:
    """A stored pause: its ``approval_required`` events, and whether someone asked the
    turn to stop before it paused (the caller then ends it: nothing runs to hear it)."""

    events: list[EventRecord]
    cancel_requested: bool = False


@dataclass(frozen=True)
class Decided:
    """The outcome of a decision: its ``approval_resolved`` event, and the paused run when
    this decision was the pause's last (the caller must resume it). ``expired``: the
    approval had expired, so it was resolved as such and the caller's decision refused."""

    event: EventRecord
    owner: str  # the chat's user
    resume: PausedRun | None
    expired: bool = False


def resolved_event(
    approval: ApprovalRecord,
    decision: Decision,
    reason: str | None,
    decided_by: str | None,
    via: str,
) -> ApprovalResolvedEvent:
    return ApprovalResolvedEvent(
        approval_id=approval.id,
        call_id=approval.call_id,
        decision=decision,
        reason=reason,
        decided_by=decided_by,
        decided_via=via,
    )


class ApprovalStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def pause(
        self,
        chat_id: str,
        turn_id: str,
        requests: list[ApprovalRequest],
        state: dict[str, Any],
        usage: dict[str, int],
        expires_at: datetime,
        ts: str,
        *,
        text: str = "",
    ) -> Paused:
        """Store a turn's pause and its ``approval_required`` events, in order; ``text``
        is the turn's answer so far (its final text if the pause is superseded). The turn
        gives up its runner and lease: no process runs a paused turn.

        Raises ``TurnFenced`` when the turn no longer runs (closed by another instance)."""
        now = utcnow()
        expires = _rfc3339(expires_at)
        events = [
            NewEvent.of(
                ApprovalRequiredEvent(
                    approval_id=request.id,
                    call_id=request.call_id,
                    name=request.name,
                    description=request.description,
                    arguments=request.arguments,
                    current_agent=request.current_agent,
                    expires_at=expires,
                    effect=request.effect,
                ),
                turn_id,
                ts,
            )
            for request in requests
        ]
        async with self._db.transaction(write=True) as conn:
            await _lock_chat(conn, chat_id)
            turn = (
                await conn.execute(
                    select(turns.c.status, turns.c.cancel_requested).where(turns.c.id == turn_id)
                )
            ).one_or_none()
            if turn is None or turn.status != "running":
                raise TurnFenced(turn_id)
            records = await append_events(conn, chat_id, events)
            await conn.execute(
                insert(approvals),
                [
                    {
                        "id": request.id,
                        "chat_id": chat_id,
                        "turn_id": turn_id,
                        "call_id": request.call_id,
                        "name": request.name,
                        "description": request.description,
                        "arguments": request.arguments,
                        "effect": request.effect.model_dump() if request.effect else None,
                        "current_agent": request.current_agent,
                        "status": "pending",
                        "reason": None,
                        "created_at": now,
                        "expires_at": expires_at,
                    }
                    for request in requests
                ],
            )
            await conn.execute(
                insert(paused_turns).values(
                    turn_id=turn_id,
                    chat_id=chat_id,
                    created_at=now,
                    state={**state, "approvals": [request.id for request in requests]},
                )
            )
            await conn.execute(
                update(turns)
                .where(turns.c.id == turn_id)
                .values(usage=usage, partial_text=text, runner=None, lease_until=None)
            )
        return Paused(records, bool(turn.cancel_requested))

    async def decide(
        self,
        user_id: str,
        chat_id: str,
        approval_id: str,
        decision: Decision,
        reason: str | None,
        via: str,
        ts: str,
        lease: Lease,
    ) -> Decided:
        """The person's decision (``approved`` | ``rejected``) on a pending approval of
        their chat. Raises ``ApprovalNotFound`` (unknown here, another chat's, another
        user's) or ``ApprovalDecided``; an expired approval is resolved as ``expired``.
        A decision that resumes the turn claims it with ``lease``, in the same
        transaction: the caller's instance runs it from then on."""
        async with self._db.transaction(write=True) as conn:
            try:
                owner = await _lock_chat(conn, chat_id)
            except ChatNotFound:
                raise ApprovalNotFound(approval_id) from None
            approval = await _approval(conn, chat_id, approval_id)
            if owner != user_id or approval is None:
                raise ApprovalNotFound(approval_id)
            if approval.status != "pending":
                raise ApprovalDecided(approval_id, approval.status)
            if approval.expires_at <= utcnow():
                return await _resolve(
                    conn, approval, "expired", None, None, "expiry", ts, owner, lease, expired=True
                )
            return await _resolve(conn, approval, decision, reason, user_id, via, ts, owner, lease)

    async def pending(self, user_id: str, chat_id: str, approval_id: str) -> ApprovalRecord:
        """A pending approval of the user's chat; raises ``ApprovalNotFound`` (unknown, or
        another user's: the same answer) or ``ApprovalDecided``."""
        async with self._db.transaction() as conn:
            owner = await conn.scalar(select(chats.c.user_id).where(chats.c.id == chat_id))
            approval = await _approval(conn, chat_id, approval_id)
        if owner != user_id or approval is None:
            raise ApprovalNotFound(approval_id)
        if approval.status != "pending":
            raise ApprovalDecided(approval_id, approval.status)
        return approval

    async def ask_again(
        self,
        chat_id: str,
        approval_id: str,
        new_id: str,
        effect: ApprovalEffect,
        reason: str,
        ts: str,
    ) -> list[EventRecord]:
        """Replace the pending ``approval_id`` by ``new_id`` showing ``effect`` (what the
        call would do now); the events: its ``approval_resolved`` (``superseded``,
        ``reason``) and the new ``approval_required``. Raises ``ApprovalNotFound`` /
        ``ApprovalDecided`` when it is no longer pending."""
        async with self._db.transaction(write=True) as conn:
            try:
                await _lock_chat(conn, chat_id)
            except ChatNotFound:
                raise ApprovalNotFound(approval_id) from None
            old = await _approval(conn, chat_id, approval_id)
            if old is None:
                raise ApprovalNotFound(approval_id)
            if old.status != "pending":
                raise ApprovalDecided(approval_id, old.status)
            state = await conn.scalar(
                select(paused_turns.c.state).where(paused_turns.c.turn_id == old.turn_id)
            )
            if state is None:
                raise ApprovalDecided(approval_id, "superseded")
            now = utcnow()
            await conn.execute(
                update(approvals)
                .where(approvals.c.id == approval_id)
                .values(status="superseded", reason=reason, decided_at=now, decided_via="changed")
            )
            wire = effect.model_dump()
            await conn.execute(
                insert(approvals).values(
                    id=new_id,
                    chat_id=chat_id,
                    turn_id=old.turn_id,
                    call_id=old.call_id,
                    name=old.name,
                    description=old.description,
                    arguments=old.arguments,
                    effect=wire,
                    current_agent=old.current_agent,
                    status="pending",
                    reason=None,
                    created_at=now,
                    expires_at=old.expires_at,
                )
            )
            waiting = [new_id if i == approval_id else i for i in state.get("approvals", [])]
            await conn.execute(
                update(paused_turns)
                .where(paused_turns.c.turn_id == old.turn_id)
                .values(state={**state, "approvals": waiting})
            )
            asked = ApprovalRequiredEvent(
                approval_id=new_id,
                call_id=old.call_id,
                name=old.name,
                description=old.description,
                arguments=old.arguments,
                current_agent=old.current_agent,
                expires_at=_rfc3339(old.expires_at),
                effect=effect,
            )
            return await append_events(
                conn,
                chat_id,
                [
                    NewEvent.of(
                        resolved_event(old, "superseded", reason, None, "changed"), old.turn_id, ts
                    ),
                    NewEvent.of(asked, old.turn_id, ts),
                ],
            )

    async def due(self, limit: int = 100) -> list[tuple[str, str]]:
        """``(approval_id, chat_id)`` of pending approvals past their ``expires_at``."""
        async with self._db.transaction() as conn:
            rows = (
                await conn.execute(
                    select(approvals.c.id, approvals.c.chat_id)
                    .where(approvals.c.status == "pending", approvals.c.expires_at <= utcnow())
                    .order_by(approvals.c.expires_at)
                    .limit(limit)
                )
            ).all()
        return [(approval_id, chat_id) for approval_id, chat_id in rows]

    async def expire(self, chat_id: str, approval_id: str, ts: str, lease: Lease) -> Decided | None:
        """Resolve one due approval as ``expired``; None if it was decided meanwhile
        (here or elsewhere) or its chat deleted."""
        async with self._db.transaction(write=True) as conn:
            try:
                owner = await _lock_chat(conn, chat_id)
            except ChatNotFound:
                return None
            approval = await _approval(conn, chat_id, approval_id)
            if approval is None or approval.status != "pending" or approval.expires_at > utcnow():
                return None
            return await _resolve(conn, approval, "expired", None, None, "expiry", ts, owner, lease)

    async def supersede(
        self, chat_id: str, turn_id: str, via: str, ts: str
    ) -> list[EventRecord] | None:
        """End a paused turn as ``cancelled`` (a new prompt, a cancel): the events that end
        it, or None when it is not paused (any more)."""
        async with self._db.transaction(write=True) as conn:
            await _lock_chat(conn, chat_id)
            state = await conn.scalar(
                select(paused_turns.c.state).where(paused_turns.c.turn_id == turn_id)
            )
            if state is None:
                return None
            await conn.execute(delete(paused_turns).where(paused_turns.c.turn_id == turn_id))
            turn = (
                await conn.execute(
                    select(turns.c.partial_text, turns.c.usage).where(turns.c.id == turn_id)
                )
            ).one()
            pending = [
                approval_from_row(row)
                for row in await conn.execute(
                    select(approvals)
                    .where(
                        approvals.c.chat_id == chat_id,
                        approvals.c.turn_id == turn_id,
                        approvals.c.status == "pending",
                    )
                    .order_by(approvals.c.created_at, approvals.c.id)
                )
            ]
            now = utcnow()
            if pending:
                await conn.execute(
                    update(approvals)
                    .where(
                        approvals.c.id.in_([a.id for a in pending]), approvals.c.status == "pending"
                    )
                    .values(status="superseded", decided_at=now, decided_via=via)
                )
            usage = turn.usage if turn.usage is not None else dict(ZERO_USAGE)
            new = [
                NewEvent.of(resolved_event(a, "superseded", None, None, via), turn_id, ts)
                for a in pending
            ]
            new.append(
                NewEvent.of(
                    EndOfStreamEvent(status="cancelled", usage=Usage.model_validate(usage)),
                    turn_id,
                    ts,
                )
            )
            records = await append_events(conn, chat_id, new)
            await conn.execute(
                update(turns)
                .where(turns.c.id == turn_id)
                .values(
                    status="cancelled", final_text=turn.partial_text, usage=usage, finished_at=now
                )
            )
            await _keep_history(conn, chat_id, turn_id, state)
        return records

    async def pending_for_user(self, user_id: str) -> list[ApprovalRecord]:
        """The user's pending approvals across chats, oldest first."""
        query = (
            select(approvals)
            .join(chats, chats.c.id == approvals.c.chat_id)
            .where(chats.c.user_id == user_id, approvals.c.status == "pending")
            .order_by(approvals.c.created_at, approvals.c.id)
        )
        async with self._db.transaction() as conn:
            return [approval_from_row(row) for row in await conn.execute(query)]

    async def for_chat(self, chat_id: str) -> list[ApprovalRecord]:
        """Every approval of the chat with its decision, oldest first (the caller has
        checked the chat is the user's)."""
        query = (
            select(approvals)
            .where(approvals.c.chat_id == chat_id)
            .order_by(approvals.c.created_at, approvals.c.id)
        )
        async with self._db.transaction() as conn:
            return [approval_from_row(row) for row in await conn.execute(query)]

    async def get(self, chat_id: str, approval_id: str) -> ApprovalRecord | None:
        async with self._db.transaction() as conn:
            return await _approval(conn, chat_id, approval_id)


# --------------------------------------------------------------------------- helpers


async def _lock_chat(conn: AsyncConnection, chat_id: str) -> str:
    """Lock the chat row (PostgreSQL; SQLite's BEGIN IMMEDIATE already serialises writers)
    and return its owner; raises ``ChatNotFound``."""
    owner = await conn.scalar(
        select(chats.c.user_id).where(chats.c.id == chat_id).with_for_update()
    )
    if owner is None:
        raise ChatNotFound(chat_id)
    return str(owner)


async def _approval(conn: AsyncConnection, chat_id: str, approval_id: str) -> ApprovalRecord | None:
    row = (
        await conn.execute(
            select(approvals).where(approvals.c.id == approval_id, approvals.c.chat_id == chat_id)
        )
    ).one_or_none()
    return approval_from_row(row) if row is not None else None


async def _resolve(
    conn: AsyncConnection,
    approval: ApprovalRecord,
    decision: Decision,
    reason: str | None,
    decided_by: str | None,
    via: str,
    ts: str,
    owner: str,
    lease: Lease,
    *,
    expired: bool = False,
) -> Decided:
    """Record the decision of a pending approval (the chat row is locked) and, if it was
    the pause's last, claim the paused run."""
    await conn.execute(
        update(approvals)
        .where(approvals.c.id == approval.id, approvals.c.status == "pending")
        .values(
            status=decision,
            reason=reason,
            decided_at=utcnow(),
            decided_by=decided_by,
            decided_via=via,
        )
    )
    (event,) = await append_events(
        conn,
        approval.chat_id,
        [
            NewEvent.of(
                resolved_event(approval, decision, reason, decided_by, via), approval.turn_id, ts
            )
        ],
    )
    resume = await _claim_if_done(conn, approval, owner, event.seq, lease)
    return Decided(event, owner, resume, expired)


async def _claim_if_done(
    conn: AsyncConnection, approval: ApprovalRecord, owner: str, last_seq: int, lease: Lease
) -> PausedRun | None:
    state = await conn.scalar(
        select(paused_turns.c.state).where(paused_turns.c.turn_id == approval.turn_id)
    )
    if state is None:
        return None  # not paused (superseded, or resumed by another decision)
    ids = list(state.get("approvals", []))
    decided = [
        approval_from_row(row)
        for row in await conn.execute(select(approvals).where(approvals.c.id.in_(ids)))
    ]
    if len(decided) != len(ids) or any(a.status == "pending" for a in decided):
        return None
    deleted = await conn.execute(
        delete(paused_turns).where(paused_turns.c.turn_id == approval.turn_id)
    )
    if rowcount(deleted) != 1:
        return None
    # Claimed with the pause's end: never a moment when the turn looks orphaned.
    await conn.execute(
        update(turns)
        .where(turns.c.id == approval.turn_id)
        .values(runner=lease.runner, lease_until=lease.until())
    )
    turn = (
        await conn.execute(
            select(turns.c.prompt, turns.c.user_prompt_seq).where(turns.c.id == approval.turn_id)
        )
    ).one()
    order = {approval_id: index for index, approval_id in enumerate(ids)}
    decided.sort(key=lambda a: order[a.id])
    return PausedRun(
        chat_id=approval.chat_id,
        turn_id=approval.turn_id,
        user_id=owner,
        prompt=turn.prompt,
        prompt_seq=turn.user_prompt_seq,
        state=state,
        approvals=tuple(decided),
        after_seq=last_seq,
    )


async def _keep_history(
    conn: AsyncConnection, chat_id: str, turn_id: str, state: dict[str, Any]
) -> None:
    """A stopped paused turn's conversation items, each paused call answered "not run":
    the next turn's model sees what happened."""
    items = answer_unanswered([dict(item) for item in state.get("session", [])], NOT_RUN)
    if items:
        now = utcnow()
        await conn.execute(
            insert(conversation_items),
            [
                {"chat_id": chat_id, "item": item, "created_at": now, "turn_id": turn_id}
                for item in items
            ],
        )


def _rfc3339(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
