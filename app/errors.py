"""The REST error shape ``{"error": {"code", "message"}}`` and the handlers that produce it.

Codes are those of docs/protocol.md §5. Messages are short and never carry secrets, SQL or
stack traces; an unexpected exception is logged here with its traceback and answered with
a generic 500.

A request the database failed (``DATABASE_UNAVAILABLE``) is answered by the
``DatabaseErrors`` middleware: 503 with ``Retry-After``. A read of the REST API (a GET or
HEAD under ``/api/``) whose connection was lost under it (``storage.engine.
connection_lost``: ``pg_terminate_backend``, a database restart) is first run once more,
on a fresh connection: it wrote nothing. Nothing else is run again: a write may have
committed before its connection went, and the OAuth callback is a GET that writes.

Starlette hands the handlers a ``WebSocket`` for a socket route. A socket has no status to
answer with, so it is closed instead: 1013 "try again later" while the database is
unavailable, 1011 for anything else.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Mapping
from typing import Any

from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from storage.engine import connection_lost
from storage.errors import ChatForbidden, ChatNotFound

logger = logging.getLogger("switchboard.errors")

_CODE_BY_STATUS = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "turn_in_progress",
    429: "rate_limited",
}
_DEFAULT_MESSAGES = {
    401: "authentication required: send 'Authorization: Bearer <token>'",
    404: "not found",
    405: "method not allowed",
}
# RFC 6455 §7.4: 1011 the server failed, 1013 a temporary condition ("try again later").
CLOSE_SERVER_ERROR = 1011
CLOSE_TRY_AGAIN_LATER = 1013


class ApiError(Exception):
    """Raise from a handler to answer ``{"error": {"code", "message"}}`` with ``status``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def api_error(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def _open_responses_path(conn: HTTPConnection) -> bool:
    path = conn.url.path
    return path == "/v1" or path.startswith("/v1/")


def _error_for(
    conn: HTTPConnection,
    status: int,
    code: str,
    message: str,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """``api_error``, or under ``/v1`` the Open Responses shape (``type`` and ``param``
    too), so that every answer of that API reads the same, even for a path it lacks."""
    if not _open_responses_path(conn):
        return api_error(status, code, message, headers)
    kind = {404: "not_found", 429: "too_many_requests"}.get(status, "invalid_request")
    error = {"type": "server_error" if status >= 500 else kind, "code": code, "param": None}
    return JSONResponse(
        {"error": {**error, "message": message}}, status_code=status, headers=headers
    )


def code_for_status(status: int) -> str:
    if status >= 500:
        return "server_error"
    return _CODE_BY_STATUS.get(status, "invalid_request")


async def _api_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return api_error(exc.status, exc.code, exc.message)


async def _http_exception_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code in {204, 304}:
        return Response(status_code=exc.status_code, headers=exc.headers)
    code = code_for_status(exc.status_code)
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = f"method {request.method} not allowed here; allowed: {allowed}"
        code = "method_not_allowed" if _open_responses_path(request) else code
    elif exc.status_code == 404 and _open_responses_path(request):
        message = (
            f"no endpoint {request.method} {request.url.path}: this server offers POST "
            "/v1/responses, GET /v1/responses/{id}, POST /v1/responses/compact and a "
            "WebSocket on /v1/responses"
        )
    else:
        message = _DEFAULT_MESSAGES.get(exc.status_code) or exc.detail
    return _error_for(request, exc.status_code, code, message, exc.headers)


async def _not_found_handler(request: Request, exc: Exception) -> Response:
    return api_error(404, "not_found", "not found")


# What an unreachable or restarting database raises: a pooled connection found dead, a
# refused reconnect, a pool with no connection to give.
DATABASE_UNAVAILABLE: tuple[type[Exception], ...] = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.TimeoutError,
    ConnectionError,
)


def _where(conn: HTTPConnection) -> dict[str, str]:
    # A socket's scope has no method: its type ("websocket") says what it was.
    return {"method": conn.scope.get("method", conn.scope["type"]), "path": conn.url.path}


async def _close_socket(websocket: WebSocket, code: int, reason: str) -> None:
    """Close ``websocket`` with ``code``, accepting it first if the endpoint had not.

    A close before accept becomes an HTTP 403 and the client never learns the code. This
    WebSocket is the exception middleware's, not the endpoint's, so whether the endpoint
    had accepted is known only by trying; a client already gone needs nothing.
    """
    with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):
        await websocket.accept()
    with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):
        await websocket.close(code=code, reason=reason)


