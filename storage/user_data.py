"""All of one user's data: exported as JSON, or deleted, for the admin CLI.

Every table is either the user's (``USER_TABLES``, by ``user_id``), a chat's
(``CHAT_TABLES``, by ``chat_id`` of the user's chats) or ``users`` itself; a test checks
that this covers every table of ``storage.models``, so a new table has to be placed here
before it can hold a user's data that ``users delete`` would leave behind.

Deletion is explicit, children first, in one transaction, rather than trusting
``ON DELETE CASCADE``: ``chat_events`` and ``approvals`` name their turn without a foreign
key, and an explicit list is what the test can hold against the schema. Attachments'
bytes live outside the database (``storage.blobs``); ``delete_user`` removes them after
their rows, and the export lists their metadata (names, types, sizes, hashes).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Table, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.blobs import BlobStore
from storage.engine import Database
from storage.models import (
    api_tokens,
    approvals,
    attachments,
    chat_events,
    chat_memory,
    chat_search,
    chats,
    connected_accounts,
    conversation_items,
    feedback,
    open_responses,
    paused_turns,
    rap_subscriptions,
    turns,
    user_identities,
    users,
)

# Children before parents: the order deletion runs in.
CHAT_TABLES: tuple[Table, ...] = (
    approvals,
    paused_turns,
    open_responses,
    rap_subscriptions,
    # Metadata only: the bytes are in the blob store, which delete_user empties of them.
    attachments,
    chat_memory,
    conversation_items,
    chat_events,
    # Derived from chats and turns (a search index), so exported too: it is their text.
    chat_search,
    # The user's ratings of their chats' answers (one chat's owner rates its turns).
    feedback,
    turns,
)
USER_TABLES: tuple[Table, ...] = (chats, connected_accounts, api_tokens, user_identities)
# Columns never exported: a token's hash would let it be tried offline; stored account
# credentials are secrets (encrypted with the server's key), not the person's content.
WITHHELD: Mapping[str, frozenset[str]] = {
    "api_tokens": frozenset({"token_hash"}),
    "connected_accounts": frozenset({"credentials"}),
}


def _jsonable(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


async def _user_id(session: AsyncSession, name: str) -> str | None:
    return await session.scalar(select(users.c.id).where(users.c.name == name))


def _owned(table: Table, user_id: str) -> Any:
    """The WHERE clause picking ``user_id``'s rows of ``table``."""
    if table in USER_TABLES:
        return table.c.user_id == user_id
    their_chats = select(chats.c.id).where(chats.c.user_id == user_id)
    return table.c.chat_id.in_(their_chats)


async def export_user(db: Database, name: str) -> dict[str, Any] | None:
    """The user's rows of every table, as JSON-ready dicts; None for an unknown user."""
    async with db.session() as session:
        user_id = await _user_id(session, name)
        if user_id is None:
            return None
        user = (await session.execute(select(users).where(users.c.id == user_id))).one()
        tables: dict[str, list[dict[str, object]]] = {}
        for table in (*USER_TABLES, *CHAT_TABLES):
            withheld = WITHHELD.get(table.name, frozenset())
            columns = [column for column in table.c if column.name not in withheld]
            order = list(table.primary_key.columns)
            rows = (
                await session.execute(
                    select(*columns).where(_owned(table, user_id)).order_by(*order)
                )
            ).all()
            tables[table.name] = [
                {key: _jsonable(value) for key, value in row._mapping.items()} for row in rows
            ]
    return {
        "user": {key: _jsonable(value) for key, value in user._mapping.items()},
        "withheld": {table: sorted(columns) for table, columns in WITHHELD.items()},
        "tables": tables,
    }


async def delete_user(
    db: Database, name: str, blobs: BlobStore | None = None
) -> dict[str, int] | None:
    """Delete the user and every row of theirs; the count per table, None if unknown.
    ``blobs``: the store of their attachments' bytes, emptied of them once the rows are
    gone (without it, the caller deletes them)."""
    async with db.session(write=True) as session:
        user_id = await _user_id(session, name)
        if user_id is None:
            return None
        keys = list(
            (
                await session.scalars(
                    select(attachments.c.blob_key).where(_owned(attachments, user_id))
                )
            ).all()
        )
        counts: dict[str, int] = {}
        for table in (*CHAT_TABLES, *USER_TABLES):
            result = await session.execute(delete(table).where(_owned(table, user_id)))
            counts[table.name] = int(result.rowcount)  # type: ignore[attr-defined]
        await session.execute(delete(users).where(users.c.id == user_id))
        counts["users"] = 1
        await session.commit()
    if blobs is not None:
        await blobs.delete(keys)
    return counts


async def count_rows(db: Database, name: str) -> dict[str, int]:
    """How many rows of each table belong to the user named ``name`` (0s if unknown)."""
    async with db.session() as session:
        user_id = await _user_id(session, name) or ""
        counts = {}
        for table in (*CHAT_TABLES, *USER_TABLES):
            counts[table.name] = int(
                await session.scalar(
                    select(func.count()).select_from(table).where(_owned(table, user_id))
                )
                or 0
            )
        counts["users"] = int(
            await session.scalar(select(func.count()).where(users.c.id == user_id)) or 0
        )
    return counts
