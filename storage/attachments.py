"""Attachments' metadata: one row per file uploaded into a chat (the bytes are in a
``storage.blobs.BlobStore``, under ``blob_key``).

Every lookup is by owner: an attachment of another user's chat behaves exactly like one
that does not exist. An attachment belongs to one chat; a prompt may only refer to the
attachments of its own chat (``for_prompt``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, delete, select, update

from storage.engine import Database
from storage.models import attachments, chats


@dataclass(frozen=True)
class AttachmentRecord:
    id: str
    chat_id: str
    name: str
    content_type: str
    size: int
    sha256: str
    width: int | None
    height: int | None
    blob_key: str
    turn_id: str | None
    created_at: datetime

    def summary(self) -> dict[str, Any]:
        """What a client sees of it (the upload's answer, the ``user_prompt`` payload)."""
        return {
            "id": self.id,
            "name": self.name,
            "content_type": self.content_type,
            "size": self.size,
            "width": self.width,
            "height": self.height,
        }


class AttachmentProblem(LookupError):
    """A prompt's attachment id that is not one of the chat's attachments; ``message``
    names it and is safe to send (another user's id reads like an unknown one)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def new_attachment_id() -> str:
    return f"att_{uuid.uuid4().hex}"


def new_blob_key() -> str:
    key = uuid.uuid4().hex
    return f"{key[:2]}/{key}"


def _record(row: Row[Any]) -> AttachmentRecord:
    return AttachmentRecord(**{column.name: row._mapping[column.name] for column in attachments.c})


class AttachmentRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, record: AttachmentRecord) -> None:
        async with self._db.session(write=True) as session:
            values = {column.name: getattr(record, column.name) for column in attachments.c}
            await session.execute(attachments.insert().values(**values))
            await session.commit()

    async def get(self, user_id: str, attachment_id: str) -> AttachmentRecord | None:
        """The user's attachment (of any of their chats), or None."""
        query = (
            select(attachments)
            .join(chats, chats.c.id == attachments.c.chat_id)
            .where(attachments.c.id == attachment_id, chats.c.user_id == user_id)
        )
        async with self._db.session() as session:
            row = (await session.execute(query)).one_or_none()
        return _record(row) if row is not None else None

    async def by_ids(self, ids: Sequence[str]) -> dict[str, AttachmentRecord]:
        """Records by id, whoever owns them: for the model input, whose references the
        server itself wrote after checking them (``for_prompt``, or an upload of the
        request's own); a client can name no reference. Missing ids are simply absent."""
        if not ids:
            return {}
        query = select(attachments).where(attachments.c.id.in_(list(ids)))
        async with self._db.session() as session:
            rows = (await session.execute(query)).all()
        return {record.id: record for record in map(_record, rows)}

    async def for_prompt(
        self, user_id: str, chat_id: str, ids: Sequence[str]
    ) -> list[AttachmentRecord]:
        """The chat's attachments named by a prompt, in the prompt's order.

        Raises ``AttachmentProblem`` for a repeated id, or an id that is no attachment
        of this chat of this user's (made up, deleted, another chat's, another user's).
        """
        seen: set[str] = set()
        for attachment_id in ids:
            if attachment_id in seen:
                raise AttachmentProblem(f"attachment '{attachment_id}' is listed twice")
            seen.add(attachment_id)
        if not ids:
            return []
        query = (
            select(attachments)
            .join(chats, chats.c.id == attachments.c.chat_id)
            .where(
                attachments.c.id.in_(list(ids)),
                attachments.c.chat_id == chat_id,
                chats.c.user_id == user_id,
            )
        )
        async with self._db.session() as session:
            found = {record.id: record for record in map(_record, await session.execute(query))}
        for attachment_id in ids:
            if attachment_id not in found:
                raise AttachmentProblem(
                    f"no attachment '{attachment_id}' in this chat; upload it to this chat "
                    "first (POST /api/chats/{chat_id}/attachments)"
                )
        return [found[attachment_id] for attachment_id in ids]

    async def delete_ids(self, ids: Sequence[str]) -> None:
        async with self._db.session(write=True) as session:
            await session.execute(delete(attachments).where(attachments.c.id.in_(list(ids))))
            await session.commit()

    async def move(self, ids: Sequence[str], chat_id: str) -> None:
        """Give attachments to another chat of the same user (a response that forked)."""
        if not ids:
            return
        async with self._db.session(write=True) as session:
            await session.execute(
                update(attachments).where(attachments.c.id.in_(list(ids))).values(chat_id=chat_id)
            )
            await session.commit()

    async def blob_keys_of_chat(self, chat_id: str) -> list[str]:
        query = select(attachments.c.blob_key).where(attachments.c.chat_id == chat_id)
        async with self._db.session() as session:
            return list((await session.scalars(query)).all())

    async def delete_unsent_before(self, cutoff: datetime) -> list[str]:
        """Forget attachments uploaded before ``cutoff`` that no prompt ever named; their
        blob keys, for the caller to delete from the blob store."""
        stale = (attachments.c.turn_id.is_(None), attachments.c.created_at < cutoff)
        async with self._db.session(write=True) as session:
            keys = list((await session.scalars(select(attachments.c.blob_key).where(*stale))).all())
            await session.execute(delete(attachments).where(*stale))
            await session.commit()
        return keys
