"""A fake model server that speaks the real wire formats, scripted per test.

- ``POST /v1/responses``: the OpenAI Responses API / Open Responses spec (seed 002):
  SSE events whose ``event:`` header matches the body's ``type``, ``sequence_number``
  increasing from 0, ``output_index`` / ``item_id`` / ``content_index`` on deltas, lifecycle
  ``response.created`` → ``response.in_progress`` → ``response.completed`` (or
  ``response.failed``), items ``in_progress`` → ``completed``, closed by ``data: [DONE]``.
  Non-streaming requests get the ``Response`` JSON.
- ``POST /v1/chat/completions``: Chat Completions. ``chat.completion.chunk`` lines
  (``delta.content``, ``delta.tool_calls`` with ``index``/``id``/``function``), a
  ``finish_reason`` chunk, a usage chunk when ``stream_options.include_usage`` asks for it,
  ``data: [DONE]``. Non-streaming requests get the ``chat.completion`` JSON.

Each test scripts the replies: ``server.script(reply, …)`` queues them and every model
request takes the next one, whichever endpoint it hits. Requests that ask for structured
output (a JSON-schema response format) are answered from ``server.structured`` by schema
name instead, so suggestions and titles never take a turn's reply. Every request is kept
(``server.requests``) with its headers and JSON body, for the test to check what was sent.

Given ``context_tokens``, the server holds every request to that context window as a real
one does: its input (instructions, input items or messages, tools) counted at
``CHARS_PER_TOKEN`` characters of JSON a token (OpenAI's rule of thumb for English,
counted here independently of the app's own estimate), plus the output tokens it asks
for, must fit, or the request is refused with OpenAI's ``context_length_exceeded`` error
(and kept in ``server.too_long``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.servers import loopback_socket, running_uvicorn

# ----------------------------------------------------------------------------- the script


@dataclass(frozen=True)
class Say:
    """An assistant message, streamed ``chunk`` characters per delta."""

    text: str
    chunk: int = 6


@dataclass(frozen=True)
class Call:
    """A function call; ``arguments`` is sent as JSON text, streamed in a few pieces."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None

    @property
    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass(frozen=True)
class Refuse:
    """An assistant message that refuses: one ``refusal`` content part."""

    refusal: str


@dataclass(frozen=True)
class Vendor:
    """A vendor's own output item (``type`` prefixed with its name, as the spec asks for
    extensions), announced by ``output_item.added``, followed by a vendor event of the
    same type carrying ``data``, and kept in the response's output. Responses only."""

    kind: str = "acme:telemetry_chunk"
    data: dict[str, Any] = field(default_factory=lambda: {"chunk": "gpu=0.93"})


Break = Literal["failed", "error_event", "disconnect", "stall", "malformed"]
# What a broken proxy or provider may put in a stream: a data line that is not JSON.
MALFORMED = "event: response.output_text.delta\ndata: {not json\n\n"


@dataclass(frozen=True)
class Reply:
    """One model response. ``break_after`` deltas into it, the stream breaks ``break_with``:
    a ``response.failed`` event (Responses) / an error chunk (Chat), a ``type: error``
    event, a dropped connection, silence, or a data line that is not JSON."""

    items: tuple[Say | Call | Refuse | Vendor, ...]
    input_tokens: int = 100
    output_tokens: int = 10
    delay: float = 0.0  # seconds between streamed events
    break_after: int | None = None
    break_with: Break = "failed"
    # Responses only: break right before the first event of this type instead (e.g.
    # ``response.output_text.delta``: after the message was announced, before its text).
    break_before: str | None = None
    error_code: str = "server_error"
    # Set: the response ends ``incomplete`` for this reason (``max_output_tokens``) after
    # its items, the last of them cut there.
    incomplete: str | None = None


@dataclass(frozen=True)
class Fail:
    """An HTTP error answer in the OpenAI error shape; ``message`` may echo the request."""

    status: int
    code: str | None = None
    message: str = "fake failure"
    headers: dict[str, str] = field(default_factory=dict)
    echo_request: bool = False  # put the Authorization header and body into the message


@dataclass(frozen=True)
class Stall:
    """Say nothing (no status line) for ``seconds``: a server that hangs."""

    seconds: float


Step = Reply | Fail | Stall


