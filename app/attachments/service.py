"""Attachments of a user's chats: accept an upload (sniffed, limited), hand out its bytes,
and forget a chat's or a user's blobs when their rows go.

An upload either ends with a row and a blob, or with neither: the blob is written first
and removed again if the row cannot be. A row always has its blob, except after a crash
between a chat's delete and its blobs' (left in the store, never reachable again).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from app.attachments.sniff import Refused, clean_name, sniff
from storage.attachments import (
    AttachmentRecord,
    AttachmentRepository,
    new_attachment_id,
    new_blob_key,
)
from storage.blobs import BlobMissing, BlobStore
from storage.chats import ChatRepository
from storage.engine import Database
from storage.errors import ChatForbidden, ChatNotFound
from storage.models import utcnow

logger = logging.getLogger("switchboard.attachments")


class UploadRefused(ValueError):
    """The upload is not accepted; ``status`` (400, 413, 415) and a message to show."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _size(size: int) -> str:
    return f"{size / 1048576:.1f} MiB" if size >= 1048576 else f"{size:,} bytes"


@dataclass
class AttachmentService:
    db: Database
    blobs: BlobStore
    max_bytes: int
    types: frozenset[str]

    @property
    def repo(self) -> AttachmentRepository:
        return AttachmentRepository(self.db)

    def too_large(self, size: int) -> UploadRefused:
        return UploadRefused(
            413, f"the file is {_size(size)}; attachments may be at most {_size(self.max_bytes)}"
        )

    def check(self, data: bytes, name: str) -> tuple[str, int | None, int | None]:
        """The sniffed type and image size of an acceptable file, else ``UploadRefused``."""
        if len(data) > self.max_bytes:
            raise self.too_large(len(data))
        try:
            found = sniff(data, name)
        except Refused as exc:
            raise UploadRefused(415 if data else 400, exc.message) from None
        if found.content_type not in self.types:
            raise UploadRefused(
                415,
                f"{found.label}s ({found.content_type}) are not accepted here; accepted: "
                f"{', '.join(sorted(self.types))}",
            )
        return found.content_type, found.width, found.height

    async def upload(
        self, user_id: str, chat_id: str, name: str | None, data: bytes
    ) -> AttachmentRecord:
        """Store ``data`` as an attachment of the user's chat ``chat_id`` (created empty,
        as opening its socket would, if no one has it yet). Raises ``UploadRefused``, and
        ``ChatNotFound`` for another user's chat."""
        shown = clean_name(name)
        content_type, width, height = self.check(data, shown)
        try:
            await ChatRepository(self.db, user_id).get_or_create(chat_id)
        except ChatForbidden:
            raise ChatNotFound(chat_id) from None
        record = AttachmentRecord(
            id=new_attachment_id(),
            chat_id=chat_id,
            name=shown,
            content_type=content_type,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            width=width,
            height=height,
            blob_key=new_blob_key(),
            turn_id=None,
            created_at=utcnow(),
        )
        await self.blobs.put(record.blob_key, data)
        try:
            await self.repo.add(record)
        except BaseException:
            # The chat went meanwhile (or the database did): leave no blob behind.
            await self.blobs.delete([record.blob_key])
            raise
        return record

    async def content(self, user_id: str, attachment_id: str) -> tuple[AttachmentRecord, bytes]:
        """The user's attachment and its bytes; ``LookupError`` when there is none."""
        record = await self.repo.get(user_id, attachment_id)
        if record is None:
            raise LookupError(attachment_id)
        try:
            return record, await self.blobs.get(record.blob_key)
        except BlobMissing:
            logger.error("attachment without its blob", extra={"attachment_id": attachment_id})
            raise LookupError(attachment_id) from None

    async def discard(self, records: Sequence[AttachmentRecord]) -> None:
        """Undo uploads that will not be used (their turn did not start)."""
        if records:
            await self.repo.delete_ids([record.id for record in records])
            await self.forget([record.blob_key for record in records])

    async def forget(self, keys: Sequence[str]) -> None:
        """Delete blobs whose rows are gone; a failure is logged (the rows, which made them
        reachable, are already deleted)."""
        try:
            await self.blobs.delete(keys)
        except Exception:
            logger.exception("could not delete attachment blobs", extra={"count": len(keys)})
