"""One user's view of the chats: every query is filtered by the owner.

Another user's chat behaves as if it did not exist (``get`` → None, ``delete`` → False,
the rest → ``ChatNotFound``), except in ``get_or_create``: there the id is taken, and
``ChatForbidden`` tells the caller to pick another.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, delete, exists, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.engine import Database, rowcount
from storage.errors import ChatForbidden, ChatNotFound
from storage.events import select_events, select_turns
from storage.models import chats, turns
from storage.plain_sql import chat_plan, run_plan, title_plan
from storage.records import ChatRecord, EventRecord, TurnRecord, chat_from_row

MAX_CHAT_ID_CHARS = 64
MAX_PAGE = 500


class ChatRepository:
    def __init__(self, db: Database, user_id: str) -> None:
        self._db = db
        self.user_id = user_id

    async def get_or_create(self, chat_id: str) -> ChatRecord:
        """The user's chat ``chat_id``, created empty if no one has it yet.

        Raises ``ChatForbidden`` when the id belongs to another user and ``ValueError``
        for an empty or over-long id.
        """
        if not chat_id or len(chat_id) > MAX_CHAT_ID_CHARS:
            raise ValueError(f"chat id must be 1 to {MAX_CHAT_ID_CHARS} characters")
        # Plain SQL (storage/plain_sql.py): every socket opens its chat this way. A read
        # first, so opening an existing chat never waits for the write lock.
        chat: ChatRecord | None = await run_plan(
            self._db, lambda bind: chat_plan(chat_id, None, bind), write=False
        )
        if chat is None:
            # Two sockets may open the same new chat at once: one insert wins, both read
            # the winner back.
            chat = await run_plan(self._db, lambda bind: chat_plan(chat_id, self.user_id, bind))
        assert chat is not None, "a chat is there once inserted"
        if chat.user_id != self.user_id:
            raise ChatForbidden(chat_id)
        return chat

    async def get(self, chat_id: str) -> ChatRecord | None:
        async with self._db.session() as session:
            row = (await session.execute(self._owned(chat_id))).one_or_none()
        return chat_from_row(row) if row is not None else None

    async def list(
        self, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[ChatRecord], str | None]:
        """A page of the user's chats that have a prompt, most recently active first.

        Returns ``(chats, next_cursor)``; ``next_cursor`` is None on the last page.
        Raises ``ValueError`` for a ``cursor`` this method did not produce.
        """
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
        query = select(chats).where(chats.c.user_id == self.user_id, has_prompt())
        if cursor is not None:
            updated_at, chat_id = decode_cursor(cursor)
            # Keyset pagination on (updated_at, id): stable however many chats exist.
            query = query.where(tuple_(chats.c.updated_at, chats.c.id) < (updated_at, chat_id))
        query = query.order_by(chats.c.updated_at.desc(), chats.c.id.desc()).limit(limit + 1)
        async with self._db.session() as session:
            rows = (await session.execute(query)).all()
        page = [chat_from_row(row) for row in rows[:limit]]
        more = len(rows) > limit
        return page, encode_cursor(page[-1]) if more else None

    async def delete(self, chat_id: str) -> bool:
        """Delete the chat with its turns, events and conversation items (FK cascade)."""
        async with self._db.session(write=True) as session:
            result = await session.execute(
                delete(chats).where(chats.c.id == chat_id, chats.c.user_id == self.user_id)
            )
            await session.commit()
        return bool(rowcount(result))

    async def set_title(self, chat_id: str, title: str | None) -> None:
        async with self._db.session(write=True) as session:
            result = await session.execute(
                update(chats)
                .where(chats.c.id == chat_id, chats.c.user_id == self.user_id)
                .values(title=title)
            )
            await session.commit()
        if not rowcount(result):
            raise ChatNotFound(chat_id)

    async def title_if_untitled(self, chat_id: str, title: str) -> bool:
        """Give the chat ``title`` unless it has one (a person may have named it while the
        title was being made); whether it did. One statement, so the two cannot race."""
        changed: bool = await run_plan(
            self._db, lambda _bind: title_plan(chat_id, self.user_id, title)
        )
        return changed

    # builtins.list: inside this class, ``list`` is the method above.
    async def turns(self, chat_id: str) -> builtins.list[TurnRecord]:
        """The chat's turns, oldest first."""
        async with self._db.session() as session:
            await self._require_owned(session, chat_id)
            return await select_turns(session, chat_id)

    async def events(
        self, chat_id: str, after_seq: int = 0, limit: int | None = None
    ) -> builtins.list[EventRecord]:
        """Persisted events with ``seq > after_seq``, in order (the REST replay)."""
        async with self._db.session() as session:
            await self._require_owned(session, chat_id)
            return await select_events(session, chat_id, after_seq, limit)

    def _owned(self, chat_id: str) -> Select[Any]:
        return select(chats).where(chats.c.id == chat_id, chats.c.user_id == self.user_id)

    async def _require_owned(self, session: AsyncSession, chat_id: str) -> None:
        found = await session.scalar(
            select(chats.c.id).where(chats.c.id == chat_id, chats.c.user_id == self.user_id)
        )
        if found is None:
            raise ChatNotFound(chat_id)


def has_prompt() -> ColumnElement[bool]:
    """A chat worth listing: it has a prompt. Opening a chat creates its row (the socket
    needs it), and a send that never reached the server leaves it empty: such a chat is
    no "New chat" entry in anyone's sidebar. Served by ix_turns_chat_seq."""
    return exists().where(turns.c.chat_id == chats.c.id)


def encode_cursor(chat: ChatRecord) -> str:
    raw = json.dumps({"u": chat.updated_at.isoformat(), "i": chat.id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        updated_at = datetime.fromisoformat(data["u"])
        chat_id = data["i"]
        if updated_at.tzinfo is None or not isinstance(chat_id, str):
            raise ValueError("malformed")
    except (binascii.Error, ValueError, TypeError, KeyError, UnicodeDecodeError):
        raise ValueError(
            "invalid cursor: pass back the next_cursor value of a previous page unchanged"
        ) from None
    return updated_at.astimezone(UTC), chat_id