def reply(*items: Say | Call | Refuse | Vendor, **options: Any) -> Reply:
    return Reply(tuple(items), **options)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def structured_name(self) -> str | None:
        return _schema_name(self.body)

    @property
    def text(self) -> str:
        return json.dumps(self.body)


def _schema_name(body: dict[str, Any]) -> str | None:
    """The asked-for output's name: the schema's ``title`` (the SDK names every format
    ``final_output``; pydantic titles the schema after the model class)."""
    text_format = (body.get("text") or {}).get("format") or {}
    if text_format.get("type") == "json_schema":
        return (text_format.get("schema") or {}).get("title") or text_format.get("name")
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        json_schema = response_format.get("json_schema") or {}
        return (json_schema.get("schema") or {}).get("title") or json_schema.get("name")
    return None


# ----------------------------------------------------------------------------- the server


CHARS_PER_TOKEN = 4
_COUNTED = ("instructions", "input", "messages", "tools")
_OUTPUT_LIMITS = ("max_output_tokens", "max_tokens", "max_completion_tokens")


def request_tokens(body: dict[str, Any]) -> int:
    """The tokens a request takes of the model's context: its input and the output it
    reserves, as this fake server counts them."""
    counted = {key: body[key] for key in _COUNTED if key in body}
    text = json.dumps(counted, separators=(",", ":"))
    output = next((body[key] for key in _OUTPUT_LIMITS if isinstance(body.get(key), int)), 0)
    return -(-len(text) // CHARS_PER_TOKEN) + output


class FakeModelServer:
    def __init__(self, api_key: str | None = None, context_tokens: int | None = None) -> None:
        self.api_key = api_key  # when set, any other Bearer value gets a 401
        self.context_tokens = context_tokens  # when set, longer requests are refused
        self.too_long: list[Recorded] = []
        self.largest_request = 0  # tokens of the largest request received
        self.requests: list[Recorded] = []
        self.structured: dict[str, Step | dict[str, Any]] = {}
        self._script: deque[Step] = deque()
        self._ids = itertools.count(1)
        self.port = 0

    # -- scripting -------------------------------------------------------------------

    def script(self, *steps: Step | Say | Call | Refuse | Vendor) -> None:
        for step in steps:
            single = isinstance(step, Say | Call | Refuse | Vendor)
            self._script.append(reply(step) if single else step)

    @property
    def pending(self) -> int:
        return len(self._script)

    def turn_requests(self) -> list[Recorded]:
        """The requests of agent turns (not suggestions or titles)."""
        return [r for r in self.requests if r.structured_name is None]

    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- the app ---------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
            ]
        )

    async def _take(self, request: Request) -> tuple[Recorded, Step | dict[str, Any]] | Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "invalid_request", "body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "invalid_request", "body is not a JSON object")
        recorded = Recorded(request.url.path, dict(request.headers), body)
        self.requests.append(recorded)
        if (
            self.api_key is not None
            and request.headers.get("authorization") != f"Bearer {self.api_key}"
        ):
            return _error(401, "invalid_api_key", "Incorrect API key provided.")
        if not isinstance(body.get("model"), str) or not body["model"]:
            return _error(400, "invalid_request", "model is required")
        tokens = request_tokens(body)
        self.largest_request = max(self.largest_request, tokens)
        if self.context_tokens is not None and tokens > self.context_tokens:
            self.too_long.append(recorded)
            return _error(
                400,
                "context_length_exceeded",
                f"This model's maximum context length is {self.context_tokens} tokens. "
                f"However, your messages resulted in {tokens} tokens. Please reduce the "
                "length of the messages.",
                param="messages",
            )
        name = recorded.structured_name
        if name is not None:
            if name not in self.structured:
                return _error(500, "server_error", f"no structured answer scripted for {name}")
            return recorded, self.structured[name]
        if not self._script:
            return _error(500, "server_error", "the fake model server has no reply scripted")
        return recorded, self._script.popleft()

    async def _answer(self, request: Request, kind: str) -> Response:
        taken = await self._take(request)
        if isinstance(taken, Response):
            return taken
        recorded, step = taken
        if isinstance(step, dict):  # a structured answer: the JSON object as the text
            step = reply(Say(json.dumps(step)))
        if isinstance(step, Stall):
            await asyncio.sleep(step.seconds)
            return _error(504, "timeout", "stalled")
        if isinstance(step, Fail):
            message = step.message
            if step.echo_request:
                message += (
                    f" (authorization: {recorded.headers.get('authorization')}; "
                    f"request: {json.dumps(recorded.body)})"
                )
            return _error(step.status, step.code, message, step.headers)
        body = recorded.body
        if kind == "responses":
            writer = _ResponsesWriter(self, body, step)
        else:
            writer = _ChatWriter(self, body, step)
        if not body.get("stream"):
            return JSONResponse(writer.whole())
        return StreamingResponse(writer.stream(), media_type="text/event-stream")

    async def _responses(self, request: Request) -> Response:
        return await self._answer(request, "responses")

    async def _chat(self, request: Request) -> Response:
        return await self._answer(request, "chat")

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"


