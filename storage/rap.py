"""RAP subscriptions recorded on a chat (docs/rap.md: ``subscription: true``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select

from storage.engine import Database, rowcount
from storage.errors import ChatNotFound
from storage.models import chats, rap_subscriptions, utcnow


@dataclass(frozen=True)
class ResultSubscription:
    chat_id: str
    call_id: str  # the invocation's ``id``: what the agent names to cancel it
    connector: str
    operation: str
    created_at: datetime


class SubscriptionRepository:
    """The chat's active RAP subscriptions. Callers check ownership first (the turn runs
    for the chat's owner; the REST route goes through ``ChatRepository``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, chat_id: str, call_id: str, connector: str, operation: str) -> None:
        """Idempotent: recording the same call twice keeps the first record."""
        async with self._db.session(write=True) as session:
            if await session.scalar(select(chats.c.id).where(chats.c.id == chat_id)) is None:
                raise ChatNotFound(chat_id)
            await session.execute(
                self._db.insert(rap_subscriptions)
                .values(
                    chat_id=chat_id,
                    call_id=call_id,
                    connector=connector,
                    operation=operation,
                    created_at=utcnow(),
                )
                .on_conflict_do_nothing(
                    index_elements=[rap_subscriptions.c.chat_id, rap_subscriptions.c.call_id]
                )
            )
            await session.commit()

    async def list(self, chat_id: str) -> list[ResultSubscription]:
        table = rap_subscriptions
        query = (
            select(table)
            .where(table.c.chat_id == chat_id)
            .order_by(table.c.created_at, table.c.call_id)
        )
        async with self._db.session() as session:
            rows = (await session.execute(query)).all()
        return [
            ResultSubscription(
                row.chat_id, row.call_id, row.connector, row.operation, row.created_at
            )
            for row in rows
        ]

    async def remove(self, chat_id: str, call_id: str) -> bool:
        table = rap_subscriptions
        async with self._db.session(write=True) as session:
            result = await session.execute(
                delete(table).where(table.c.chat_id == chat_id, table.c.call_id == call_id)
            )
            await session.commit()
        return bool(rowcount(result))
