"""A chat's stored compaction (``chat_memory``): the summary of its oldest conversation
items, so that a turn reads the summary and the items after it, never the whole chat, and
the summary is made once per compaction (docs/memory.md).

Only the turn running in a chat writes its compaction (one turn per chat at a time), and a
compaction only ever moves forward: a save that would move ``through_item_id`` back (a
stale writer) is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select, update

from storage.engine import Database
from storage.models import chat_memory, utcnow
from storage.plain_sql import compaction_plan, history_plan, run_plan
from storage.session import ChatSession


@dataclass(frozen=True)
class Compaction:
    """The summary of a chat's items up to and including ``through_item_id``."""

    through_item_id: int
    summary: str
    summary_tokens: int
    folded_items: int = 0
    compactions: int = 0


class MemoryStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self, chat_id: str) -> Compaction | None:
        row = await run_plan(self._db, lambda _bind: compaction_plan(chat_id), write=False)
        return self._compaction(row)

    async def history(
        self, chat: ChatSession
    ) -> tuple[Compaction | None, list[tuple[int, dict[str, Any]]]]:
        """The chat's compaction and the ``(id, item)`` rows after it, in one read
        transaction: what a turn's model reads, never the whole chat."""
        # Plain SQL (storage/plain_sql.py): every turn reads its history.
        row, rows = await run_plan(
            self._db, lambda bind: history_plan(chat.session_id, bind), write=False
        )
        return self._compaction(row), rows

    @staticmethod
    def _compaction(row: Any) -> Compaction | None:
        if row is None:
            return None
        # A tuple of the columns of ``compaction_plan``, in order.
        through_item_id, summary, summary_tokens, folded_items, compactions = row
        return Compaction(
            int(through_item_id), summary, int(summary_tokens), int(folded_items), int(compactions)
        )

    async def save(self, chat_id: str, compaction: Compaction) -> bool:
        """Store ``compaction`` unless the stored one already reaches as far; whether it
        was stored."""
        table = chat_memory
        values = {
            "through_item_id": compaction.through_item_id,
            "summary": compaction.summary,
            "summary_tokens": compaction.summary_tokens,
            "folded_items": compaction.folded_items,
            "compactions": compaction.compactions,
            "updated_at": utcnow(),
        }
        async with self._db.session(write=True) as session:
            result = await session.execute(
                update(table)
                .where(table.c.chat_id == chat_id)
                .where(table.c.through_item_id < compaction.through_item_id)
                .values(**values)
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                exists = await session.scalar(
                    select(table.c.chat_id).where(table.c.chat_id == chat_id)
                )
                if exists is not None:
                    return False
                await session.execute(insert(table).values(chat_id=chat_id, **values))
            await session.commit()
        return True

    async def forget(self, chat_id: str) -> None:
        async with self._db.session(write=True) as session:
            await session.execute(delete(chat_memory).where(chat_memory.c.chat_id == chat_id))
            await session.commit()
