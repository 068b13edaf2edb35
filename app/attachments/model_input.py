"""Attachments in the model's input: small references in the stored conversation,
expanded into content parts right before each model call.

The prompt's user message carries one reference part per attachment (``reference_part``:
an ``input_image`` or ``input_file`` whose URL or file id is ``switchboard-attachment:<id>``).
(``websocket.attachment_input``). That is what the chat's history stores, so a 10 MB PDF is not copied into every
conversation item and every later turn still shows it to the model. ``expand`` (the run
config's ``call_model_input_filter``, after the vendor filter) replaces each reference
with a line that names it (``[Attachment: photo.png (PNG image, …)]``) and its content:

- an image: ``input_image`` with a ``data:`` URL (the Responses API's inline form; the
  Agents SDK maps it to an ``image_url`` part for Chat Completions servers);
- a PDF: ``input_file`` with ``file_data`` (a base64 ``data:`` URL) and ``filename``
  (the SDK maps it to a ``file`` part for Chat Completions);
- a text file: its text, fenced as data like any outside text (connectors.untrusted), so
  instructions inside it are not taken as the person's; cut at ``MAX_QUOTED_CHARS``.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, cast

from agents import TResponseInputItem
from agents.run_config import CallModelData, ModelInputData

from app.attachments.describe import attachment_line, summary
from app.attachments.sniff import IMAGE_TYPES, TEXT_TYPES
from connectors.untrusted import fence, strip_invisible
from storage.attachments import AttachmentRecord, AttachmentRepository
from storage.blobs import BlobMissing, BlobStore
from websocket.attachment_input import REFERENCE

MAX_QUOTED_CHARS = 100_000

InputFilter = Callable[[CallModelData[Any]], ModelInputData | Awaitable[ModelInputData]]


def referenced_id(part: Any) -> str | None:
    if not isinstance(part, dict):
        return None
    value = part.get("image_url") if part.get("type") == "input_image" else part.get("file_id")
    if part.get("type") in ("input_image", "input_file") and isinstance(value, str):
        return value.removeprefix(REFERENCE) if value.startswith(REFERENCE) else None
    return None


def _parts(item: Any) -> list[Any]:
    content = item.get("content") if isinstance(item, dict) else None
    return content if isinstance(content, list) else []


def referenced_ids(items: Iterable[Any]) -> list[str]:
    found: list[str] = []
    for item in items:
        for part in _parts(item):
            attachment_id = referenced_id(part)
            if attachment_id is not None and attachment_id not in found:
                found.append(attachment_id)
    return found


def _data_url(content_type: str, data: bytes) -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}"


def content_parts(record: AttachmentRecord, data: bytes) -> list[dict[str, Any]]:
    """What the model reads for one attachment (pure)."""
    line = attachment_line(
        summary(record.name, record.content_type, record.size, record.width, record.height)
    )
    if record.content_type in IMAGE_TYPES:
        image = {
            "type": "input_image",
            "image_url": _data_url(record.content_type, data),
            "detail": "auto",
        }
        return [{"type": "input_text", "text": line}, image]
    if record.content_type in TEXT_TYPES:
        text = strip_invisible(data.decode("utf-8", errors="replace"))
        if len(text) > MAX_QUOTED_CHARS:
            text = text[:MAX_QUOTED_CHARS]
            line += f"\n(only its first {MAX_QUOTED_CHARS:,} characters follow)"
        return [{"type": "input_text", "text": f"{line}\n{fence(text, 'attachment')}"}]
    document = {
        "type": "input_file",
        "file_data": _data_url(record.content_type, data),
        "filename": record.name,
    }
    return [{"type": "input_text", "text": line}, document]


def _gone() -> list[dict[str, Any]]:
    return [{"type": "input_text", "text": "[Attachment: no longer available]"}]


def expand_items(
    items: list[Any], loaded: dict[str, tuple[AttachmentRecord, bytes]]
) -> list[TResponseInputItem]:
    """``items`` with every reference part replaced by its content (pure)."""
    expanded: list[TResponseInputItem] = []
    for item in items:
        parts = _parts(item)
        if not any(referenced_id(part) is not None for part in parts):
            expanded.append(item)
            continue
        content: list[Any] = []
        for part in parts:
            attachment_id = referenced_id(part)
            if attachment_id is None:
                content.append(part)
            elif attachment_id in loaded:
                content.extend(content_parts(*loaded[attachment_id]))
            else:
                content.extend(_gone())
        expanded.append(cast(TResponseInputItem, {**item, "content": content}))
    return expanded


class AttachmentExpander:
    """Loads what the input refers to and expands it (``__call__`` is an input filter)."""

    def __init__(self, repo: AttachmentRepository, blobs: BlobStore) -> None:
        self.repo, self.blobs = repo, blobs

    async def load(self, ids: list[str]) -> dict[str, tuple[AttachmentRecord, bytes]]:
        records = await self.repo.by_ids(ids)

        async def fetch(record: AttachmentRecord) -> tuple[AttachmentRecord, bytes] | None:
            try:
                return record, await self.blobs.get(record.blob_key)
            except BlobMissing:
                return None

        fetched = await asyncio.gather(*(fetch(record) for record in records.values()))
        return {pair[0].id: pair for pair in fetched if pair is not None}

    async def expand(self, items: list[Any]) -> list[TResponseInputItem]:
        ids = referenced_ids(items)
        if not ids:
            return items
        return expand_items(items, await self.load(ids))

    def after(self, first: InputFilter | None) -> InputFilter:
        """An input filter: ``first`` (the run config's own), then the expansion."""

        async def run(data: CallModelData[Any]) -> ModelInputData:
            model_data = data.model_data
            if first is not None:
                result = first(data)
                model_data = await result if isinstance(result, Awaitable) else result
            return ModelInputData(
                input=await self.expand(model_data.input), instructions=model_data.instructions
            )

        return run
