"""Agents SDK stream events → Open Responses streaming events and Response objects.

Pure, like ``websocket.stream`` (no I/O, no asyncio): one ``ResponseBuilder`` per response,
fed the facts ``websocket.sdk_events`` reads from the SDK's events, as the socket's
translator is.
``start()`` gives ``response.created`` and ``response.in_progress``; ``feed(sdk_event)``
the item events; ``finish(...)`` closes what is open and gives the terminal event
(``response.completed`` / ``.failed`` / ``.incomplete``). Every event carries a
``sequence_number`` increasing from 0 and, for item events, ``output_index`` and
``item_id`` (the Open Responses spec, "State Machines and Event Emission").

What becomes an output item:

- each assistant message (of whichever agent spoke): ``message`` with one
  ``output_text`` part, streamed as ``response.output_text.delta`` events;
- each call of a Switchboard tool: a ``function_call`` item followed, once it returned,
  by its ``function_call_output`` item holding exactly the text the model read. Clients
  see the agent's work and need not run anything.
- a call of a tool that may wait for the person's approval (``gated``, docs/protocol.md §3a) is
  held back until it has run, then shown as both items at once: in the spec's agentic
  loop a ``function_call`` without its output asks the *client* to run it, which must
  never be read into a call waiting for approval. If the turn pauses instead, ``finish``
  gives one ``switchboard:approval_request`` item per approval (the Responses API's
  ``mcp_approval_request``, vendor-prefixed as the spec asks of provider items).
- a response that resumes a paused turn (``resuming``) shows each approved call, with its
  output, once it has run; a declined one is not shown (it never ran: what the model read
  instead says so, and its answer tells the person).
- Hand-offs between agents are internal routing, not tools: not shown.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.openresponses.request import APPROVAL_REQUEST
from connectors.adapters import coerce_tool_output, to_function_call_output
from websocket.sdk_events import MessageDone, TextDelta, ToolCalled, ToolReturned, get, read

Event = dict[str, Any]


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def arguments_text(arguments: Mapping[str, Any]) -> str:
    """Call arguments as a JSON string, as ``function_call.arguments`` and the Responses
    API's ``mcp_approval_request.arguments`` carry them."""
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def approval_request_item(approval: Mapping[str, Any]) -> dict[str, Any]:
    """An ``approval_required`` event's payload → a ``switchboard:approval_request`` item.
    ``arguments`` are exactly those the call runs with if approved."""
    return {
        "id": new_id("apr"),
        "type": APPROVAL_REQUEST,
        "status": "completed",
        "approval_id": approval["approval_id"],
        "call_id": approval["call_id"],
        "name": approval["name"],
        "arguments": arguments_text(approval["arguments"]),
        "expires_at": approval.get("expires_at"),
    }


