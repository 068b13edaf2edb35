"""Agents SDK stream events → Open Responses streaming events and Response objects.

Pure, like ``websocket.stream`` (no I/O, no asyncio): one ``ResponseBuilder`` per response,
fed the facts ``websocket.sdk_events`` reads from the SDK's events, as the socket's
translator is.
``start()`` gives ``response.created`` and ``response.in_progress``; ``feed(sdk_event)``
the item events; ``finish(...)`` closes what is open and gives the terminal event
(``response.completed`` / ``.failed`` / ``.incomplete``). Every event carries a
``sequence_number`` increasing from 0 and, for item events, ``output_index`` and
``item_id`` (the Open Responses spec, "State Machines and Event Emission").

Items are streamed one at a time, in output order: an item is added only once the one
before it is done. What happens meanwhile (a second tool call of the same step returning
first) waits, and goes out when its turn comes.

What becomes an output item:

- each assistant message (of whichever agent spoke): ``message`` with one
  ``output_text`` part, streamed as ``response.output_text.delta`` events, or a
  ``refusal`` part when the model refused;
- each call of a Switchboard tool: one ``switchboard:tool_call`` item (``call_id``,
  ``name``, ``arguments``, then ``output``: exactly the text the model read), added when
  the call is made and done when it returned. Switchboard's tools run here, so they are
  not ``function_call`` items (the spec keeps those for the calls a client must run).
- a call of a tool that may wait for the person's approval (``gated``, docs/protocol.md
  §3a) is held back until it has run, then shown whole; if the turn pauses instead,
  ``finish`` gives one ``switchboard:approval_request`` item per approval (the Responses
  API's ``mcp_approval_request``, vendor-prefixed as the spec asks of provider items),
  then an assistant ``message`` saying what waits and how to answer: a client that reads
  only messages (``output_text``, an Agents SDK's ``final_output``, the AI SDK's text)
  would otherwise show an empty answer.
- a response that resumes a paused turn (``resuming``) shows each approved call once it
  has run; a declined one is not shown (it never ran: what the model read instead says
  so, and its answer tells the person).
- each call of one of the caller's own tools (``callers``): a ``function_call`` item, at
  the end of the response: the caller runs it and sends the result in its next request.
- Hand-offs between agents are internal routing, not tools: not shown.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.openresponses.request import (
    APPROVAL_REQUEST,
    APPROVAL_RESPONSE,
    CALL_ITEM_PREFIX,
    TOOL_CALL,
)
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
    ``arguments`` are exactly those the call runs with if approved; ``effect`` is what it
    will do, as its connector resolved it before asking (null when the arguments say it)."""
    return {
        "id": new_id("apr"),
        "type": APPROVAL_REQUEST,
        "status": "completed",
        "approval_id": approval["approval_id"],
        "call_id": approval["call_id"],
        "name": approval["name"],
        "arguments": arguments_text(approval["arguments"]),
        "effect": approval.get("effect"),
        "expires_at": approval.get("expires_at"),
        # Clients built on the openai package read an item type they do not know as an
        # assistant message, whose content the Agents SDK then reads: an empty one makes
        # it an empty message to them, where none made them fail.
        "content": [],
    }


def _what_waits(approval: Mapping[str, Any]) -> str:
    effect = approval.get("effect")
    summary = effect.get("summary") if isinstance(effect, Mapping) else None
    if isinstance(summary, str) and summary.strip():
        return summary.strip()
    return f"run {approval['name']}"


def approval_message(response_id: str, approvals: Sequence[Mapping[str, Any]]) -> str:
    """The paused response's assistant message: what waits for the person's approval and
    how a client answers (docs/open-responses.md, "Approvals"). Pure."""
    waiting = [f"{_what_waits(item)} (approval_id {item['approval_id']})" for item in approvals]
    if len(waiting) == 1:
        asked = f"This needs your approval before it runs: {waiting[0]}."
    else:
        asked = "These need your approval before they run: " + "; ".join(waiting) + "."
    first = approvals[0]["approval_id"]
    return (
        f"{asked} Nothing has run yet. To answer, send a new request with "
        f'previous_response_id "{response_id}" and, as its whole input, one '
        f"{APPROVAL_RESPONSE} item per approval, e.g. "
        f'{{"type": "{APPROVAL_RESPONSE}", "approval_id": "{first}", "approve": true}} '
        '(or "approve": false, with an optional "reason"). Any other message instead '
        "cancels the request."
    )


