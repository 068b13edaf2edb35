"""``POST /ag-ui``: a ``RunAgentInput`` in, the run's AG-UI events out as Server-Sent Events.

Authenticated like the REST API (``Authorization: Bearer <token>`` in token mode, the local
user in local mode), with the REST API's errors: a request that cannot run is answered
before any event, with a 4xx and ``{"error": {"code", "message"}}``. A request the AG-UI
interrupt rules refuse is a stream of one ``RUN_ERROR``, as those rules ask. Once a run has
started it always ends with ``RUN_FINISHED`` or ``RUN_ERROR``; a client that goes away does
not stop it (the turn finishes and is persisted, like a closed socket's).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from ag_ui.core import BaseEvent, RunErrorEvent
from ag_ui.encoder import EventEncoder
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from app.agui.events import run_error
from app.agui.request import InterruptError, ServedRunAgentInput, parse_run
from app.agui.service import Refused, Run, start_run
from app.api_auth import needs_user, signed_in
from app.api_docs import Answer, Operation, documented
from app.api_models import ErrorBody
from app.errors import ApiError, api_error
from app.request_input import JsonTooDeep, load_json, not_json_media_type
from app.services import services_of

logger = logging.getLogger("switchboard.agui")

PATH = "/ag-ui"
# A client sends the whole conversation with every run: room for long ones.
MAX_BODY_BYTES = 8 * 1024 * 1024
KEEPALIVE_SECONDS = 15.0  # an SSE comment while tools run, so proxies keep the stream open
KEEPALIVE = ": keepalive\n\n"
LOST = "the run stopped unexpectedly; its turn is in the chat's history (GET /api/chats)"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


async def _body(request: Request) -> object:
    wrong_type = not_json_media_type(request.headers.get("content-type"))
    if wrong_type is not None:
        raise ApiError(415, "invalid_request", wrong_type)
    declared = request.headers.get("content-length")
    too_big = ApiError(413, "invalid_request", f"the body is over {MAX_BODY_BYTES} bytes")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_big
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise too_big
    try:
        return load_json(body)
    except JsonTooDeep as exc:
        raise ApiError(400, "invalid_request", str(exc)) from None
    except ValueError:
        raise ApiError(400, "invalid_request", "the body is not valid JSON") from None


async def _events(
    run: Run, encoder: EventEncoder, keepalive: float = KEEPALIVE_SECONDS
) -> AsyncIterator[str]:
    while True:
        try:
            event = await asyncio.wait_for(run.queue.get(), keepalive)
        except TimeoutError:
            if run.lost and run.queue.empty():
                logger.error("an ag-ui run's turn ended without ending the run")
                yield encoder.encode(RunErrorEvent(message=LOST, code="server_error"))
                return
            yield KEEPALIVE
            continue
        if event is None:
            return
        yield encoder.encode(event)


async def _one(event: BaseEvent, encoder: EventEncoder) -> AsyncIterator[str]:
    yield encoder.encode(event)


@documented(
    "POST",
    Operation(
        summary="Run the assistant on an AG-UI RunAgentInput; the run's events as SSE",
        tag="ag-ui",
        description="The answer is a Server-Sent Events stream of AG-UI events ending with "
        "RUN_FINISHED or RUN_ERROR (docs/ag-ui.md). A request that cannot run is refused "
        "before any event.",
        body=ServedRunAgentInput,
        answers={
            200: Answer("The run's AG-UI events", media_type="text/event-stream"),
            400: Answer("Not a RunAgentInput this server runs", ErrorBody),
            404: Answer("A thread (chat) of another user's", ErrorBody),
            409: Answer("The thread runs another turn", ErrorBody),
            413: Answer("The body is too large", ErrorBody),
            415: Answer("A body sent as another media type than JSON", ErrorBody),
            429: Answer("Rate limited", ErrorBody),
        },
    ),
)
async def run_agent(request: Request) -> Response:
    user = signed_in(request)
    services = services_of(request)
    body = await _body(request)
    encoder = EventEncoder(accept=request.headers.get("accept") or "text/event-stream")
    try:
        run = await start_run(services, user, parse_run(body, services.settings.max_prompt_chars))
    except Refused as exc:
        return api_error(exc.status, exc.code, exc.message, headers=exc.headers)
    except InterruptError as exc:
        refused = run_error(exc.code, exc.message, exc.interrupts)
        return StreamingResponse(
            _one(refused, encoder), media_type=encoder.get_content_type(), headers=HEADERS
        )
    return StreamingResponse(
        _events(run, encoder), media_type=encoder.get_content_type(), headers=HEADERS
    )


def agui_routes() -> list[BaseRoute]:
    return [Route(PATH, run_agent, methods=["POST"], middleware=needs_user())]
