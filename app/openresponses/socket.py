"""The WebSocket transport of ``/v1/responses`` (the Open Responses spec, "WebSocket
Transport"; docs/open-responses.md).

A client opens ``/v1/responses`` as a WebSocket, with the same ``Authorization`` as over
HTTP, and sends one JSON message per response: ``{"type": "response.create", …}`` with
the fields of a ``POST /v1/responses`` body (``stream`` and ``stream_options``, which are
HTTP's, are left out or ignored; ``"stream": false`` is refused). Each response's events come back as JSON messages,
the very events of a streamed HTTP response, ending with its terminal event. Messages
are handled one at a time: a second ``response.create`` waits for the first response to
end.

The connection remembers the responses it made (``Remembered``, the most recent
``REMEMBERED``), so a follow-up may chain on one with ``previous_response_id`` even when
it was not stored (``store: false``); no other connection, and no HTTP request, can. A
continuation that fails forgets the response it named. Failures are ``error`` envelopes
(``{"type": "error", "status", "error": {"type", "code", "message", "param"}}``) and
the connection stays open, except when it cannot go on: a refused sign-in, the
database down, or the connection's time limit (``responses_socket_seconds``, the spec's
60 minutes: ``websocket_connection_limit_reached``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from app.auth import ORIGIN_REFUSED, check_origin
from app.errors import DATABASE_UNAVAILABLE
from app.openresponses.errors import OpenResponsesError, invalid
from app.openresponses.references import resolve_references
from app.openresponses.request import MAX_BODY_BYTES, parse_request
from app.openresponses.service import LOST, StartedResponse, start_response
from app.openresponses.views import View, render_event, view_of
from app.request_input import JsonTooDeep, load_json
from app.services import Services, services_of
from storage.errors import TurnInProgress
from storage.open_responses import StoredResponse
from storage.records import UserRecord

logger = logging.getLogger("switchboard.openresponses")

REMEMBERED = 32
CHECK_EVERY = 15.0  # seconds between looks at a response whose turn may have died
# RFC 6455 §7.4: policy violation, going away, try again later.
CLOSE_POLICY, CLOSE_NORMAL, CLOSE_TRY_AGAIN_LATER = 1008, 1000, 1013
# Fields of an HTTP request body that mean nothing on a socket, where every response
# streams: clients should not send them (the spec), but some do (the Agents SDK sends
# "stream": true), so they are read for what they say and dropped.
HTTP_ONLY = ("stream", "stream_options")


def error_envelope(exc: OpenResponsesError) -> dict[str, Any]:
    return {
        "type": "error",
        "status": exc.status,
        "error": {"type": exc.type, "code": exc.code, "message": exc.message, "param": exc.param},
    }


def create_request(message: object) -> Any:
    """A ``response.create`` message → the validated request (``OpenResponsesError``)."""
    if not isinstance(message, dict):
        raise invalid("each message must be a JSON object", code="invalid_json")
    if message.get("type") != "response.create":
        raise invalid(
            f'unknown message type {message.get("type")!r}: send {{"type": "response.create", '
            "…}} with the fields of a POST /v1/responses body",
            "type",
            "unknown_event_type",
        )
    if message.get("stream", True) is not True:
        raise invalid(
            "over a WebSocket every response streams: leave stream out (it is a field of "
            "HTTP requests)",
            "stream",
        )
    dropped = ("type", *HTTP_ONLY)
    return parse_request({key: value for key, value in message.items() if key not in dropped})


async def responses_socket(websocket: WebSocket) -> None:
    services = services_of(websocket)
    # Accepted first: a refusal is then an error the client can read, not a bare 403.
    await websocket.accept()
    user = await _sign_in(websocket, services)
    if user is None:
        return
    try:
        # The upgrade's headers hold for every response of the connection.
        view = view_of(websocket.headers)
    except OpenResponsesError as exc:
        await _refuse(websocket, exc, CLOSE_POLICY)
        return
    await _Connection(websocket, services, user, view).serve()


async def _refuse(websocket: WebSocket, exc: OpenResponsesError, code: int) -> None:
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.send_json(error_envelope(exc))
        await websocket.close(code, exc.message[:120])


async def _sign_in(websocket: WebSocket, services: Services) -> UserRecord | None:
    if not check_origin(websocket, services.settings):
        await _refuse(
            websocket,
            OpenResponsesError("invalid_request", ORIGIN_REFUSED, code="forbidden", status=403),
            CLOSE_POLICY,
        )
        return None
    try:
        user = await services.auth.user_for(websocket)
    except DATABASE_UNAVAILABLE as exc:
        logger.warning("database unavailable: %s", type(exc).__name__)
        await _refuse(
            websocket,
            OpenResponsesError(
                "server_error", "the database is unavailable; try again in a moment", status=503
            ),
            CLOSE_TRY_AGAIN_LATER,
        )
        return None
    if user is None:
        await _refuse(
            websocket,
            OpenResponsesError(
                "invalid_request",
                "missing or invalid token: send 'Authorization: Bearer <token>' "
                "(create one with `switchboard users create NAME`)",
                code="unauthorized",
                status=401,
            ),
            CLOSE_POLICY,
        )
        return None
    return user


class _Connection:
    def __init__(
        self, websocket: WebSocket, services: Services, user: UserRecord, view: View
    ) -> None:
        self.websocket, self.services, self.user, self.view = websocket, services, user, view
        self.remembered: OrderedDict[str, StoredResponse] = OrderedDict()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.services.settings.responses_socket_seconds
        try:
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        message = await self.websocket.receive()
                except TimeoutError:
                    await self._time_is_up()
                    return
                if message["type"] == "websocket.disconnect":
                    return
                # Each response is authorised anew: a token revoked (or expired) since the
                # connection opened stops it within the token cache's 30 s (docs/auth.md).
                if await _sign_in(self.websocket, self.services) is None:
                    return
                text = message.get("text")
                raw = text.encode() if text is not None else message.get("bytes") or b""
                await self._handle(raw)
                if loop.time() >= deadline:
                    await self._time_is_up()
                    return
        except (WebSocketDisconnect, OSError):
            return  # the client left; a response it started goes on as a turn of its chat

    async def _time_is_up(self) -> None:
        limit = self.services.settings.responses_socket_seconds
        await _refuse(
            self.websocket,
            OpenResponsesError(
                "invalid_request",
                f"this connection reached its time limit ({limit:g} s): open a new one, "
                "and chain on a stored response or send the whole conversation",
                code="websocket_connection_limit_reached",
            ),
            CLOSE_NORMAL,
        )

    async def _send_error(self, exc: OpenResponsesError) -> None:
        await self.websocket.send_json(error_envelope(exc))

    async def _handle(self, raw: bytes) -> None:
        previous: str | None = None
        try:
            if len(raw) > MAX_BODY_BYTES:
                raise OpenResponsesError(
                    "invalid_request",
                    f"the message is over {MAX_BODY_BYTES} bytes",
                    code="request_too_large",
                    status=413,
                )
            try:
                message = load_json(raw)
            except JsonTooDeep as exc:
                raise invalid(str(exc), code="invalid_json") from None
            except ValueError:
                raise invalid("the message is not valid JSON", code="invalid_json") from None
            if isinstance(message, dict) and isinstance(message.get("previous_response_id"), str):
                previous = message["previous_response_id"]
            message = await resolve_references(
                message, self.services.db, self.user.id, self.remembered
            )
            request = create_request(message)
            started = await start_response(self.services, self.user, request, self.remembered)
        except OpenResponsesError as exc:
            self._forget(previous)
            await self._send_error(exc)
            return
        except TurnInProgress:
            self._forget(previous)
            await self._send_error(
                OpenResponsesError(
                    "invalid_request",
                    "this conversation is busy with another turn; try again when it ends",
                    code="conversation_busy",
                    status=409,
                )
            )
            return
        except Exception as exc:
            self._forget(previous)
            await self._send_error(_server_error(exc))
            return
        status = await self._stream(started)
        if status == "failed":
            self._forget(previous)
        record = started.record.result() if started.record and started.record.done() else None
        if record is not None and status != "failed":
            self.remembered[record.id] = record
            while len(self.remembered) > REMEMBERED:
                self.remembered.popitem(last=False)

    def _forget(self, response_id: str | None) -> None:
        # The spec: a continuation that fails evicts the response it named.
        if response_id is not None:
            self.remembered.pop(response_id, None)

    async def _stream(self, started: StartedResponse) -> str | None:
        """Send the response's events; its final status (None if it was lost)."""
        status: str | None = None
        while True:
            try:
                event = await asyncio.wait_for(started.events.get(), CHECK_EVERY)
            except TimeoutError:
                if started.lost and started.events.empty():
                    await self.websocket.send_json(started.builder.error_event(LOST))
                    return None
                continue
            if event is None:
                if started.record is not None:
                    await asyncio.wait([started.record], timeout=30)
                return status
            if event["type"] in ("response.completed", "response.failed", "response.incomplete"):
                status = event["response"]["status"]
            shown = render_event(event, self.view)
            await self.websocket.send_text(json.dumps(shown, ensure_ascii=False))


def _server_error(exc: Exception) -> OpenResponsesError:
    if isinstance(exc, DATABASE_UNAVAILABLE):
        logger.warning("database unavailable: %s", type(exc).__name__)
        return OpenResponsesError(
            "server_error", "the database is unavailable; try again in a moment", status=503
        )
    logger.error("open responses socket request failed", exc_info=exc)
    return OpenResponsesError("server_error", "internal server error")
