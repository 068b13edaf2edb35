"""RAP over HTTP: where remote tools POST their results, and the chat's subscriptions.

``POST /rap/callback?token=…``               a ``tool_result`` (or ``oauth``) message for one
                                             waiting tool call (docs/rap.md)
``GET /api/chats/{chat_id}/rap-subscriptions`` the subscriptions recorded on a chat (owner)

A callback is checked in this order, and nothing unchecked reaches a conversation:
its token (401: unknown, forged or long expired), its signature when the server has a
``secret`` (401), its body (415, 413, 400), its ``group_id``/``id`` against the call the
token was issued for (404: logged and discarded, docs/rap.md), then delivered once: a repeat
of the accepted result is answered 200 and ignored, a result for a call that timed out
410. Log lines never carry the token or the result text.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Literal

from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from app.api_auth import needs_user, signed_in
from app.api_docs import Answer, Operation, Query, documented
from app.api_json import rfc3339
from app.api_models import (
    CallbackAccepted,
    ErrorBody,
    Subscription,
    SubscriptionList,
    json_answer,
)
from app.errors import ApiError
from app.request_input import chat_id_param
from app.services import services_of
from connectors.rap.config import CallbackMessage
from connectors.rap.pending import Delivery
from connectors.rap.runtime import CALLBACK_PATH
from connectors.rap.signing import SIGNATURE_HEADER, verify
from storage.chats import ChatRepository
from storage.rap import SubscriptionRepository

logger = logging.getLogger("switchboard.rap")

# A result's text may be up to 1 MB (connectors.rap.config), plus its display hints.
MAX_CALLBACK_BYTES = 4 * 1024 * 1024
_MESSAGE = TypeAdapter(CallbackMessage)
_DELIVERED: dict[Delivery, Literal["accepted", "duplicate", "ignored"]] = {
    Delivery.ACCEPTED: "accepted",
    Delivery.DUPLICATE: "duplicate",
    Delivery.CONFLICT: "ignored",
}


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_CALLBACK_BYTES:
        raise ApiError(
            413,
            "invalid_request",
            f"the body is over {MAX_CALLBACK_BYTES} bytes; shorten the result",
        )
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_CALLBACK_BYTES:
            raise ApiError(
                413,
                "invalid_request",
                f"the body is over {MAX_CALLBACK_BYTES} bytes; shorten the result",
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    return f"{where}: {first['msg']}"


@documented(
    "POST",
    Operation(
        summary="A RAP server posts a waiting tool call's result (docs/rap.md)",
        tag="rap",
        signed_in=False,
        body=CallbackMessage,
        query=(
            Query(
                "token",
                {"type": "string", "minLength": 1},
                "The callback token of the invocation's callback_url",
                required=True,
            ),
        ),
        answers={
            200: Answer(
                "Delivered once; a repeat is a duplicate, a different one ignored", CallbackAccepted
            ),
            400: Answer("Not a tool_result or oauth message, or a wrong call_id", ErrorBody),
            401: Answer("Missing, unknown or expired token, or a bad signature", ErrorBody),
            404: Answer(
                "No RAP tools here, or no pending call with this group_id and id", ErrorBody
            ),
            410: Answer("The call is over (timed out); the result was discarded", ErrorBody),
            413: Answer("The body is too large", ErrorBody),
            415: Answer("Not Content-Type: application/json", ErrorBody),
        },
    ),
)
async def rap_callback(request: Request) -> Response:
    services = services_of(request)
    runtime = services.rap
    if runtime is None:
        raise ApiError(404, "not_found", "this server has no RAP tools configured")
    token = request.query_params.get("token")
    if not token:
        raise ApiError(
            401,
            "unauthorized",
            "missing callback token: POST to the invocation's callback_url exactly as it was given",
        )
    call = runtime.calls.find(token)
    if call is None:
        logger.warning("RAP callback with an unknown token discarded")
        raise ApiError(
            401,
            "unauthorized",
            "unknown or expired callback token: use the "
            "callback_url of the invocation you are answering",
        )
    log_extra = {
        "chat_id": call.group_id,
        "turn_id": call.turn_id,
        "rap_server": call.server,
        "operation": call.operation,
    }
    body = await _body(request)
    server = runtime.servers.get(call.server)
    if server is not None and server.config.secret is not None:
        secret = server.config.secret.get_secret_value()
        if not verify(secret, body, request.headers.get(SIGNATURE_HEADER)):
            logger.warning("RAP callback with a bad signature discarded", extra=log_extra)
            raise ApiError(
                401,
                "unauthorized",
                f"missing, stale or wrong {SIGNATURE_HEADER}: "
                "sign the exact body with the server's secret",
            )
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(415, "invalid_request", "send the message as Content-Type: application/json")
    try:
        message = _MESSAGE.validate_python(json.loads(body))
    except ValueError as exc:
        # ValidationError is a ValueError; JSON decoding errors too.
        detail = _first_error(exc) if isinstance(exc, ValidationError) else "not valid JSON"
        raise ApiError(
            400,
            "invalid_request",
            f"not a RAP tool_result or oauth message "
            f"({detail}); nothing was delivered, send it again fixed",
        ) from None
    if message.group_id != call.group_id or message.id != call.id:
        logger.warning("RAP callback for a call it was not issued for discarded", extra=log_extra)
        raise ApiError(
            404,
            "not_found",
            "no pending tool call with this group_id and id: echo the invocation's group_id and id",
        )
    if call.call_id is not None and message.call_id != call.call_id:
        raise ApiError(400, "invalid_request", "call_id must echo the invocation's call_id")
    fingerprint = hashlib.sha256(
        json.dumps(message.model_dump(mode="json"), sort_keys=True).encode()
    ).hexdigest()
    delivery = runtime.calls.deliver(call, message, fingerprint)
    if delivery is Delivery.GONE:
        logger.info("late RAP result discarded", extra=log_extra)
        raise ApiError(
            410,
            "not_found",
            "this tool call is over (it timed out or its turn stopped); the result was discarded",
        )
    if delivery is Delivery.CONFLICT:
        logger.warning(
            "a second, different RAP result for an answered call ignored", extra=log_extra
        )
    elif delivery is Delivery.DUPLICATE:
        logger.info("duplicate RAP result ignored", extra=log_extra)
    return json_answer(CallbackAccepted(status=_DELIVERED[delivery]))


@documented(
    "GET",
    Operation(
        summary="The RAP subscriptions recorded on a chat",
        tag="rap",
        answers={
            200: Answer("The chat's subscriptions", SubscriptionList),
            404: Answer("No such chat of this user's", ErrorBody),
        },
    ),
)
async def chat_subscriptions(request: Request) -> Response:
    user = signed_in(request)
    chat_id = chat_id_param(request)
    services = services_of(request)
    if await ChatRepository(services.db, user.id).get(chat_id) is None:
        raise ApiError(404, "not_found", "chat not found")
    found = await SubscriptionRepository(services.db).list(chat_id)
    listed = SubscriptionList(
        subscriptions=[
            Subscription(
                call_id=s.call_id,
                connector=s.connector,
                operation=s.operation,
                created_at=rfc3339(s.created_at) or "",
            )
            for s in found
        ]
    )
    return json_answer(listed)


def rap_routes() -> list[BaseRoute]:
    return [
        Route(CALLBACK_PATH, rap_callback, methods=["POST"]),
        Route(
            "/api/chats/{chat_id}/rap-subscriptions",
            chat_subscriptions,
            methods=["GET"],
            middleware=needs_user(),
        ),
    ]
