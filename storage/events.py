"""The per-chat event log and the turns it belongs to.

Sequence numbers: ``chats.last_seq`` holds the highest seq handed out. Each writing
transaction runs ``UPDATE chats SET last_seq = last_seq + n … RETURNING last_seq`` and
uses the n numbers below the returned value. The UPDATE takes the chat row's lock until
commit, so concurrent writers to one chat queue behind each other (PostgreSQL) or behind
the database write lock (SQLite, ``BEGIN IMMEDIATE``); a rolled-back transaction gives its
numbers back. Hence seqs are unique and gap-free without any in-process coordination,
also across several server instances.

The socket layer checks chat ownership before calling in here; this module trusts the
chat ids it is given.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, exists, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from storage.engine import Database, rowcount
from storage.errors import ChatNotFound
from storage.models import (
    approvals,
    chat_events,
    chats,
    paused_turns,
    turns,
    utcnow,
)
from storage.plain_sql import (
    Append,
    Repeated,
    Start,
    append_plan,
    run_plan,
    start_plan,
)
from storage.records import (
    EventRecord,
    Lease,
    NewEvent,
    Renewal,
    RunningTurnRef,
    TurnRecord,
    TurnUpdate,
    event_from_row,
    turn_from_row,
)
from wire.events import (
    ZERO_USAGE,
    AttachmentSummary,
    EndOfStreamEvent,
    ErrorEvent,
    Usage,
    UserPromptEvent,
)

# Repositories pass either; both run Core statements the same way.
Executor = AsyncConnection | AsyncSession

PREVIEW_CHARS = 120


class EventStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def start_turn(
        self,
        chat_id: str,
        prompt: str,
        client_message_id: str | None,
        ts: str,
        *,
        owner: str | None = None,
        lease: Lease | None = None,
        attachments: Sequence[Mapping[str, Any]] = (),
    ) -> tuple[TurnRecord, EventRecord, bool]:
        """Persist a new turn and its ``user_prompt`` event, in one transaction.

        ``attachments``: the summaries (``AttachmentRecord.summary``) of the prompt's
        attachments, already checked to be the chat's; they go into the event's payload,
        and each one not sent before is marked as sent by this turn.

        Returns ``(turn, user_prompt_event, created)``. A prompt whose
        ``client_message_id`` the chat has already seen returns that turn with
        ``created=False`` (a client retry must not run the prompt twice). Raises
        ``TurnInProgress`` if another turn of the chat is running, ``ChatNotFound`` if
        the chat does not exist (or, with ``owner``, is not that user's), and
        ``ClientMessageReused`` if the id came before with another text. ``lease``: the
        instance that will run the turn claims it (see ``Lease``); without one the turn
        counts as orphaned at once.
        """
        # The seq first locks the chat row (its UPDATE), so two start_turns of one chat
        # run one after the other and the checks after it cannot both pass (PostgreSQL;
        # SQLite is serialised by BEGIN IMMEDIATE); it also tells whether the chat exists.
        # When no turn is created the transaction is rolled back, which gives the seq
        # back: still gap-free. Plain SQL (storage/plain_sql.py): this is on the path
        # from the prompt to the model.
        turn_id = uuid.uuid4().hex
        payload = UserPromptEvent(
            text=prompt,
            client_message_id=client_message_id,
            attachments=[AttachmentSummary(**summary) for summary in attachments] or None,
        ).payload()
        values = running_turn_row(
            turn_id, chat_id, client_message_id, prompt, parse_ts(ts), 0, lease
        )
        start = Start(
            chat_id,
            prompt,
            make_preview(prompt),
            client_message_id,
            EventRecord(chat_id, 0, turn_id, "user_prompt", payload, ts),
            TurnRecord(**values),
            owner,
            [summary["id"] for summary in attachments],
        )
        try:
            seq = await run_plan(self._db, lambda bind: start_plan(start, bind))
        except Repeated as repeated:  # a client's retry: that turn, as it is now
            turn = await self.get_turn(repeated.turn_id)
            assert turn is not None, "a turn is never deleted but with its chat"
            async with self._db.transaction() as conn:
                event = await _event_at(conn, chat_id, turn.user_prompt_seq)
            return turn, event, False
        return (
            replace(start.turn, user_prompt_seq=seq),
            replace(start.event, seq=seq),
            True,
        )

    async def append(
        self,
        chat_id: str,
        events: list[NewEvent],
        update: TurnUpdate | None = None,
        *,
        fence_turn: str | None = None,
        after_end: bool = False,
    ) -> list[EventRecord]:
        """Persist ``events`` with consecutive seqs and apply ``update``, atomically.

        Returns the stored events in order, with their seqs. Raises ``ChatNotFound`` if
        the chat does not exist and ``ValueError`` if ``update`` names a turn that is not
        in this chat (nothing is written then).

        ``fence_turn``: write only while that turn still runs (``TurnFenced`` otherwise):
        a runner whose turn was closed elsewhere (it stalled past its lease) must not add
        to a finished turn; and a ``completed`` end of a turn someone asked to stop raises
        ``CancelRequested`` (the writer ends it as cancelled instead). With ``after_end``
        (what follows a turn's end: its suggested prompts), write only while it is still
        the chat's latest turn, so nothing of it lands among the next turn's events.
        """
        if not events and update is None:
            return []
        # Plain SQL on the driver (storage/plain_sql.py): this runs several times a turn.
        work = Append(chat_id, events, update, fence_turn, after_end)
        records: list[EventRecord] = await run_plan(self._db, lambda bind: append_plan(work, bind))
        return records

    async def list_after(
        self, chat_id: str, after_seq: int, limit: int | None = None
    ) -> list[EventRecord]:
        """Events with ``seq > after_seq`` in seq order (at most ``limit``)."""
        async with self._db.transaction() as conn:
            return await select_events(conn, chat_id, after_seq, limit)

    async def get_turn(self, turn_id: str) -> TurnRecord | None:
        async with self._db.session() as session:
            row = (await session.execute(_WITH_PAUSED.where(turns.c.id == turn_id))).one_or_none()
        return _paused_turn_from_row(row) if row is not None else None

    async def running_turn(self, chat_id: str) -> TurnRecord | None:
        """The chat's running turn (``paused`` when it waits for approvals), if any."""
        async with self._db.session() as session:
            return await _running_turn(session, chat_id)

    async def expired_turns(self) -> list[RunningTurnRef]:
        """The running turns whose runner's lease has expired (a paused turn is a row, not
        a process, so it never is one), with their chats' owners."""
        async with self._db.session() as session:
            rows = (
                await session.execute(
                    select(turns.c.chat_id, turns.c.id, chats.c.user_id)
                    .join(chats, chats.c.id == turns.c.chat_id)
                    .where(turns.c.status == "running", _lease_expired(utcnow()), _NOT_PAUSED)
                )
            ).all()
        return [RunningTurnRef(chat_id, turn_id, user_id) for chat_id, turn_id, user_id in rows]

    async def renew_leases(self, lease: Lease, turn_ids: Collection[str]) -> Renewal:
        """Extend ``lease`` on those of ``turn_ids`` its runner still runs: the ones
        returned as kept. A turn missing from them was closed elsewhere (its lease had
        expired) or has ended; ``cancel`` names the kept ones someone asked to stop."""
        if not turn_ids:
            return Renewal()
        async with self._db.transaction(write=True) as conn:
            rows = (
                await conn.execute(
                    update(turns)
                    .where(
                        turns.c.id.in_(list(turn_ids)),
                        turns.c.runner == lease.runner,
                        turns.c.status == "running",
                    )
                    .values(lease_until=lease.until())
                    .returning(turns.c.id, turns.c.cancel_requested)
                )
            ).all()
        return Renewal(
            kept=frozenset(row.id for row in rows),
            cancel=frozenset(row.id for row in rows if row.cancel_requested),
        )

    async def request_cancel(self, chat_id: str, turn_id: str) -> bool:
        """Ask the runner of a running turn to stop (it sees it when it renews its
        lease); False when the turn is not running any more, or is paused (nothing runs
        it to hear: the caller ends it itself)."""
        async with self._db.transaction(write=True) as conn:
            # The chat row first, as a pause takes it: a turn pausing now either sees the
            # stop in its transaction or is seen here as paused, never neither.
            await conn.execute(_LOCK_CHAT, {"b_chat_id": chat_id})
            result = await conn.execute(
                update(turns)
                .where(
                    turns.c.id == turn_id,
                    turns.c.chat_id == chat_id,
                    turns.c.status == "running",
                    _NOT_PAUSED,
                )
                .values(cancel_requested=True)
            )
        return bool(rowcount(result))

    async def close_turn(self, chat_id: str, turn_id: str, ts: str) -> list[EventRecord]:
        """Fail one running turn whose runner is gone (its lease expired): the events
        that end it (an ``error`` if an approved action was cut short, then
        ``end_of_stream`` ``failed``), or none if the turn had already ended, is paused,
        or its lease still holds."""
        async with self._db.session(write=True) as session:
            # Chat row first, then the turn: the same lock order as start_turn and append,
            # so this cannot deadlock with them, and whatever paused, resumed or ended the
            # turn before is visible below.
            await session.execute(_LOCK_CHAT, {"b_chat_id": chat_id})
            # Decided and changed in one statement: a lease renewed meanwhile wins.
            row = (
                await session.execute(
                    update(turns)
                    .where(
                        turns.c.id == turn_id,
                        turns.c.chat_id == chat_id,
                        turns.c.status == "running",
                        _lease_expired(utcnow()),
                        _NOT_PAUSED,
                    )
                    .values(
                        status="failed",
                        final_text=turns.c.partial_text,
                        runner=None,
                        lease_until=None,
                        finished_at=utcnow(),
                    )
                    .returning(turns.c.usage)
                )
            ).one_or_none()
            if row is None:
                return []
            usage = row.usage if row.usage is not None else dict(ZERO_USAGE)
            if row.usage is None:
                await session.execute(
                    update(turns).where(turns.c.id == turn_id).values(usage=usage)
                )
            closing = [NewEvent.of(EndOfStreamEvent(status="failed", usage=Usage()), turn_id, ts)]
            unfinished = await _approved_without_output(session, chat_id, turn_id)
            if unfinished:
                closing.insert(
                    0,
                    NewEvent.of(interrupted_action_error(unfinished), turn_id, ts),
                )
            records = await append_events(session, chat_id, closing)
            await session.commit()
        return records


def parse_ts(ts: str) -> datetime:
    """An RFC 3339 timestamp (as ``websocket.protocol.now_ts()`` makes) as aware UTC."""
    try:
        value = datetime.fromisoformat(ts)
    except (TypeError, ValueError):
        raise ValueError(
            f"invalid timestamp {ts!r}: expected RFC 3339, e.g. 2025-01-31T12:00:00.000Z"
        ) from None
    if value.tzinfo is None:
        raise ValueError(f"timestamp {ts!r} has no time zone; end it with Z or an offset")
    return value.astimezone(UTC)


def make_preview(prompt: str) -> str:
    """The chat list's one-line preview: whitespace collapsed, about 120 characters."""
    flat = " ".join(prompt.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1].rstrip() + "…"


async def select_events(
    session: Executor, chat_id: str, after_seq: int = 0, limit: int | None = None
) -> list[EventRecord]:
    query = (
        select(chat_events)
        .where(chat_events.c.chat_id == chat_id, chat_events.c.seq > after_seq)
        .order_by(chat_events.c.seq)
    )
    if limit is not None:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        query = query.limit(limit)
    return [event_from_row(row) for row in await session.execute(query)]


async def select_turns(session: AsyncSession, chat_id: str) -> list[TurnRecord]:
    query = select(turns).where(turns.c.chat_id == chat_id).order_by(turns.c.user_prompt_seq)
    return [turn_from_row(row) for row in await session.execute(query)]


# The statements of every turn, built once: constructing a statement and computing its
# cache key costs about as much CPU as running it (bench/storage.py measures appends).
_ALLOCATE = (
    update(chats)
    .where(chats.c.id == bindparam("b_chat_id"))
    .values(
        last_seq=chats.c.last_seq + bindparam("b_n"),
        updated_at=bindparam("b_now", type_=chats.c.updated_at.type),
    )
    .returning(chats.c.last_seq)
)
_ALLOCATE_WITH_PREVIEW = _ALLOCATE.values(preview=bindparam("b_preview"))
_ALLOCATE_OWNED = _ALLOCATE_WITH_PREVIEW.where(chats.c.user_id == bindparam("b_owner"))
_INSERT_EVENTS = insert(chat_events)
_INSERT_TURN = insert(turns)
_LOCK_CHAT = select(chats.c.id).where(chats.c.id == bindparam("b_chat_id")).with_for_update()
_LATEST_TURN = (
    select(turns.c.id)
    .where(turns.c.chat_id == bindparam("b_chat_id"))
    .order_by(turns.c.user_prompt_seq.desc())
    .limit(1)
)


async def _allocate_seqs(
    conn: Executor,
    chat_id: str,
    n: int,
    *,
    preview: str | None = None,
    owner: str | None = None,
) -> int:
    """Reserve ``n`` seqs for the chat in this transaction; returns the first one."""
    params: dict[str, Any] = {"b_chat_id": chat_id, "b_n": n, "b_now": utcnow()}
    statement = _ALLOCATE
    if preview is not None:
        statement, params["b_preview"] = _ALLOCATE_WITH_PREVIEW, preview
    if owner is not None:  # asked by start_turn only, which always sets the preview
        statement, params["b_owner"] = _ALLOCATE_OWNED, owner
    last = await conn.scalar(statement, params)
    if last is None:
        raise ChatNotFound(chat_id)
    return int(last) - n + 1


async def append_events(conn: Executor, chat_id: str, events: list[NewEvent]) -> list[EventRecord]:
    if not events:
        return []
    first = await _allocate_seqs(conn, chat_id, len(events))
    records = [
        EventRecord(chat_id, first + i, e.turn_id, e.type, e.payload, e.ts)
        for i, e in enumerate(events)
    ]
    await insert_events(conn, records)
    return records


async def insert_events(conn: Executor, records: Sequence[EventRecord]) -> None:
    """Store ``records``, whose seqs this transaction allocated."""
    await conn.execute(
        _INSERT_EVENTS,
        [
            {
                "chat_id": r.chat_id,
                "seq": r.seq,
                "turn_id": r.turn_id,
                "type": r.type,
                "payload": r.payload,
                "ts": r.ts,
            }
            for r in records
        ],
    )


def running_turn_row(
    turn_id: str,
    chat_id: str,
    client_message_id: str | None,
    prompt: str,
    created_at: datetime,
    prompt_seq: int,
    lease: Lease | None,
    continues: str | None = None,
) -> dict[str, Any]:
    """The ``turns`` row of a turn that starts now (its runner's lease, when it has one)."""
    return dict(
        id=turn_id,
        chat_id=chat_id,
        client_message_id=client_message_id,
        prompt=prompt,
        status="running",
        final_text=None,
        partial_text="",
        current_agent=None,
        usage=None,
        created_at=created_at,
        finished_at=None,
        user_prompt_seq=prompt_seq,
        runner=lease.runner if lease is not None else None,
        lease_until=lease.until() if lease is not None else None,
        continues=continues,
    )


async def _running_turn(session: AsyncSession, chat_id: str) -> TurnRecord | None:
    row = (
        await session.execute(
            _WITH_PAUSED.where(turns.c.chat_id == chat_id, turns.c.status == "running").limit(1)
        )
    ).one_or_none()
    return _paused_turn_from_row(row) if row is not None else None


# A turn with whether it is paused for approvals.
_WITH_PAUSED = select(turns, paused_turns.c.turn_id.label("paused_turn")).outerjoin(
    paused_turns, paused_turns.c.turn_id == turns.c.id
)


def _paused_turn_from_row(row: Any) -> TurnRecord:
    return replace(turn_from_row(row), paused=row.paused_turn is not None)


# A running turn with no paused row: one a process runs (or ran, before it died).
_NOT_PAUSED = ~exists().where(paused_turns.c.turn_id == turns.c.id)


def _lease_expired(now: datetime) -> Any:
    # No lease at all: started by a version without leases, or without a runner.
    return or_(turns.c.lease_until.is_(None), turns.c.lease_until <= now)


def interrupted_action_error(names: list[str]) -> ErrorEvent:
    """The ``error`` of a turn that died after the person approved an action that had not
    finished: it is never run again (twice would be worse than not at all)."""
    actions = ", ".join(dict.fromkeys(names))
    return ErrorEvent(
        code="tool_error",
        message=f"The server stopped while carrying out what you approved ({actions}). "
        "It was not run again, so it may or may not have happened: check "
        "before asking again.",
        retryable=False,
    )


async def _approved_without_output(session: AsyncSession, chat_id: str, turn_id: str) -> list[str]:
    """The tools of the turn's approved calls that have no ``tool_output`` yet."""
    approved = (
        await session.execute(
            select(approvals.c.call_id, approvals.c.name).where(
                approvals.c.chat_id == chat_id,
                approvals.c.turn_id == turn_id,
                approvals.c.status == "approved",
            )
        )
    ).all()
    if not approved:
        return []
    outputs = await session.scalars(
        select(chat_events.c.payload).where(
            chat_events.c.chat_id == chat_id,
            chat_events.c.turn_id == turn_id,
            chat_events.c.type == "tool_output",
        )
    )
    done = {payload.get("call_id") for payload in outputs}
    return [name for call_id, name in approved if call_id not in done]


async def _event_at(session: Executor, chat_id: str, seq: int) -> EventRecord:
    row = (
        await session.execute(
            select(chat_events).where(chat_events.c.chat_id == chat_id, chat_events.c.seq == seq)
        )
    ).one()
    return event_from_row(row)
