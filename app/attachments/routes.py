"""REST routes of attachments: upload into a chat, read one back.

``POST /api/chats/{chat_id}/attachments`` takes a multipart form with one ``file`` part.
The body is read through a counter that stops at the size limit (plus room for the form's
own lines), whatever ``Content-Length`` says: a declared length over the limit is refused
before anything is read, and a body longer than it declared or than the limit is cut off
there. Content is served back with its sniffed type, ``nosniff`` and a sandboxing CSP,
and never as HTML; only images are ``inline`` (the UI shows them as previews: the image
itself, as no thumbnail is worth an image decoder on the server), anything else is a
download.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from urllib.parse import quote

from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from app.api_auth import needs_user, signed_in
from app.api_docs import Answer, Operation, documented
from app.api_json import rfc3339
from app.api_models import Attachment, AttachmentUpload, ErrorBody, json_answer
from app.attachments.service import UploadRefused
from app.attachments.sniff import IMAGE_TYPES, TEXT_TYPES
from app.errors import ApiError
from app.request_input import chat_id_param
from app.services import services_of
from storage.attachments import AttachmentRecord

# Room for the multipart boundary lines and part headers around the file.
FORM_OVERHEAD = 16 * 1024
ATTACHMENT_ID_MAX = 64
NOT_FOUND = Answer("No such attachment of this user's (another user's answers the same)", ErrorBody)


class _TooLarge(Exception):
    pass


def attachment_model(record: AttachmentRecord) -> Attachment:
    return Attachment(
        id=record.id,
        chat_id=record.chat_id,
        name=record.name,
        content_type=record.content_type,
        size=record.size,
        width=record.width,
        height=record.height,
        sha256=record.sha256,
        created_at=rfc3339(record.created_at) or "",
        sent=record.turn_id is not None,
    )


async def _limited(request: Request, limit: int) -> AsyncGenerator[bytes, None]:
    seen = 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > limit:
            raise _TooLarge
        yield chunk


async def _read_file(request: Request, max_bytes: int) -> tuple[str | None, bytes]:
    """The ``file`` part's name and bytes; ``UploadRefused`` for a body that is not one."""
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise UploadRefused(415, "send the file as multipart/form-data with one part named 'file'")
    limit = max_bytes + FORM_OVERHEAD
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise UploadRefused(
            413,
            f"the upload declares {int(declared):,} bytes; attachments may be at most "
            f"{max_bytes:,} bytes",
        )
    parser = MultiPartParser(request.headers, _limited(request, limit), max_files=1, max_fields=0)
    try:
        form = await parser.parse()
    except _TooLarge:
        raise UploadRefused(413, f"the upload is larger than {max_bytes:,} bytes") from None
    except MultiPartException as exc:
        raise UploadRefused(400, f"not a valid multipart form: {exc.message}") from None
    except ClientDisconnect:
        raise UploadRefused(400, "the upload was cut off before its end") from None
    try:
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise UploadRefused(400, "the form has no file part named 'file'")
        return upload.filename, await upload.read()
    finally:
        await form.close()


@documented(
    "POST",
    Operation(
        summary="Upload a file into a chat, to attach to a prompt",
        tag="attachments",
        body=AttachmentUpload,
        body_media_type="multipart/form-data",
        description=(
            "One file per request, in the part named file. Its type is sniffed from its "
            "bytes (PNG, JPEG, GIF, WebP, PDF, UTF-8 text, CSV, Markdown, JSON; "
            "SWITCHBOARD_ATTACHMENT_TYPES) and it may be at most "
            "SWITCHBOARD_ATTACHMENT_MAX_BYTES. A chat id no one has yet is created, as "
            "opening its socket would. Refer to the answer's id in the prompt frame's "
            "attachments. An attachment never sent is deleted with its chat."
        ),
        answers={
            201: Answer("Stored", Attachment),
            400: Answer("Not a form with one file part, or an empty file", ErrorBody),
            404: Answer("The chat id belongs to another user", ErrorBody),
            413: Answer("Larger than SWITCHBOARD_ATTACHMENT_MAX_BYTES", ErrorBody),
            415: Answer("Not a type accepted here (after sniffing)", ErrorBody),
        },
    ),
)
async def upload_attachment(request: Request) -> Response:
    user = signed_in(request)
    chat_id = chat_id_param(request)
    service = services_of(request).attachments
    try:
        name, data = await _read_file(request, service.max_bytes)
        record = await service.upload(user.id, chat_id, name, data)
    except UploadRefused as exc:
        raise ApiError(exc.status, "invalid_request", exc.message) from None
    return json_answer(attachment_model(record), status_code=201)


def _attachment_id(request: Request) -> str:
    value = str(request.path_params["attachment_id"])
    if not 1 <= len(value) <= ATTACHMENT_ID_MAX:
        raise ApiError(404, "not_found", "attachment not found")
    return value


@documented(
    "GET",
    Operation(
        summary="An attachment's details",
        tag="attachments",
        answers={200: Answer("The attachment", Attachment), 404: NOT_FOUND},
    ),
)
async def get_attachment(request: Request) -> Response:
    user = signed_in(request)
    record = await services_of(request).attachments.repo.get(user.id, _attachment_id(request))
    if record is None:
        raise ApiError(404, "not_found", "attachment not found")
    return json_answer(attachment_model(record))


def content_disposition(kind: str, name: str) -> str:
    """``kind; filename="…"; filename*=UTF-8''…``: an ASCII fallback and the real name."""
    fallback = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name
    )
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


@documented(
    "GET",
    Operation(
        summary="An attachment's bytes (images inline, as their own preview; else a download)",
        tag="attachments",
        answers={
            200: Answer(
                "The file, with its sniffed Content-Type",
                headers={
                    "Content-Disposition": "inline for images, attachment otherwise",
                    "X-Content-Type-Options": "nosniff",
                },
                media_type="application/octet-stream",
                also=sorted(IMAGE_TYPES | TEXT_TYPES | {"application/pdf"}),
            ),
            404: NOT_FOUND,
        },
    ),
)
async def attachment_content(request: Request) -> Response:
    user = signed_in(request)
    try:
        record, data = await services_of(request).attachments.content(
            user.id, _attachment_id(request)
        )
    except LookupError:
        raise ApiError(404, "not_found", "attachment not found") from None
    media_type = record.content_type
    if media_type in TEXT_TYPES:
        media_type += "; charset=utf-8"
    kind = "inline" if record.content_type in IMAGE_TYPES else "attachment"
    headers = {
        "Content-Disposition": content_disposition(kind, record.name),
        "X-Content-Type-Options": "nosniff",
        # Even opened directly, nothing in it may run or load anything.
        "Content-Security-Policy": "default-src 'none'; sandbox",
        "Cache-Control": "private, max-age=3600",
    }
    return Response(data, media_type=media_type, headers=headers)


def attachment_routes() -> list[BaseRoute]:
    signed_in_only = needs_user()
    return [
        Route(
            "/api/chats/{chat_id}/attachments",
            upload_attachment,
            methods=["POST"],
            middleware=signed_in_only,
        ),
        Route(
            "/api/attachments/{attachment_id}",
            get_attachment,
            methods=["GET"],
            middleware=signed_in_only,
        ),
        Route(
            "/api/attachments/{attachment_id}/content",
            attachment_content,
            methods=["GET"],
            middleware=signed_in_only,
        ),
    ]
