"""Open Responses ids → the chat and turn behind each response, and its final object.

A response continues a conversation through ``previous_response_id``. Its context is the
chat's conversation items up to ``last_item_id`` (the newest item once its turn ended):
when the chat went on since (another response, a socket prompt), the conversation is
forked into a new chat holding exactly those items (``fork``).

A response whose turn paused for approvals is stored ``completed`` while the turn waits,
before the turn has written its items: ``turn_items`` finds them for a fork.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from storage.chats import ChatRepository
from storage.engine import Database
from storage.models import chats, conversation_items, open_responses, paused_turns, utcnow
from storage.session import ChatSession

STATUSES = ("completed", "incomplete", "failed")


@dataclass(frozen=True)
class StoredResponse:
    id: str
    chat_id: str
    turn_id: str
    previous_response_id: str | None
    status: str
    last_item_id: int | None
    body: dict[str, Any] | None
    created_at: datetime


def _record(row: Any) -> StoredResponse:
    return StoredResponse(
        row.id,
        row.chat_id,
        row.turn_id,
        row.previous_response_id,
        row.status,
        row.last_item_id,
        row.body,
        row.created_at,
    )


class ResponseRepository:
    """One user's responses: another user's id is looked up as if it did not exist."""

    def __init__(self, db: Database, user_id: str) -> None:
        self._db = db
        self.user_id = user_id

    async def get(self, response_id: str) -> StoredResponse | None:
        table = open_responses
        query = (
            select(table)
            .join(chats, chats.c.id == table.c.chat_id)
            .where(table.c.id == response_id, chats.c.user_id == self.user_id)
        )
        async with self._db.session() as session:
            row = (await session.execute(query)).one_or_none()
        return _record(row) if row is not None else None

    async def recent_bodies(self, limit: int) -> list[dict[str, Any] | None]:
        """The response objects of the user's ``limit`` most recent stored responses,
        newest first (what ``item_reference`` items are looked up in)."""
        table = open_responses
        query = (
            select(table.c.body)
            .join(chats, chats.c.id == table.c.chat_id)
            .where(chats.c.user_id == self.user_id)
            .order_by(table.c.created_at.desc())
            .limit(limit)
        )
        async with self._db.session() as session:
            return list((await session.scalars(query)).all())

    async def save(
        self,
        response_id: str,
        chat_id: str,
        turn_id: str,
        previous_response_id: str | None,
        status: str,
        body: dict[str, Any],
    ) -> int | None:
        """Record a finished response with the chat's newest item id (returned).

        Called when its turn has ended and before the chat's next turn can start, so the
        newest item is this response's last one.
        """
        if status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        async with self._db.session(write=True) as session:
            newest: int | None = await session.scalar(
                select(func.max(conversation_items.c.id)).where(
                    conversation_items.c.chat_id == chat_id
                )
            )
            await session.execute(
                open_responses.insert().values(
                    id=response_id,
                    chat_id=chat_id,
                    turn_id=turn_id,
                    previous_response_id=previous_response_id,
                    status=status,
                    last_item_id=newest,
                    body=body,
                    created_at=utcnow(),
                )
            )
            await session.commit()
        return newest

    async def newest_item_id(self, chat_id: str) -> int | None:
        async with self._db.session() as session:
            newest: int | None = await session.scalar(
                select(func.max(conversation_items.c.id)).where(
                    conversation_items.c.chat_id == chat_id
                )
            )
        return newest

    async def turn_items(self, source: StoredResponse, limit: int = 500) -> list[dict[str, Any]]:
        """The conversation items of ``source``'s turn that come after its
        ``last_item_id``: those of a response that asked for approval, whose turn was
        paused when it was stored. While that turn still waits, the paused run's items;
        once it ended, the chat's items after ``last_item_id`` (the turn's first, as a
        paused turn holds its chat), oldest first, at most ``limit``."""
        async with self._db.session() as session:
            state = await session.scalar(
                select(paused_turns.c.state).where(paused_turns.c.turn_id == source.turn_id)
            )
            if state is not None:
                return [dict(item) for item in state.get("session", [])]
            table = conversation_items
            query = select(table.c.item).where(table.c.chat_id == source.chat_id)
            if source.last_item_id is not None:
                query = query.where(table.c.id > source.last_item_id)
            items = (await session.scalars(query.order_by(table.c.id).limit(limit))).all()
        return [dict(item) for item in items]

    async def items_until(self, source: StoredResponse) -> list[dict[str, Any]]:
        """The conversation items of ``source``'s chat up to ``source`` (its last item),
        oldest first."""
        if source.last_item_id is None:
            return []
        table = conversation_items
        query = (
            select(table.c.item)
            .where(table.c.chat_id == source.chat_id, table.c.id <= source.last_item_id)
            .order_by(table.c.id)
        )
        async with self._db.session() as session:
            return [dict(item) for item in (await session.scalars(query)).all()]

    async def fork(
        self, source: StoredResponse, new_chat_id: str, extra: Sequence[dict[str, Any]] = ()
    ) -> None:
        """A new chat of this user holding the conversation up to ``source``, then
        ``extra`` items."""
        chat = await ChatRepository(self._db, self.user_id).get(source.chat_id)
        await ChatRepository(self._db, self.user_id).get_or_create(new_chat_id)
        if chat is not None and chat.title:
            await ChatRepository(self._db, self.user_id).set_title(new_chat_id, chat.title)
        items: list[Any] = [*await self.items_until(source), *extra]
        if items:
            await ChatSession(self._db, new_chat_id).add_items(items)
