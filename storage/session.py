"""The Agents SDK ``Session`` protocol over ``conversation_items``.

The SDK reads the history before a run and appends the run's new items after it, so the
next turn of a chat sees everything the model saw and said before. One ``ChatSession``
per chat; it holds no state beyond its ids, so creating one per turn is cheap.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import delete, func, insert, select

from storage.engine import Database
from storage.errors import ChatNotFound
from storage.models import chat_memory, chats, conversation_items, utcnow
from storage.plain_sql import items_plan, newest_items_plan, run_plan

if TYPE_CHECKING:  # the SDK is heavy to import and only needed for the types
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings


class ChatSession:
    """Conversation history of one chat (``session_id`` is the chat id)."""

    def __init__(
        self, db: Database, chat_id: str, session_settings: SessionSettings | None = None
    ) -> None:
        self._db = db
        self.session_id: str = chat_id
        self.session_settings: SessionSettings | None = session_settings

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """All items oldest first, or the latest ``limit`` items (still oldest first).

        Without ``limit``, ``session_settings.limit`` applies, as in the SDK's sessions.
        """
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is None or limit < 0:  # negative: everything, like SQLiteSession
            rows = await self.get_rows()
            return cast("list[TResponseInputItem]", [item for _, item in rows])
        if limit == 0:
            return []
        chat_id = self.session_id
        newest: list[TResponseInputItem] = await run_plan(
            self._db, lambda bind: newest_items_plan(chat_id, limit, bind), write=False
        )
        return newest

    async def get_rows(self, after_id: int | None = None) -> list[tuple[int, dict[str, Any]]]:
        """``(id, item)`` of the items after ``after_id`` (all when None), oldest first:
        what a turn reads after the chat's stored compaction (storage/memory.py)."""
        chat_id, after = self.session_id, after_id or 0
        rows: list[tuple[int, dict[str, Any]]] = await run_plan(
            self._db, lambda bind: items_plan(chat_id, after, bind), write=False
        )
        return rows

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        now = utcnow()
        rows: list[dict[str, Any]] = [
            {"chat_id": self.session_id, "item": dict(item), "created_at": now} for item in items
        ]
        async with self._db.session(write=True) as session:
            exists = await session.scalar(select(chats.c.id).where(chats.c.id == self.session_id))
            if exists is None:
                raise ChatNotFound(self.session_id)
            # Rows go in in list order and ids ascend, so ORDER BY id replays the items in
            # the order the SDK produced them.
            await session.execute(insert(conversation_items), rows)
            await session.commit()

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (the SDK uses this to undo a failed step)."""
        table = conversation_items
        async with self._db.session(write=True) as session:
            # Lock the chat row so two pops cannot both return the same newest item
            # (PostgreSQL; SQLite serialises writers anyway).
            await session.execute(
                select(chats.c.id).where(chats.c.id == self.session_id).with_for_update()
            )
            newest = await session.scalar(
                select(func.max(table.c.id)).where(table.c.chat_id == self.session_id)
            )
            if newest is None:
                return None
            item = await session.scalar(select(table.c.item).where(table.c.id == newest))
            await session.execute(delete(table).where(table.c.id == newest))
            await session.commit()
        return item

    async def clear_session(self) -> None:
        async with self._db.session(write=True) as session:
            await session.execute(
                delete(conversation_items).where(conversation_items.c.chat_id == self.session_id)
            )
            # Its summary is of items that are gone.
            await session.execute(
                delete(chat_memory).where(chat_memory.c.chat_id == self.session_id)
            )
            await session.commit()


class TurnSession:
    """A ``ChatSession`` whose writes wait for the end of the turn.

    The SDK saves items after every model step; writing each batch would put a database
    round trip on the turn's critical path several times per turn. Instead the items are
    kept here and written with the turn's ``end_of_stream`` (``TurnUpdate.items``), in
    the same transaction. Reads see the stored history plus what is pending.

    ``history``, when given, reads the whole history instead of ``stored.get_items()``:
    the chat's summary and the items after it, fitted to the model (websocket.memory).
    ``stored_tail(limit)`` answers the SDK's reads of the last stored items from what
    ``history`` read (None: not known, ask the database).
    """

    def __init__(
        self,
        stored: ChatSession,
        history: Callable[[], Awaitable[list[dict[str, Any]]]] | None = None,
        stored_tail: Callable[[int], list[dict[str, Any]] | None] | None = None,
    ) -> None:
        self._stored = stored
        self._history = history
        self._stored_tail = stored_tail
        self.session_id: str = stored.session_id
        self.session_settings: SessionSettings | None = stored.session_settings
        self.pending: list[dict[str, Any]] = []

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        if limit is not None and limit >= 0:
            # Before each save the SDK reads the last few items (to make saving
            # idempotent); when the pending items cover them, the database is not asked.
            missing = limit - len(self.pending)
            stored = await self._tail(missing) if missing > 0 else []
            return (stored + self._pending_items)[-limit:] if limit else []
        if self._history is not None and limit is None:
            history = cast("list[TResponseInputItem]", await self._history())
            return history + self._pending_items
        stored = await self._stored.get_items(limit)
        return stored + self._pending_items

    async def _tail(self, limit: int) -> list[TResponseInputItem]:
        """The last ``limit`` stored items, from what the turn already read if it can."""
        known = self._stored_tail(limit) if self._stored_tail is not None else None
        if known is not None:
            return cast("list[TResponseInputItem]", known)
        return await self._stored.get_items(limit)

    @property
    def _pending_items(self) -> list[TResponseInputItem]:
        # Plain dicts, copied from what the SDK gave, handed back as the type it expects.
        return cast("list[TResponseInputItem]", self.pending)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        self.pending.extend(dict(item) for item in items)

    async def pop_item(self) -> TResponseInputItem | None:
        if self.pending:
            return cast("TResponseInputItem", self.pending.pop())
        return await self._stored.pop_item()

    async def clear_session(self) -> None:
        self.pending.clear()
        await self._stored.clear_session()

    def items_to_keep(self, completed: bool) -> tuple[dict[str, Any], ...]:
        """What the next turn's model reads of this one. A turn that failed or was stopped
        keeps every step it finished (an email it sent must not be forgotten), and a call
        left without a result is answered as interrupted."""
        if completed:
            return tuple(self.pending)
        return tuple(answer_unanswered(self.pending, INTERRUPTED))


# What the model reads for a call whose turn stopped before the call returned.
INTERRUPTED = (
    "Not completed: the turn stopped before this call returned a result, so it "
    "may or may not have run. Check before trying again."
)


def answer_unanswered(items: list[dict[str, Any]], note: str) -> list[dict[str, Any]]:
    """``items`` with an output holding ``note`` after every function call that has none
    (model APIs refuse a history with a call left unanswered)."""
    answered = {item.get("call_id") for item in items if item.get("type") == "function_call_output"}
    unanswered = [
        {"type": "function_call_output", "call_id": item.get("call_id"), "output": note}
        for item in items
        if item.get("type") == "function_call" and item.get("call_id") not in answered
    ]
    return [*items, *unanswered]