def _error(
    status: int,
    code: str | None,
    message: str,
    headers: dict[str, str] | None = None,
    param: str | None = None,
) -> JSONResponse:
    kind = {
        400: "invalid_request_error",
        401: "invalid_request_error",
        404: "not_found",
        429: "too_many_requests",
    }.get(status, "server_error")
    return JSONResponse(
        {"error": {"type": kind, "code": code, "param": param, "message": message}},
        status_code=status,
        headers=headers,
    )


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class _Broken(Exception):
    """Raised inside a stream to drop the connection mid-body."""


# ----------------------------------------------------------------------------- Responses


class _ResponsesWriter:
    def __init__(self, server: FakeModelServer, body: dict[str, Any], step: Reply) -> None:
        self.server = server
        self.body = body
        self.step = step
        self.response_id = server.new_id("resp")
        self.sequence = 0
        self.items: list[dict[str, Any]] = []
        status = "incomplete" if step.incomplete else "completed"
        for item in step.items:
            if isinstance(item, Say | Refuse):
                part = (
                    _text_part(item.text)
                    if isinstance(item, Say)
                    else {"type": "refusal", "refusal": item.refusal}
                )
                self.items.append(
                    {
                        "id": server.new_id("msg"),
                        "type": "message",
                        "status": status if item is step.items[-1] else "completed",
                        "role": "assistant",
                        "content": [part],
                    }
                )
            elif isinstance(item, Vendor):
                self.items.append(
                    {"id": server.new_id("acme"), "type": item.kind, "status": "completed"}
                    | item.data
                )
            else:
                self.items.append(
                    {
                        "id": server.new_id("fc"),
                        "type": "function_call",
                        "status": "completed",
                        "name": item.name,
                        "call_id": item.call_id or server.new_id("call"),
                        "arguments": item.arguments_json,
                    }
                )

    def _response(
        self,
        status: str,
        output: list[dict[str, Any]],
        usage: dict[str, Any] | None,
        error: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return {
            "id": self.response_id,
            "object": "response",
            "created_at": 1_700_000_000,
            "status": status,
            "model": self.body.get("model"),
            "output": output,
            "usage": usage,
            "error": error,
            "incomplete_details": (
                {"reason": self.step.incomplete}
                if self.step.incomplete and status == "incomplete"
                else None
            ),
            "instructions": self.body.get("instructions"),
            "metadata": {},
            "parallel_tool_calls": True,
            "temperature": 1.0,
            "top_p": 1.0,
            "tool_choice": self.body.get("tool_choice", "auto"),
            "tools": self.body.get("tools", []),
            "text": {"format": {"type": "text"}},
            "previous_response_id": self.body.get("previous_response_id"),
        }

    def _usage(self) -> dict[str, Any]:
        step = self.step
        return {
            "input_tokens": step.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": step.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": step.input_tokens + step.output_tokens,
        }

    def whole(self) -> dict[str, Any]:
        return self._response(self._status, self.items, self._usage())

    @property
    def _status(self) -> str:
        return "incomplete" if self.step.incomplete else "completed"

    def _event(self, payload: dict[str, Any]) -> str:
        payload["sequence_number"] = self.sequence
        self.sequence += 1
        return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n"

    def _events(self) -> Iterator[tuple[bool, str]]:
        """(is a delta, SSE text) for the whole response."""
        yield (
            False,
            self._event(
                {"type": "response.created", "response": self._response("in_progress", [], None)}
            ),
        )
        yield (
            False,
            self._event(
                {
                    "type": "response.in_progress",
                    "response": self._response("in_progress", [], None),
                }
            ),
        )
        for index, (item, source) in enumerate(zip(self.items, self.step.items, strict=True)):
            if isinstance(source, Refuse):
                yield from self._refusal_events(index, item, source)
            elif isinstance(source, Vendor):
                yield from self._vendor_events(index, item, source)
            elif item["type"] == "message":
                yield from self._message_events(index, item, source)
            else:
                yield from self._call_events(index, item)
        yield (
            False,
            self._event(
                {
                    "type": f"response.{self._status}",
                    "response": self._response(self._status, self.items, self._usage()),
                }
            ),
        )

    def _refusal_events(
        self, index: int, item: dict[str, Any], source: Refuse
    ) -> Iterator[tuple[bool, str]]:
        where = {"item_id": item["id"], "output_index": index}
        empty = {"type": "refusal", "refusal": ""}
        yield (
            False,
            self._event(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            ),
        )
        for payload in (
            {"type": "response.content_part.added", **where, "content_index": 0, "part": empty},
            {
                "type": "response.refusal.delta",
                **where,
                "content_index": 0,
                "delta": source.refusal,
            },
            {
                "type": "response.refusal.done",
                **where,
                "content_index": 0,
                "refusal": source.refusal,
            },
            {
                "type": "response.content_part.done",
                **where,
                "content_index": 0,
                "part": item["content"][0],
            },
            {"type": "response.output_item.done", "output_index": index, "item": item},
        ):
            yield (False, self._event(payload))

    def _vendor_events(
        self, index: int, item: dict[str, Any], source: Vendor
    ) -> Iterator[tuple[bool, str]]:
        for payload in (
            {"type": "response.output_item.added", "output_index": index, "item": item},
            {"type": source.kind, "item_id": item["id"], "output_index": index, **source.data},
            {"type": "response.output_item.done", "output_index": index, "item": item},
        ):
            yield (False, self._event(payload))

    def _message_events(
        self, index: int, item: dict[str, Any], source: Say | Call | Refuse | Vendor
    ) -> Iterator[tuple[bool, str]]:
        assert isinstance(source, Say)
        where = {"item_id": item["id"], "output_index": index}
        yield (
            False,
            self._event(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            ),
        )
        yield (
            False,
            self._event(
                {
                    "type": "response.content_part.added",
                    **where,
                    "content_index": 0,
                    "part": _text_part(""),
                }
            ),
        )
        for delta in _pieces(source.text, source.chunk):
            yield (
                True,
                self._event(
                    {
                        "type": "response.output_text.delta",
                        **where,
                        "content_index": 0,
                        "delta": delta,
                        "logprobs": [],
                    }
                ),
            )
        yield (
            False,
            self._event(
                {
                    "type": "response.output_text.done",
                    **where,
                    "content_index": 0,
                    "text": source.text,
                    "logprobs": [],
                }
            ),
        )
        yield (
            False,
            self._event(
                {
                    "type": "response.content_part.done",
                    **where,
                    "content_index": 0,
                    "part": _text_part(source.text),
                }
            ),
        )
        yield (
            False,
            self._event({"type": "response.output_item.done", "output_index": index, "item": item}),
        )

    def _call_events(self, index: int, item: dict[str, Any]) -> Iterator[tuple[bool, str]]:
        where = {"item_id": item["id"], "output_index": index}
        yield (
            False,
            self._event(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "arguments": ""},
                }
            ),
        )
        for delta in _pieces(item["arguments"], max(1, len(item["arguments"]) // 3 + 1)):
            yield (
                True,
                self._event(
                    {"type": "response.function_call_arguments.delta", **where, "delta": delta}
                ),
            )
        yield (
            False,
            self._event(
                {
                    "type": "response.function_call_arguments.done",
                    **where,
                    "name": item["name"],
                    "arguments": item["arguments"],
                }
            ),
        )
        yield (
            False,
            self._event({"type": "response.output_item.done", "output_index": index, "item": item}),
        )

    def _break(self) -> Iterator[str]:
        step = self.step
        if step.break_with == "failed":
            error = {"code": step.error_code, "message": "The model failed mid-stream."}
            yield self._event(
                {"type": "response.failed", "response": self._response("failed", [], None, error)}
            )
            yield "data: [DONE]\n\n"
        elif step.break_with == "error_event":
            yield self._event(
                {
                    "type": "error",
                    "code": step.error_code,
                    "message": "The model failed mid-stream.",
                    "param": None,
                }
            )
            yield "data: [DONE]\n\n"

    async def stream(self) -> AsyncIterator[str]:
        deltas = 0
        for is_delta, text in self._events():
            at_break = self.step.break_before is not None and text.startswith(
                f"event: {self.step.break_before}\n"
            )
            if at_break or (self.step.break_after is not None and deltas >= self.step.break_after):
                async for chunk in _finish_broken(self.step, list(self._break())):
                    yield chunk
                return
            deltas += is_delta
            if self.step.delay:
                await asyncio.sleep(self.step.delay)
            yield text
        yield "data: [DONE]\n\n"


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


async def _finish_broken(step: Reply, closing: list[str]) -> AsyncIterator[str]:
    if step.break_with == "malformed":
        yield MALFORMED
        return
    if step.break_with == "disconnect":
        raise _Broken("dropping the connection mid-stream")
    if step.break_with == "stall":
        await asyncio.sleep(3600)
    for chunk in closing:
        yield chunk


# ----------------------------------------------------------------------------- Chat


class _ChatWriter:
    def __init__(self, server: FakeModelServer, body: dict[str, Any], step: Reply) -> None:
        self.server = server
        self.body = body
        self.step = step
        self.completion_id = server.new_id("chatcmpl")
        self.calls = [
            (item, item.call_id or server.new_id("call"))
            for item in step.items
            if isinstance(item, Call)
        ]
        self.text = "".join(item.text for item in step.items if isinstance(item, Say))

    def _usage(self) -> dict[str, int]:
        step = self.step
        return {
            "prompt_tokens": step.input_tokens,
            "completion_tokens": step.output_tokens,
            "total_tokens": step.input_tokens + step.output_tokens,
        }

    def _finish_reason(self) -> str:
        return "tool_calls" if self.calls else "stop"

    def whole(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json},
                }
                for call, call_id in self.calls
            ]
        return {
            "id": self.completion_id,
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": self.body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self._finish_reason(),
                }
            ],
            "usage": self._usage(),
        }

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> str:
        payload = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": self.body.get("model"),
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        return f"data: {json.dumps(payload)}\n\n"

    def _events(self) -> Iterator[tuple[bool, str]]:
        yield False, self._chunk({"role": "assistant", "content": ""})
        for item in self.step.items:
            if isinstance(item, Say):
                for delta in _pieces(item.text, item.chunk):
                    yield True, self._chunk({"content": delta})
        for index, (call, call_id) in enumerate(self.calls):
            yield (
                False,
                self._chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        ]
                    }
                ),
            )
            arguments = call.arguments_json
            for piece in _pieces(arguments, max(1, len(arguments) // 3 + 1)):
                yield (
                    True,
                    self._chunk(
                        {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                    ),
                )
        yield False, self._chunk({}, self._finish_reason())
        if (self.body.get("stream_options") or {}).get("include_usage"):
            usage = {
                "id": self.completion_id,
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": self.body.get("model"),
                "choices": [],
                "usage": self._usage(),
            }
            yield False, f"data: {json.dumps(usage)}\n\n"

    def _break(self) -> list[str]:
        if self.step.break_with in ("failed", "error_event"):
            error = {
                "error": {
                    "message": "The model failed mid-stream.",
                    "type": "server_error",
                    "code": self.step.error_code,
                    "param": None,
                }
            }
            return [f"data: {json.dumps(error)}\n\n"]
        return []

    async def stream(self) -> AsyncIterator[str]:
        deltas = 0
        for is_delta, text in self._events():
            if self.step.break_after is not None and deltas >= self.step.break_after:
                async for chunk in _finish_broken(self.step, self._break()):
                    yield chunk
                return
            deltas += is_delta
            if self.step.delay:
                await asyncio.sleep(self.step.delay)
            yield text
        yield "data: [DONE]\n\n"


# ----------------------------------------------------------------------------- running it


@asynccontextmanager
async def running_model_server(
    server: FakeModelServer | None = None,
) -> AsyncIterator[FakeModelServer]:
    """Serve ``server`` with uvicorn on a free loopback port for the block."""
    server = server or FakeModelServer()
    sock = loopback_socket()
    server.port = sock.getsockname()[1]
    async with running_uvicorn(
        server.app(),
        what="the fake model server",
        sock=sock,
        log_level="critical",
        lifespan="off",
        timeout_graceful_shutdown=1,
    ):
        yield server
