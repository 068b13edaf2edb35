"""Ratings of answers: one current thumbs up or down per (turn, user), with a comment.

Owner-checked like ``storage.chats``: another user's chat raises ``ChatNotFound``; a turn
id the chat does not have (another chat's turn included) raises ``TurnNotFound``; a turn
still running (its answer is not there yet) raises ``TurnInProgress``. The comment is
stored exactly as given: it is data, never markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.engine import Database
from storage.errors import ChatNotFound, TurnInProgress, TurnNotFound
from storage.models import chats, feedback, turns, utcnow

Rating = Literal["up", "down"]
# Long enough for a paragraph on what went wrong; short enough to stay a comment.
MAX_COMMENT_CHARS = 2000


@dataclass(frozen=True)
class FeedbackRecord:
    turn_id: str
    chat_id: str
    rating: Rating
    comment: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class FeedbackChange:
    """What a rating did: the rating before (None: there was none) and now."""

    before: Rating | None
    after: FeedbackRecord


def _record(row: Any) -> FeedbackRecord:
    return FeedbackRecord(
        turn_id=row.turn_id,
        chat_id=row.chat_id,
        rating=row.rating,
        comment=row.comment,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


class FeedbackRepository:
    def __init__(self, db: Database, user_id: str) -> None:
        self._db = db
        self.user_id = user_id

    async def rate(
        self, chat_id: str, turn_id: str, rating: Rating, comment: str | None
    ) -> FeedbackChange:
        """Set the user's rating of the turn's answer, replacing any earlier one."""
        if rating not in ("up", "down"):
            raise ValueError(f"rating must be 'up' or 'down', got {rating!r}")
        if comment is not None and len(comment) > MAX_COMMENT_CHARS:
            raise ValueError(f"comment is longer than {MAX_COMMENT_CHARS} characters")
        now = utcnow()
        async with self._db.session(write=True) as session:
            await self._require_turn(session, chat_id, turn_id, ended=True)
            before = await session.scalar(
                select(feedback.c.rating).where(
                    feedback.c.turn_id == turn_id, feedback.c.user_id == self.user_id
                )
            )
            values = {"rating": rating, "comment": comment, "updated_at": now}
            statement = (
                self._db.insert(feedback)
                .values(
                    turn_id=turn_id, user_id=self.user_id, chat_id=chat_id, created_at=now, **values
                )
                .on_conflict_do_update(
                    index_elements=[feedback.c.turn_id, feedback.c.user_id], set_=values
                )
                .returning(*feedback.c)
            )
            row = (await session.execute(statement)).one()
            await session.commit()
        return FeedbackChange(before=before, after=_record(row))

    async def clear(self, chat_id: str, turn_id: str) -> Rating | None:
        """Remove the user's rating of the turn; the rating it had (None: it had none)."""
        async with self._db.session(write=True) as session:
            await self._require_turn(session, chat_id, turn_id, ended=False)
            before = await session.scalar(
                delete(feedback)
                .where(feedback.c.turn_id == turn_id, feedback.c.user_id == self.user_id)
                .returning(feedback.c.rating)
            )
            await session.commit()
        return before

    async def for_chat(self, chat_id: str) -> dict[str, FeedbackRecord]:
        """The user's ratings in the chat, by turn id (no owner check: the caller has
        read the chat as this user already)."""
        async with self._db.session() as session:
            rows = await session.execute(
                select(feedback)
                .where(feedback.c.chat_id == chat_id, feedback.c.user_id == self.user_id)
                .order_by(feedback.c.created_at, feedback.c.turn_id)
            )
            return {row.turn_id: _record(row) for row in rows}

    async def _require_turn(
        self, session: AsyncSession, chat_id: str, turn_id: str, *, ended: bool
    ) -> None:
        owned = await session.scalar(
            select(chats.c.id).where(chats.c.id == chat_id, chats.c.user_id == self.user_id)
        )
        if owned is None:
            raise ChatNotFound(chat_id)
        # FOR UPDATE (PostgreSQL; SQLite's write transaction already holds the lock):
        # ratings of one turn take turns, so "the rating before" is exact.
        status = await session.scalar(
            select(turns.c.status)
            .where(turns.c.id == turn_id, turns.c.chat_id == chat_id)
            .with_for_update()
        )
        if status is None:
            raise TurnNotFound(turn_id)
        if ended and status == "running":
            raise TurnInProgress(turn_id)