def approval_requests(body: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The ``switchboard:approval_request`` items of a Response object, in order."""
    return _of_type(body, APPROVAL_REQUEST)


def caller_calls(body: Mapping[str, Any] | None) -> dict[str, str]:
    """call_id → name of the ``function_call`` items of a Response object: the caller's
    calls it ended with, which the next request answers."""
    return {
        str(item.get("call_id")): str(item.get("name")) for item in _of_type(body, "function_call")
    }


def _of_type(body: Mapping[str, Any] | None, kind: str) -> list[dict[str, Any]]:
    output = (body or {}).get("output") or []
    return [item for item in output if isinstance(item, dict) and item.get("type") == kind]


@dataclass(frozen=True)
class DecidedCall:
    """A call of the paused turn a response resumes, as the person decided it."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    approved: bool


@dataclass
class _Item:
    """An output item being streamed: the events it waits to send until every item
    before it is done (they are numbered when they go out)."""

    index: int
    waiting: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    done: bool = False


@dataclass
class _Message:
    item: _Item
    id: str
    text: list[str] = field(default_factory=list)


@dataclass
class _Call:
    call_id: str
    name: str
    arguments: str


@dataclass
class ResponseBuilder:
    """Builds one response; ``echo`` holds the request fields the object reports back."""

    id: str
    created_at: int
    model: str
    echo: dict[str, Any]
    sequence: int = 0
    output: list[dict[str, Any]] = field(default_factory=list)
    # Tools whose calls may wait for approval: held back until they have run.
    gated: frozenset[str] = frozenset()
    # The caller's own tools: their calls end the response as function_call items.
    callers: frozenset[str] = frozenset()
    status: str = "in_progress"
    _items: list[_Item] = field(default_factory=list)
    _head: int = 0  # the first item not yet done on the wire
    _open: dict[str, _Message] = field(default_factory=dict)  # SDK message id → message
    _closed: set[str] = field(default_factory=set)  # SDK message ids already done
    _calls: dict[str, _Item] = field(default_factory=dict)  # call_id → its item
    _answered: set[str] = field(default_factory=set)
    _held: dict[str, _Call] = field(default_factory=dict)  # gated calls not shown yet
    _declined: set[str] = field(default_factory=set)  # resumed calls that did not run
    _for_caller: dict[str, _Call] = field(default_factory=dict)  # the caller's calls

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
        """The spec's ``error`` event, for a stream that cannot reach its terminal event.
        The error is both nested (the Open Responses schema) and at the top level (the
        OpenAI Responses API's, which its clients read)."""
        error = {"type": "server_error", "code": code, "message": message, "param": None}
        return self._event("error", error=error, code=code, message=message, param=None)

    def start(self) -> list[Event]:
        return [self._lifecycle("response.created"), self._lifecycle("response.in_progress")]

    def resuming(self, calls: Iterable[DecidedCall]) -> None:
        """This response continues a paused turn: the SDK reports its decided calls'
        outputs only (their ``tool_called`` came before the pause)."""
        for call in calls:
            self.decided(call)

    def decided(self, call: DecidedCall) -> None:
        if call.approved:
            self._held[call.call_id] = _Call(
                call.call_id, call.name, arguments_text(call.arguments)
            )
            self._declined.discard(call.call_id)
        else:
            self._held.pop(call.call_id, None)
            self._declined.add(call.call_id)

    # ---------------------------------------------------------------- items in order

    def _new_item(self, item: dict[str, Any], added: dict[str, Any]) -> _Item:
        """A new output item (``item`` as it will end, ``added`` as it starts)."""
        entry = _Item(len(self.output))
        self._items.append(entry)
        self.output.append(item)
        self._send(entry, "response.output_item.added", output_index=entry.index, item=added)
        return entry

    def _send(self, entry: _Item, type_: str, **fields: Any) -> None:
        entry.waiting.append((type_, fields))

    def _finish_item(self, entry: _Item, item: dict[str, Any]) -> None:
        self.output[entry.index] = item
        self._send(entry, "response.output_item.done", output_index=entry.index, item=dict(item))
        entry.done = True

    def _flush(self) -> list[Event]:
        """The events that may go out now: those of the first item not done, and of the
        ones after it once it is."""
        events: list[Event] = []
        while self._head < len(self._items):
            entry = self._items[self._head]
            events += [self._event(type_, **fields) for type_, fields in entry.waiting]
            entry.waiting.clear()
            if not entry.done:
                break
            self._head += 1
        return events

    # ---------------------------------------------------------------- SDK events

    def feed(self, event: object) -> list[Event]:
        fact = read(event)
        if isinstance(fact, TextDelta):
            self._delta(fact.item_id, fact.delta)
        elif isinstance(fact, MessageDone):
            self._message_done(fact.item_id, fact.text, fact.refusal)
        elif isinstance(fact, ToolCalled):
            self._call(fact)
        elif isinstance(fact, ToolReturned):
            self._call_output(fact)
        # Agent changes and hand-offs: routing, not output.
        return self._flush()

    def _open_message(self, key: str, text_part: bool = True) -> _Message:
        message_id = new_id("msg")
        started = {
            "type": "message",
            "id": message_id,
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        entry = self._new_item(dict(started), started)
        message = _Message(entry, message_id)
        self._open[key] = message
        if text_part:
            self._send(
                entry,
                "response.content_part.added",
                output_index=entry.index,
                item_id=message_id,
                content_index=0,
                part=_text_part(""),
            )
        return message

    def _delta(self, key: str, delta: str) -> None:
        message = self._open.get(key)
        if message is None:
            # A new message: the one before it is over (the SDK reports it whole only
            # after the model's response, when the next one may be streaming already).
            for other in list(self._open):
                self._close(other, "".join(self._open[other].text), "completed")
            message = self._open_message(key)
        message.text.append(delta)
        self._send(
            message.item,
            "response.output_text.delta",
            output_index=message.item.index,
            item_id=message.id,
            content_index=0,
            delta=delta,
            logprobs=[],
        )

    def _close(self, key: str, text: str, status: str, refusal: str | None = None) -> None:
        message = self._open.pop(key)
        self._closed.add(key)
        entry, where = message.item, {"output_index": message.item.index, "item_id": message.id}
        content: list[dict[str, Any]] = []
        if message.text or text or not refusal:
            content.append(_text_part(text))
            self._send(
                entry, "response.output_text.done", **where, content_index=0, text=text, logprobs=[]
            )
            self._send(
                entry, "response.content_part.done", **where, content_index=0, part=_text_part(text)
            )
        if refusal:
            index = len(content)
            self._send(
                entry,
                "response.content_part.added",
                **where,
                content_index=index,
                part={"type": "refusal", "refusal": ""},
            )
            self._send(entry, "response.refusal.delta", **where, content_index=index, delta=refusal)
            self._send(
                entry, "response.refusal.done", **where, content_index=index, refusal=refusal
            )
            part = {"type": "refusal", "refusal": refusal}
            self._send(entry, "response.content_part.done", **where, content_index=index, part=part)
            content.append(part)
        item = {
            "type": "message",
            "id": message.id,
            "status": status,
            "role": "assistant",
            "content": content,
        }
        self._finish_item(entry, item)

    def _message_done(self, key: str, text: str, refusal: str | None) -> None:
        if key in self._closed:
            return  # closed when the next message began
        if key not in self._open:
            # Providers without item ids: the oldest open message is this one.
            key = next(iter(self._open), key)
        if key not in self._open:
            # Nothing was streamed (a provider that does not stream): all at once.
            self._open_message(key, text_part=bool(text) or not refusal)
            if text:
                self._delta(key, text)
        self._close(key, text, "completed", refusal)

    def _call(self, call: ToolCalled) -> None:
        if call.kind != "function_call":
            return  # hosted tools and the like are not function calls
        known = self._calls.keys() | self._held.keys() | self._for_caller.keys()
        if call.call_id in known:
            return
        arguments = get(call.raw, "arguments")
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        made = _Call(call.call_id, call.name, arguments)
        if call.name in self.callers:
            self._for_caller[call.call_id] = made  # the caller runs it: shown at the end
        elif call.name in self.gated:
            self._held[call.call_id] = made  # shown once it has run (module docstring)
        else:
            self._show_call(made)

    def _show_call(self, call: _Call) -> _Item:
        item = _tool_call_item(call, "in_progress", None)
        entry = self._new_item(item, dict(item))
        self._calls[call.call_id] = entry
        return entry

    def _call_output(self, returned: ToolReturned) -> None:
        call_id = returned.call_id
        if call_id in self._declined:
            # Not run: the model reads why instead of an output, which is no tool output
            # (as on the socket, §3a); its answer tells the person.
            self._declined.discard(call_id)
            return
        if call_id in self._held:
            self._show_call(self._held.pop(call_id))
        entry = self._calls.get(call_id)
        if entry is None or call_id in self._answered:
            return  # an orphan, or a call of the caller's (its result comes from them)
        self._answered.add(call_id)
        # Exactly what the model read; a structured output becomes the adapter's text.
        text = returned.model_text
        if text is None:
            output = coerce_tool_output(returned.value, returned.agent or "Tool")
            text = to_function_call_output(call_id, output)["output"]
        started = self.output[entry.index]
        call = _Call(call_id, started["name"], started["arguments"])
        self._finish_item(entry, _tool_call_item(call, "completed", text))

    def _whole_item(self, item: dict[str, Any]) -> None:
        """An item added and done at once."""
        entry = self._new_item(item, {**item, "status": "in_progress"})
        self._finish_item(entry, item)

    def _caller_call(self, call: _Call) -> None:
        done = {
            "type": "function_call",
            "id": new_id("fc"),
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
            "status": "completed",
        }
        entry = self._new_item(done, {**done, "arguments": "", "status": "in_progress"})
        where = {"output_index": entry.index, "item_id": done["id"]}
        self._send(entry, "response.function_call_arguments.delta", **where, delta=call.arguments)
        self._send(
            entry,
            "response.function_call_arguments.done",
            **where,
            name=call.name,
            arguments=call.arguments,
        )
        self._finish_item(entry, done)

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
        """Close open items and end: ``completed``, ``failed`` (with ``error``) or
        ``incomplete`` (with ``incomplete_reason``, e.g. ``max_output_tokens``).

        ``approvals`` (``approval_required`` payloads): the turn paused for them; the
        response is then ``completed`` and ends with their approval request items and a
        message saying what waits. The caller's calls come last: they are what the
        caller acts on next."""
        if status not in ("completed", "failed", "incomplete"):
            raise ValueError(f"a response ends completed, failed or incomplete, not {status!r}")
        if approvals and status != "completed":
            raise ValueError("a response that asks for approval ends completed")
        ended = "completed" if status == "completed" else "incomplete"
        for call_id, entry in self._calls.items():
            if not entry.done:  # a call cut short: no result
                started = self.output[entry.index]
                call = _Call(call_id, started["name"], started["arguments"])
                self._finish_item(entry, _tool_call_item(call, "incomplete", None))
        waiting = {approval["call_id"] for approval in approvals}
        for call_id in list(self._held):
            held = self._held.pop(call_id)
            if call_id not in waiting:
                # Cut short (a failed or stopped turn) before any output: what the model
                # asked for, with no result.
                self._whole_item(_tool_call_item(held, "incomplete", None))
        for approval in approvals:
            self._whole_item(approval_request_item(approval))
        if approvals:
            # A message the model left open is over: the pause's message follows it.
            for key in list(self._open):
                self._close(key, "".join(self._open[key].text), "completed")
            key = new_id("pause")
            self._open_message(key)
            self._delta(key, approval_message(self.id, approvals))
            self._close(key, "".join(self._open[key].text), "completed")
        for call in self._for_caller.values():
            self._caller_call(call)
        # An incomplete message is the last item, as the spec wants of a cut-off answer.
        for key in list(self._open):
            self._close(key, "".join(self._open[key].text), ended)
        events = self._flush()
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


def _tool_call_item(call: _Call, status: str, output: str | None) -> dict[str, Any]:
    return {
        "type": TOOL_CALL,
        "id": f"{CALL_ITEM_PREFIX}{call.call_id}",
        "status": status,
        "call_id": call.call_id,
        "name": call.name,
        "arguments": call.arguments,
        "output": output,
        # Clients built on the openai package read an item type they do not know as an
        # assistant message, whose content the Agents SDK then reads: an empty one makes
        # it an empty message to them, where none made them fail.
        "content": [],
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
