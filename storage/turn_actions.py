"""Turns made from earlier ones: ``regenerate``, ``edit`` and ``continue``
(docs/protocol.md, "Regenerate, edit and continue").

One transaction checks the frame against the chat as it is (under the chat row's lock,
like ``EventStore.start_turn``), marks the turns it replaces (``turns.superseded_by``),
writes a ``turn_superseded`` event for each, then the new turn and its ``user_prompt``.
Refused, it changes nothing. A repeated ``client_message_id`` starts nothing and hands
back the turn it started the first time.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from storage.engine import Database
from storage.errors import ChatNotFound, ClientMessageReused, StorageError, TurnInProgress
from storage.events import (
    _INSERT_TURN,
    _LATEST_TURN,
    _allocate_seqs,
    _event_at,
    insert_events,
    make_preview,
    parse_ts,
    running_turn_row,
)
from storage.models import chat_events, chat_memory, chats, conversation_items, paused_turns, turns
from storage.records import EventRecord, Lease, TurnRecord, turn_from_row
from wire.events import ActionRefusal, TurnAction, TurnSupersededEvent, UserPromptEvent

# The prompt of a ``continue`` turn: what the model is asked, and what the log shows.
CONTINUE_PROMPT = (
    "Continue your previous answer from exactly where it stopped, without repeating "
    "what you already wrote."
)


class ActionRefused(StorageError):
    """The frame does not apply to the chat as it is; nothing was changed."""

    def __init__(self, refusal: ActionRefusal, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal
        self.message = message


@dataclass(frozen=True)
class ActionRequest:
    kind: TurnAction
    turn_id: str  # the turn the frame names
    prompt: str | None = None  # an edit's new prompt


@dataclass(frozen=True)
class ActionStarted:
    """The new turn (or, for a repeated id, the one started before)."""

    turn: TurnRecord
    user_prompt: EventRecord
    created: bool
    superseded: tuple[EventRecord, ...] = ()  # the turn_superseded events, before it
    continued: TurnRecord | None = None  # the stopped turn a continuation goes on from
    cut_off: bool = False  # that turn's answer was cut off (its text is in the history)


async def start_action_turn(
    db: Database,
    chat_id: str,
    request: ActionRequest,
    client_message_id: str | None,
    ts: str,
    *,
    owner: str,
    lease: Lease,
) -> ActionStarted:
    """Check ``request`` and start its turn, atomically. Raises ``ActionRefused``,
    ``TurnInProgress`` (a turn runs, not paused), ``ClientMessageReused`` and
    ``ChatNotFound`` (not ``owner``'s chat)."""
    created_at = parse_ts(ts)
    async with db.transaction(write=True) as conn:
        # The chat row's lock first, as start_turn and append take it: the checks below
        # see every turn started or ended before, and none can start meanwhile.
        chat_owner = await conn.scalar(
            select(chats.c.user_id).where(chats.c.id == chat_id).with_for_update()
        )
        if chat_owner is None or chat_owner != owner:
            raise ChatNotFound(chat_id)
        if client_message_id is not None:
            repeated = await _turn(conn, turns.c.client_message_id == client_message_id, chat_id)
            if repeated is not None:
                return await _repeated(conn, chat_id, request, repeated, client_message_id)
        source = await _turn(conn, turns.c.id == request.turn_id, chat_id)
        if source is None:
            raise ActionRefused("turn_not_found", f"no turn '{request.turn_id}' in this chat")
        await _check_not_running(conn, chat_id)
        latest = await conn.scalar(_LATEST_TURN, {"b_chat_id": chat_id})
        cut_off = await _check(conn, request, source, latest)

        new_id = uuid.uuid4().hex
        continued: TurnRecord | None = None
        if request.kind == "continue":
            continued, prompt = source, CONTINUE_PROMPT
        elif request.kind == "regenerate" and source.continues is not None:
            # Regenerating a continuation continues the same stopped turn again.
            continued = await _turn(conn, turns.c.id == source.continues, chat_id)
            prompt = source.prompt
            if continued is not None:
                cut_off = await _cut_off(conn, chat_id, continued.id)
        else:
            prompt = request.prompt if request.kind == "edit" and request.prompt else source.prompt
        replaced = await _replaced(conn, chat_id, request, source)

        preview = continued.prompt if continued is not None else prompt
        first = await _allocate_seqs(
            conn, chat_id, len(replaced) + 1, preview=make_preview(preview), owner=owner
        )
        if replaced:
            await conn.execute(
                update(turns).where(turns.c.id.in_(replaced)).values(superseded_by=new_id)
            )
            await _forget_summary_of(conn, chat_id, replaced)
        kind = request.kind
        records = [
            EventRecord(
                chat_id,
                first + i,
                old,
                "turn_superseded",
                TurnSupersededEvent(
                    by_turn_id=new_id, action="edit" if kind == "edit" else "regenerate"
                ).payload(),
                ts,
            )
            for i, old in enumerate(replaced)
        ]
        seq = first + len(replaced)
        # A regenerated or edited prompt keeps the files its source sent (a continuation
        # sends none: the model already saw them).
        attached = None
        if continued is None:
            attached = (await _event_at(conn, chat_id, source.user_prompt_seq)).payload.get(
                "attachments"
            )
        payload = UserPromptEvent(
            text=prompt,
            client_message_id=client_message_id,
            action=kind,
            source_turn_id=source.id,
            attachments=attached,
        ).payload()
        values = running_turn_row(
            new_id,
            chat_id,
            client_message_id,
            prompt,
            created_at,
            seq,
            lease,
            continues=continued.id if continued is not None else None,
        )
        await conn.execute(_INSERT_TURN, values)
        user_prompt = EventRecord(chat_id, seq, new_id, "user_prompt", payload, ts)
        await insert_events(conn, [*records, user_prompt])
    return ActionStarted(
        TurnRecord(**values), user_prompt, True, tuple(records), continued, cut_off
    )


async def _forget_summary_of(conn: AsyncConnection, chat_id: str, replaced: list[str]) -> None:
    """A stored summary (storage/memory.py) that covers a replaced turn tells of answers
    that no longer stand: it goes, and the next turn that needs one summarises what
    remains."""
    first_item = (
        select(func.min(conversation_items.c.id))
        .where(conversation_items.c.chat_id == chat_id, conversation_items.c.turn_id.in_(replaced))
        .scalar_subquery()
    )
    await conn.execute(
        delete(chat_memory).where(
            chat_memory.c.chat_id == chat_id, chat_memory.c.through_item_id >= first_item
        )
    )


async def _turn(conn: AsyncConnection, where: Any, chat_id: str) -> TurnRecord | None:
    row = (await conn.execute(select(turns).where(turns.c.chat_id == chat_id, where))).one_or_none()
    return turn_from_row(row) if row is not None else None


async def _repeated(
    conn: AsyncConnection,
    chat_id: str,
    request: ActionRequest,
    turn: TurnRecord,
    client_message_id: str,
) -> ActionStarted:
    """The turn a repeated ``client_message_id`` started: the same frame again is answered
    with it; anything else under that id is a client bug."""
    event = await _event_at(conn, chat_id, turn.user_prompt_seq)
    same = (
        event.payload.get("action") == request.kind
        and event.payload.get("source_turn_id") == request.turn_id
        and (request.kind != "edit" or turn.prompt == request.prompt)
    )
    await conn.rollback()
    if not same:
        raise ClientMessageReused(client_message_id)
    return ActionStarted(turn, event, False)


async def _check_not_running(conn: AsyncConnection, chat_id: str) -> None:
    row = (
        await conn.execute(
            select(turns.c.id, paused_turns.c.turn_id.label("paused"))
            .outerjoin(paused_turns, paused_turns.c.turn_id == turns.c.id)
            .where(turns.c.chat_id == chat_id, turns.c.status == "running")
        )
    ).first()
    if row is None:
        return
    if row.paused is not None:
        # Unlike a prompt, which supersedes a pause: replacing or continuing an answer
        # must not silently drop an action the person is still deciding on.
        raise ActionRefused(
            "awaiting_approval",
            "a turn is waiting for your approval; approve, reject or stop it first",
        )
    raise TurnInProgress(row.id)


async def _check(
    conn: AsyncConnection, request: ActionRequest, source: TurnRecord, latest: str | None
) -> bool:
    """Refuse a frame that does not apply to ``source``; returns whether its answer was
    cut off (for a continue)."""
    if source.superseded_by is not None:
        raise ActionRefused(
            "turn_superseded",
            f"turn '{source.id}' was already replaced by turn '{source.superseded_by}'",
        )
    if request.kind in ("regenerate", "continue") and source.id != latest:
        raise ActionRefused(
            "not_latest_turn", f"only the chat's latest turn can be {_done(request.kind)}"
        )
    if request.kind == "edit" and source.continues is not None:
        raise ActionRefused(
            "not_editable",
            "a continuation has no prompt of its own; edit the turn it continues",
        )
    if request.kind != "continue":
        return False
    cut_off = await _cut_off(conn, source.chat_id, source.id)
    if source.status != "cancelled" and not cut_off:
        raise ActionRefused(
            "not_stopped",
            f"turn '{source.id}' {source.status}; only a stopped or cut-off answer can be "
            "continued",
        )
    return cut_off


def _done(kind: TurnAction) -> str:
    return "regenerated" if kind == "regenerate" else "continued"


async def _cut_off(conn: AsyncConnection, chat_id: str, turn_id: str) -> bool:
    """Whether the turn's last answer was cut off at a limit (``incomplete_reason``)."""
    payload = await conn.scalar(
        select(chat_events.c.payload)
        .where(
            chat_events.c.chat_id == chat_id,
            chat_events.c.turn_id == turn_id,
            chat_events.c.type == "llm_response",
        )
        .order_by(chat_events.c.seq.desc())
        .limit(1)
    )
    return isinstance(payload, dict) and bool(payload.get("incomplete_reason"))


async def _replaced(
    conn: AsyncConnection, chat_id: str, request: ActionRequest, source: TurnRecord
) -> list[str]:
    """The turns the new one supersedes, oldest first: none for a continue, the turn for
    a regenerate, the turn and every later one still standing for an edit."""
    if request.kind == "continue":
        return []
    if request.kind == "regenerate":
        return [source.id]
    rows = await conn.execute(
        select(turns.c.id)
        .where(
            turns.c.chat_id == chat_id,
            turns.c.user_prompt_seq >= source.user_prompt_seq,
            turns.c.superseded_by.is_(None),
        )
        .order_by(turns.c.user_prompt_seq)
    )
    return [row.id for row in rows]