UNAVAILABLE = "the database is unavailable; try again in a moment"


def _log_unavailable(conn: HTTPConnection, exc: BaseException) -> None:
    # The cause goes to the log by name only: driver messages can hold addresses and SQL.
    logger.warning("database unavailable: %s", type(exc).__name__, extra=_where(conn))


def unavailable_response(conn: HTTPConnection, exc: BaseException) -> JSONResponse:
    """The 503 for a request the unavailable database (``exc``) stopped: temporary, so a
    hint to retry (clients retry 503, not 500)."""
    _log_unavailable(conn, exc)
    return _error_for(conn, 503, "server_error", UNAVAILABLE, headers={"Retry-After": "5"})


READS = frozenset({"GET", "HEAD"})
REST_PREFIX = "/api/"


def _read(scope: Scope) -> bool:
    """A request of the REST API that reads only (HTTP's safe methods)."""
    return (
        scope["type"] == "http"
        and scope["method"] in READS
        and scope["path"].startswith(REST_PREFIX)
    )


class DatabaseErrors:
    """The answer to a request the database failed (see the module docstring).

    A middleware, not an exception handler: Starlette's handlers answer where the
    exception is raised, so the request could not be run again. The innermost one, so
    that every other middleware sees the answer. A socket passes straight through.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._request(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        except DATABASE_UNAVAILABLE as exc:
            if scope["type"] != "websocket":
                raise
            socket = WebSocket(scope, receive, send)
            _log_unavailable(socket, exc)
            await _close_socket(socket, CLOSE_TRY_AGAIN_LATER, UNAVAILABLE)

    async def _request(self, scope: Scope, receive: Receive, send: Send) -> None:
        answered = False

        async def sending(message: Message) -> None:
            nonlocal answered
            answered = True
            await send(message)

        read = _read(scope)
        seen: list[Message] = []  # what the first run received, for the second
        replay: deque[Message] = deque()

        async def receiving() -> Message:
            if replay:
                return replay.popleft()
            message = await receive()
            seen.append(message)
            return message

        for run in (1, 2):
            try:
                await self.app(scope, receiving if read else receive, sending)
                return
            except DATABASE_UNAVAILABLE as exc:
                if answered:
                    raise  # too late to answer otherwise: the server ends the response
                if run == 2 or not (read and connection_lost(exc)):
                    await unavailable_response(HTTPConnection(scope), exc)(scope, receive, send)
                    return
                logger.warning(
                    "database connection lost (%s); reading again",
                    type(exc).__name__,
                    extra=_where(HTTPConnection(scope)),
                )
                replay.extend(seen)


async def _server_error_handler(conn: HTTPConnection, exc: Exception) -> Response | None:
    # The traceback stays in the server log; the client only learns that it failed.
    logger.error("unhandled error", exc_info=exc, extra=_where(conn))
    if isinstance(conn, WebSocket):
        await _close_socket(conn, CLOSE_SERVER_ERROR, "internal server error")
        return None
    return _error_for(conn, 500, "server_error", "internal server error")


def exception_handlers() -> dict[Any, Any]:
    """Handlers for ``Starlette(exception_handlers=...)``."""
    return {
        ApiError: _api_error_handler,
        HTTPException: _http_exception_handler,
        # Another user's chat answers exactly like a chat that does not exist.
        ChatNotFound: _not_found_handler,
        ChatForbidden: _not_found_handler,
        Exception: _server_error_handler,
    }
