"""``POST /v1/responses`` (Open Responses, docs/open-responses.md), ``GET
/v1/responses/{id}``, ``POST /v1/responses/compact`` and the WebSocket transport on
``/v1/responses`` (``app.openresponses.socket``).

Same authentication as the REST API (``Authorization: Bearer <token>`` in token mode, the
local user in local mode). Errors use the spec's shape and statuses
(``app.openresponses.errors``); a streamed response ends with ``data: [DONE]``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.authentication import AuthenticationError
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute

from app.api_auth import UsersUnavailable, needs_user, signed_in
from app.api_docs import Answer, Operation, documented
from app.api_models import OpenResponsesErrorBody, ResponseObject
from app.errors import DATABASE_UNAVAILABLE, ApiError
from app.openresponses.errors import OpenResponsesError, invalid
from app.openresponses.references import resolve_references
from app.openresponses.request import (
    MAX_BODY_BYTES,
    CompactRequest,
    CreateResponse,
    parse_compact,
    parse_request,
)
from app.openresponses.service import (
    LOST,
    StartedResponse,
    compact_response,
    http_error,
    start_response,
)
from app.openresponses.socket import responses_socket
from app.openresponses.stream import SSE_DONE, SSE_KEEPALIVE, sse
from app.openresponses.views import View, render_body, render_event, view_of
from app.request_input import JsonTooDeep, load_json, not_json_media_type
from app.services import services_of
from storage.errors import TurnInProgress
from storage.open_responses import ResponseRepository
from storage.records import UserRecord
from websocket.protocol import unstorable_at

logger = logging.getLogger("switchboard.openresponses")

KEEPALIVE_SECONDS = 15.0  # an SSE comment while tools run, so proxies keep the stream open


def _user(request: Request) -> UserRecord:
    try:
        return signed_in(request)
    except ApiError as exc:
        raise OpenResponsesError(
            "invalid_request", exc.message, code=exc.code, status=exc.status
        ) from None


def _auth_error(conn: HTTPConnection, exc: AuthenticationError) -> Response:
    """``app.api_auth``'s refusals in this API's error shape."""
    if isinstance(exc, UsersUnavailable):
        return _unexpected(exc.cause, conn)
    return OpenResponsesError("invalid_request", str(exc), code="forbidden", status=403).response()


async def _json_body(request: Request) -> object:
    wrong_type = not_json_media_type(request.headers.get("content-type"))
    if wrong_type is not None:
        raise OpenResponsesError(
            "invalid_request", wrong_type, code="unsupported_media_type", status=415
        )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise OpenResponsesError(
            "invalid_request",
            f"the body is over {MAX_BODY_BYTES} bytes",
            code="request_too_large",
            status=413,
        )
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise OpenResponsesError(
                "invalid_request",
                f"the body is over {MAX_BODY_BYTES} bytes",
                code="request_too_large",
                status=413,
            )
    try:
        return load_json(body)
    except JsonTooDeep as exc:
        raise invalid(str(exc), code="invalid_json") from None
    except ValueError:
        raise invalid("the body is not valid JSON", code="invalid_json") from None


async def _stream(
    started: StartedResponse, view: View = "switchboard", keepalive: float = KEEPALIVE_SECONDS
) -> AsyncIterator[str]:
    while True:
        try:
            event = await asyncio.wait_for(started.events.get(), keepalive)
        except TimeoutError:
            if started.lost and started.events.empty():
                yield sse(started.builder.error_event(LOST))
                yield SSE_DONE
                return
            yield SSE_KEEPALIVE
            continue
        if event is None:
            yield SSE_DONE
            return
        yield sse(render_event(event, view))


def _unexpected(exc: Exception, request: HTTPConnection) -> Response:
    if isinstance(exc, DATABASE_UNAVAILABLE):
        logger.warning("database unavailable: %s", type(exc).__name__)
        return OpenResponsesError(
            "server_error",
            "the database is unavailable; try again in a moment",
            status=503,
            headers={"Retry-After": "5"},
        ).response()
    logger.error("open responses request failed", exc_info=exc, extra={"path": request.url.path})
    return OpenResponsesError("server_error", "internal server error").response()


def _refused(words: str) -> Answer:
    return Answer(words, OpenResponsesErrorBody)


@documented(
    "POST",
    Operation(
        summary="Create a response (Open Responses; docs/open-responses.md)",
        tag="open-responses",
        description="With stream: true the answer is Server-Sent Events (the spec's "
        "streaming events, then data: [DONE]).",
        errors="open_responses",
        body=CreateResponse,
        answers={
            200: Answer(
                "The response object (completed, incomplete, or waiting for an approval), or "
                "its event stream",
                ResponseObject,
                also=("text/event-stream",),
            ),
            400: _refused("A request the spec or this server does not take"),
            404: _refused("A referenced response or conversation that does not exist"),
            409: _refused("The conversation is busy with another turn"),
            413: _refused("The body is too large"),
            415: _refused("A body sent as another media type than JSON"),
            429: _refused("Rate limited"),
            500: _refused("The model failed"),
        },
    ),
)
async def create_response(request: Request) -> Response:
    services = services_of(request)
    try:
        user = _user(request)
        view = view_of(request.headers)
        body = await resolve_references(await _json_body(request), services.db, user.id)
        parsed = parse_request(body)
        started = await start_response(services, user, parsed)
    except OpenResponsesError as exc:
        return exc.response()
    except TurnInProgress:
        return OpenResponsesError(
            "invalid_request",
            "this conversation is busy with another turn; try again when it ends",
            code="conversation_busy",
            status=409,
        ).response()
    except Exception as exc:
        return _unexpected(exc, request)
    if parsed.stream:
        return StreamingResponse(
            _stream(started, view),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    ended = await started.outcome()
    if ended is None:
        logger.error(
            "a response's turn ended without finishing it", extra={"response_id": started.id}
        )
        return OpenResponsesError("server_error", LOST).response()
    outcome, body = ended
    # Completed (or paused: it asks for approval), or incomplete (its answer cut off by
    # the token budget) is the object itself; a failure is the spec's error.
    if body.get("status") not in ("completed", "incomplete"):
        return http_error(started.id, outcome).response()
    return JSONResponse(render_body(body, view))


@documented(
    "POST",
    Operation(
        summary="Compact a conversation's input (Open Responses)",
        tag="open-responses",
        errors="open_responses",
        body=CompactRequest,
        answers={
            200: Answer("The compacted input", dict[str, Any]),
            400: _refused("A request the spec or this server does not take"),
            404: _refused("A referenced response that does not exist"),
            413: _refused("The body is too large"),
            415: _refused("A body sent as another media type than JSON"),
        },
    ),
)
async def compact(request: Request) -> Response:
    try:
        user = _user(request)
        parsed = parse_compact(await _json_body(request))
        return JSONResponse(await compact_response(services_of(request), user, parsed))
    except OpenResponsesError as exc:
        return exc.response()
    except Exception as exc:
        return _unexpected(exc, request)


@documented(
    "GET",
    Operation(
        summary="A stored response (Open Responses)",
        tag="open-responses",
        errors="open_responses",
        answers={
            200: Answer("The response object", ResponseObject),
            400: _refused("An id the database cannot hold"),
            404: _refused("No such response of this user's"),
        },
    ),
)
async def get_response(request: Request) -> Response:
    try:
        user = _user(request)
        view = view_of(request.headers)
    except OpenResponsesError as exc:
        return exc.response()
    response_id = request.path_params["response_id"]
    unstorable = unstorable_at(response_id)
    if unstorable is not None:  # the database could not even compare it
        return invalid(f"response_id {unstorable[1]}", "response_id").response()
    try:
        stored = await ResponseRepository(services_of(request).db, user.id).get(response_id)
    except Exception as exc:
        return _unexpected(exc, request)
    if stored is None or stored.body is None:
        return OpenResponsesError(
            "not_found", f"no response {response_id!r}", param="response_id"
        ).response()
    return JSONResponse(render_body(stored.body, view))


def open_responses_routes() -> list[BaseRoute]:
    signed_in_only = needs_user(on_error=_auth_error)
    return [
        Route("/v1/responses", create_response, methods=["POST"], middleware=signed_in_only),
        # Before /v1/responses/{response_id}, which would take "compact" for an id.
        Route("/v1/responses/compact", compact, methods=["POST"], middleware=signed_in_only),
        WebSocketRoute("/v1/responses", responses_socket),
        Route(
            "/v1/responses/{response_id}",
            get_response,
            methods=["GET"],
            middleware=signed_in_only,
        ),
    ]