def approval_requests(body: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The ``switchboard:approval_request`` items of a Response object, in order."""
    output = (body or {}).get("output") or []
    return [
        item for item in output if isinstance(item, dict) and item.get("type") == APPROVAL_REQUEST
    ]


@dataclass(frozen=True)
class DecidedCall:
    """A call of the paused turn a response resumes, as the person decided it."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    approved: bool


@dataclass
class _Message:
    index: int
    id: str
    text: list[str] = field(default_factory=list)


@dataclass
class ResponseBuilder:
    """Builds one response; ``echo`` holds the request fields the object reports back."""

    id: str
    created_at: int
    model: str
    echo: dict[str, Any]
    sequence: int = 0
    output: list[dict[str, Any]] = field(default_factory=list)
    _open: dict[str, _Message] = field(default_factory=dict)  # SDK message id → message
    # Tools whose calls may wait for approval: held back until they have run.
    gated: frozenset[str] = frozenset()
    _calls: dict[str, int] = field(default_factory=dict)  # call_id → output index
    _answered: set[str] = field(default_factory=set)
    _held: dict[str, dict[str, Any]] = field(default_factory=dict)  # call_id → its item
    _declined: set[str] = field(default_factory=set)  # resumed calls that did not run
    status: str = "in_progress"

    # ---------------------------------------------------------------- the object

    def resource(
        self,
        *,
        usage: dict[str, int] | None = None,
        error: dict[str, Any] | None = None,
        incomplete: dict[str, Any] | None = None,
        completed_at: int | None = None,
    ) -> dict[str, Any]:
        """The Response object now (every field the spec requires)."""
        body: dict[str, Any] = {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "completed_at": completed_at,
            "status": self.status,
            "incomplete_details": incomplete,
            "model": self.model,
            "previous_response_id": None,
            "instructions": None,
            "output": [dict(item) for item in self.output],
            "error": error,
            "tools": [],
            "tool_choice": "auto",
            "truncation": "disabled",
            "parallel_tool_calls": True,
            "text": {"format": {"type": "text"}},
            "top_p": 1.0,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            "top_logprobs": 0,
            "temperature": 1.0,
            "reasoning": None,
            "user": None,
            "usage": _usage(usage) if usage is not None else None,
            "max_output_tokens": None,
            "max_tool_calls": None,
            "store": True,
            "background": False,
            "service_tier": "default",
            "metadata": {},
            "safety_identifier": None,
            "prompt_cache_key": None,
        }
        body.update({key: value for key, value in self.echo.items() if value is not None})
        return body

    def _event(self, type_: str, **fields: Any) -> Event:
        event = {"type": type_, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def _lifecycle(self, type_: str, **fields: Any) -> Event:
        return self._event(type_, response=self.resource(**fields))

    def error_event(self, message: str, code: str = "server_error") -> Event:
        """The spec's ``error`` event, for a stream that cannot reach its terminal event."""
        return self._event("error", code=code, message=message, param=None)

    def start(self) -> list[Event]:
        return [self._lifecycle("response.created"), self._lifecycle("response.in_progress")]

    def resuming(self, calls: Iterable[DecidedCall]) -> None:
        """This response continues a paused turn: the SDK reports its decided calls'
        outputs only (their ``tool_called`` came before the pause)."""
        for call in calls:
            self.decided(call)

    def decided(self, call: DecidedCall) -> None:
        if call.approved:
            self._held[call.call_id] = _call_item(
                call.call_id, call.name, arguments_text(call.arguments)
            )
            self._declined.discard(call.call_id)
        else:
            self._held.pop(call.call_id, None)
            self._declined.add(call.call_id)

    # ---------------------------------------------------------------- SDK events

    def feed(self, event: object) -> list[Event]:
        fact = read(event)
        if isinstance(fact, TextDelta):
            return self._delta(fact.item_id, fact.delta)
        if isinstance(fact, MessageDone):
            return self._message_done(fact.item_id, fact.text)
        if isinstance(fact, ToolCalled):
            return self._call(fact)
        if isinstance(fact, ToolReturned):
            return self._call_output(fact)
        return []  # agent changes and hand-offs: routing, not output

    def _open_message(self, key: str) -> tuple[_Message, list[Event]]:
        message = _Message(index=len(self.output), id=new_id("msg"))
        self._open[key] = message
        self.output.append(
            {
                "type": "message",
                "id": message.id,
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
        )
        where = {"output_index": message.index, "item_id": message.id}
        return message, [
            self._event(
                "response.output_item.added",
                output_index=message.index,
                item=dict(self.output[message.index]),
            ),
            self._event(
                "response.content_part.added", **where, content_index=0, part=_text_part("")
            ),
        ]

    def _delta(self, key: str, delta: str) -> list[Event]:
        events: list[Event] = []
        message = self._open.get(key)
        if message is None:
            message, events = self._open_message(key)
        message.text.append(delta)
        events.append(
            self._event(
                "response.output_text.delta",
                output_index=message.index,
                item_id=message.id,
                content_index=0,
                delta=delta,
                logprobs=[],
            )
        )
        return events

    def _close(self, key: str, text: str, status: str) -> list[Event]:
        message = self._open.pop(key)
        item = {
            "type": "message",
            "id": message.id,
            "status": status,
            "role": "assistant",
            "content": [_text_part(text)],
        }
        self.output[message.index] = item
        where = {"output_index": message.index, "item_id": message.id}
        return [
            self._event(
                "response.output_text.done", **where, content_index=0, text=text, logprobs=[]
            ),
            self._event(
                "response.content_part.done", **where, content_index=0, part=_text_part(text)
            ),
            self._event("response.output_item.done", output_index=message.index, item=dict(item)),
        ]

    def _message_done(self, key: str, text: str) -> list[Event]:
        events: list[Event] = []
        if key not in self._open:
            # Providers without item ids: the oldest open message is this one.
            key = next(iter(self._open), key)
        if key not in self._open:
            # Nothing was streamed (a provider that does not stream): all at once.
            _, events = self._open_message(key)
            if text:
                events += self._delta(key, text)
        return events + self._close(key, text, "completed")

    def _call(self, call: ToolCalled) -> list[Event]:
        if call.kind != "function_call":
            return []  # hosted tools and the like are not function calls
        if call.call_id in self._calls or call.call_id in self._held:
            return []
        arguments = get(call.raw, "arguments")
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        done = _call_item(call.call_id, call.name, arguments)
        if call.name in self.gated:
            self._held[call.call_id] = done  # shown once it has run (module docstring)
            return []
        return self._show_call(done)

    def _show_call(self, done: dict[str, Any]) -> list[Event]:
        index = len(self.output)
        self._calls[done["call_id"]] = index
        self.output.append(done)
        where = {"output_index": index, "item_id": done["id"]}
        arguments = done["arguments"]
        return [
            self._event(
                "response.output_item.added",
                output_index=index,
                item={**done, "arguments": "", "status": "in_progress"},
            ),
            self._event("response.function_call_arguments.delta", **where, delta=arguments),
            self._event(
                "response.function_call_arguments.done",
                **where,
                name=done["name"],
                arguments=arguments,
            ),
            self._event("response.output_item.done", output_index=index, item=dict(done)),
        ]

    def _call_output(self, returned: ToolReturned) -> list[Event]:
        call_id = returned.call_id
        if call_id in self._declined:
            # Not run: the model reads why instead of an output, which is no tool output
            # (as on the socket, §3a); its answer tells the person.
            self._declined.discard(call_id)
            return []
        events = self._show_call(self._held.pop(call_id)) if call_id in self._held else []
        if call_id not in self._calls or call_id in self._answered:
            return events
        self._answered.add(call_id)
        # Exactly what the model read; a structured output becomes the adapter's text.
        text = returned.model_text
        if text is None:
            output = coerce_tool_output(returned.value, returned.agent or "Tool")
            text = to_function_call_output(call_id, output)["output"]
        index = len(self.output)
        done = {
            "type": "function_call_output",
            "id": new_id("fco"),
            "call_id": call_id,
            "output": text,
            "status": "completed",
        }
        self.output.append(done)
        return events + [
            self._event(
                "response.output_item.added",
                output_index=index,
                item={**done, "output": "", "status": "in_progress"},
            ),
            self._event("response.output_item.done", output_index=index, item=dict(done)),
        ]

    def _approval_request(self, approval: Mapping[str, Any]) -> list[Event]:
        item = approval_request_item(approval)
        index = len(self.output)
        self.output.append(item)
        return [
            self._event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress"},
            ),
            self._event("response.output_item.done", output_index=index, item=dict(item)),
        ]

    # ---------------------------------------------------------------- the end

    def finish(
        self,
        status: str,
        *,
        usage: dict[str, int],
        completed_at: int,
        error: dict[str, Any] | None = None,
        incomplete_reason: str | None = None,
        approvals: Sequence[Mapping[str, Any]] = (),
    ) -> list[Event]:
        """Close open messages and end: ``completed``, ``failed`` (with ``error``) or
        ``incomplete`` (with ``incomplete_reason``, e.g. ``max_output_tokens``).

        ``approvals`` (``approval_required`` payloads): the turn paused for them; the
        response is then ``completed`` and ends with their approval request items."""
        if status not in ("completed", "failed", "incomplete"):
            raise ValueError(f"a response ends completed, failed or incomplete, not {status!r}")
        if approvals and status != "completed":
            raise ValueError("a response that asks for approval ends completed")
        events: list[Event] = []
        ended = "completed" if status == "completed" else "incomplete"
        for key in list(self._open):
            events += self._close(key, "".join(self._open[key].text), ended)
        waiting = {approval["call_id"] for approval in approvals}
        for call_id in list(self._held):
            held = self._held.pop(call_id)
            if call_id not in waiting:
                # Cut short (a failed or stopped turn) before any output: what the model
                # asked for, with no result, as for any other call.
                events += self._show_call(held)
        for approval in approvals:
            events += self._approval_request(approval)
        self.status = status
        if status == "completed":
            events.append(
                self._lifecycle("response.completed", usage=usage, completed_at=completed_at)
            )
        elif status == "failed":
            events.append(self._lifecycle("response.failed", usage=usage, error=error))
        else:
            events.append(
                self._lifecycle(
                    "response.incomplete", usage=usage, incomplete={"reason": incomplete_reason}
                )
            )
        return events


def _call_item(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": new_id("fc"),
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def _usage(usage: Mapping[str, int]) -> dict[str, Any]:
    return {
        "input_tokens": int(usage.get("input_tokens", 0)),
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": int(usage.get("output_tokens", 0)),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": int(usage.get("total_tokens", 0)),
    }


def sse(event: Event) -> str:
    """One SSE message; its ``event:`` line matches the body's ``type`` (docs/open-responses.md)."""
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"


SSE_DONE = "data: [DONE]\n\n"
SSE_KEEPALIVE = ": keep-alive\n\n"
