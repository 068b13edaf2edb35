"""Images and files in Open Responses input (``input_image``, ``input_file``): decoded and
checked here, then stored as attachments of the response's chat, like an upload.

Only inline content is accepted: ``image_url`` as a ``data:`` URL, ``file_data`` as base64
(bare or as a ``data:`` URL) with a ``filename``. Remote URLs (``image_url`` over http(s),
``file_url``) are refused with a 400 rather than fetched: fetching a URL a caller names
would let any caller make this server request hosts on its network (SSRF). ``file_id``
is refused too: this server has no files API.

The decoding is pure (``pending_upload``); ``store_uploads`` sniffs and limits every file
of the input before it stores any, so a bad one leaves nothing behind.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.attachments.service import AttachmentService, UploadRefused
from app.openresponses.errors import invalid
from storage.attachments import AttachmentRecord
from websocket.attachment_input import reference_part

# Where a decoded file waits in a converted content part until it is stored.
PENDING = "__switchboard_upload__"
_DATA_URL = re.compile(r"^data:(?P<type>[\w.+-]+/[\w.+-]+)?(?:;[\w-]+=[^;,]*)*;base64,", re.I)


@dataclass(frozen=True)
class PendingUpload:
    where: str  # the part's param, for errors: input[0].content[1]
    field: str  # the field holding the bytes: image_url or file_data
    name: str
    data: bytes
    image: bool


def _decode(value: str, param: str) -> bytes:
    match = _DATA_URL.match(value)
    encoded = value[match.end() :] if match else value
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise invalid("is not valid base64", param) from None


def pending_upload(part: dict[str, Any], where: str) -> dict[str, Any]:
    """The converted ``input_image`` / ``input_file`` part, holding its decoded bytes;
    ``OpenResponsesError`` for a part this server does not take."""
    if part["type"] == "input_image":
        url = part.get("image_url")
        if part.get("file_id") is not None or not url:
            raise invalid(
                "send the image inline: image_url as a data: URL "
                "(data:image/png;base64,…); file_id is not supported here",
                f"{where}.image_url",
            )
        if not url.startswith("data:"):
            raise invalid(
                "remote image URLs are not fetched; send the image inline as a data: URL "
                "(data:image/png;base64,…)",
                f"{where}.image_url",
                "unsupported_value",
            )
        if not _DATA_URL.match(url):
            raise invalid("must be a base64 data: URL (data:<type>;base64,…)", f"{where}.image_url")
        data = _decode(url, f"{where}.image_url")
        upload = PendingUpload(where, "image_url", "image", data, image=True)
        return {"type": "input_image", PENDING: upload}
    if part.get("file_url") is not None or part.get("file_id") is not None:
        raise invalid(
            "send the file inline as file_data (base64) with a filename; "
            "file_url and file_id are not supported here",
            f"{where}.file_url" if part.get("file_url") is not None else f"{where}.file_id",
            "unsupported_value",
        )
    if not part.get("file_data"):
        raise invalid("input_file needs file_data (base64) and a filename", f"{where}.file_data")
    data = _decode(str(part["file_data"]), f"{where}.file_data")
    name = str(part.get("filename") or "file")
    return {"type": "input_file", PENDING: PendingUpload(where, "file_data", name, data, False)}


def uploads_in(items: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], PendingUpload]]:
    found = []
    for item in items:
        content = item.get("content")
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and isinstance(part.get(PENDING), PendingUpload):
                found.append((part, part[PENDING]))
    return found


def check_uploads(service: AttachmentService, items: Sequence[dict[str, Any]]) -> None:
    """Every file of the input sniffed and limited, before anything is stored."""
    for _, upload in uploads_in(items):
        try:
            content_type, _, _ = service.check(upload.data, upload.name)
        except UploadRefused as exc:
            raise invalid(exc.message, f"{upload.where}.{upload.field}") from None
        if upload.image and not content_type.startswith("image/"):
            raise invalid(
                f"is not an image: its bytes are a {content_type} file; send it as input_file",
                f"{upload.where}.image_url",
            )


async def store_uploads(
    service: AttachmentService, user_id: str, chat_id: str, items: list[dict[str, Any]]
) -> list[AttachmentRecord]:
    """Store the input's files as attachments of ``chat_id`` and put their references in
    place (``check_uploads`` first); the stored records, for ``discard`` on failure."""
    stored: list[AttachmentRecord] = []
    try:
        for part, upload in uploads_in(items):
            name = upload.name
            if upload.image and name == "image":
                # Images come without a name: one from the sniffed type reads better.
                name = f"image.{service.check(upload.data, name)[0].split('/')[1]}"
            record = await service.upload(user_id, chat_id, name, upload.data)
            stored.append(record)
            part.clear()
            part.update(reference_part(record))
    except BaseException:
        await service.discard(stored)
        raise
    return stored
