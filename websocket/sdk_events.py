"""Agents SDK stream events read once, into a few plain facts. Pure: no I/O, no asyncio.

Both front ends stand on this: the socket's ``StreamTranslator`` (protocol events) and the
Open Responses ``ResponseBuilder`` (response items). The SDK's quirks live here only: raw
items that are pydantic objects or dicts, call ids under ``call_id`` or ``id``, hosted
tools without a name. Hand-offs are told apart by the SDK's own item types
(``HandoffCallItem`` / ``HandoffOutputItem``, which never come as tool calls), not by the
``transfer_to_`` names the SDK gives their tools.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents import ItemHelpers, ModelBehaviorError
from agents.items import HandoffOutputItem, MessageOutputItem, ToolCallItem, ToolCallOutputItem
from agents.stream_events import (
    AgentUpdatedStreamEvent,
    RawResponsesStreamEvent,
    RunItemStreamEvent,
)
from pydantic import BaseModel

from connectors.arguments import DEFAULT_MAX_CHARS


@dataclass(slots=True)  # not frozen: one per token, and a frozen __init__ costs twice
class TextDelta:
    """A piece of an assistant message being streamed."""

    item_id: str
    delta: str


@dataclass(frozen=True, slots=True)
class MessageDone:
    """An assistant message, whole: exactly the text its deltas join to; ``refusal``: the
    model's refusal, when the message holds one instead of (or beside) text."""

    item_id: str
    text: str
    refusal: str | None = None


@dataclass(frozen=True, slots=True)
class AgentChanged:
    agent: str


@dataclass(frozen=True, slots=True)
class HandedOff:
    from_agent: str
    to_agent: str


@dataclass(frozen=True, slots=True)
class ToolCalled:
    """A tool call the model made. ``kind`` is the raw item's type: ``function_call`` for
    our tools, another for hosted ones (web search, …); ``raw`` is the raw item."""

    call_id: str
    name: str
    kind: str | None
    raw: Any


@dataclass(frozen=True, slots=True)
class ToolReturned:
    """A tool's result. ``value`` is what the tool returned; ``model_text`` what the
    model read, when the SDK kept it as text; ``agent`` the agent whose tool it is."""

    call_id: str
    value: Any
    model_text: str | None
    agent: str | None


Fact = TextDelta | MessageDone | AgentChanged | HandedOff | ToolCalled | ToolReturned


def read(event: object) -> Fact | None:
    """The fact an SDK stream event carries, or None for what no front end shows
    (reasoning, hand-off requests, MCP listings, other raw events)."""
    if isinstance(event, RawResponsesStreamEvent):
        # One per streamed token: plain getattr (raw response events are pydantic objects,
        # never dicts) and no more than that.
        data = event.data
        if getattr(data, "type", None) != "response.output_text.delta":
            return None
        delta = getattr(data, "delta", None)
        if not isinstance(delta, str) or not delta:
            return None
        return TextDelta(str(getattr(data, "item_id", None) or ""), delta)
    if isinstance(event, AgentUpdatedStreamEvent):
        name = getattr(event.new_agent, "name", None)
        return AgentChanged(name) if isinstance(name, str) else None
    if not isinstance(event, RunItemStreamEvent):
        return None
    item = event.item
    if event.name == "message_output_created" and isinstance(item, MessageOutputItem):
        if get(item.raw_item, "type") != "message":
            # A model server's own item type (``acme:telemetry_chunk``), which the SDK
            # files as a message: nothing any front end can show (app.llm.upstream).
            return None
        text = ItemHelpers.text_message_output(item)
        refusal = ItemHelpers.extract_refusal(item.raw_item) or None
        return MessageDone(str(get(item.raw_item, "id") or ""), text, refusal)
    if event.name == "handoff_occured" and isinstance(item, HandoffOutputItem):
        return HandedOff(item.source_agent.name, item.target_agent.name)
    if event.name == "tool_called" and isinstance(item, ToolCallItem):
        raw = item.raw_item
        call_id = call_id_of(raw)
        if call_id is None:
            return None  # its output could never be paired with it
        kind = get(raw, "type")
        name = item.tool_name or get(raw, "name") or kind or "tool"
        return ToolCalled(call_id, str(name), kind, raw)
    if event.name == "tool_output" and isinstance(item, ToolCallOutputItem):
        call_id = call_id_of(item.raw_item)
        if call_id is None:
            return None
        text = get(item.raw_item, "output")
        agent = getattr(item.agent, "name", None)
        return ToolReturned(call_id, item.output, text if isinstance(text, str) else None, agent)
    return None


_INCOMPLETE = re.compile(r"incomplete_details=\S*?reason='([a-z_]+)'")


def incomplete_reason(exc: BaseException) -> str | None:
    """Why the model stopped before the end of its answer, when ``exc`` says it did: its
    token budget (``max_output_tokens``) or a content filter. The SDK raises a
    ``ModelBehaviorError`` naming the Responses API's ``response.incomplete`` event and its
    ``incomplete_details``, or Chat Completions' ``finish_reason='length'``."""
    if not isinstance(exc, ModelBehaviorError):
        return None
    text = str(exc)
    if "finish_reason='length'" in text:
        return "max_output_tokens"
    if "`response.incomplete`" not in text:
        return None
    found = _INCOMPLETE.search(text)
    return found.group(1) if found else "max_output_tokens"


def get(obj: Any, key: str) -> Any:
    """A field of a raw SDK item, which is a pydantic object or a plain dict."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def call_id_of(raw: Any) -> str | None:
    call_id = get(raw, "call_id") or get(raw, "id")
    return str(call_id) if call_id else None


def _reject_constant(value: str) -> Any:
    raise ValueError(f"{value} is not JSON")  # NaN/Infinity would make the wire frame invalid


# What a tool_call shows of arguments over the cap (the call itself is refused).
SHOWN_OF_OVERSIZED = 1_000


def call_arguments(raw: Any, max_chars: int = DEFAULT_MAX_CHARS) -> dict[str, Any]:
    """A raw tool call's arguments as an object; what is not a JSON object is kept as
    ``{"_raw": text}``. Arguments over ``max_chars`` (the call is refused before its tool
    runs: ``connectors.arguments``) are neither parsed nor stored whole: their start and
    their length, ``{"_raw": "…", "_chars": n}``."""
    value = get(raw, "arguments")
    if isinstance(value, str) and len(value) > max_chars:
        return {"_raw": value[:SHOWN_OF_OVERSIZED] + "…", "_chars": len(value)}
    if value is None:
        # Hosted tools (web search, …) describe what they do in ``action``; custom tools in input.
        value = get(raw, "action") or get(raw, "input")
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return dict(value)
    if not isinstance(value, str) or not value.strip():
        return {}
    try:
        parsed = json.loads(value, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return {"_raw": value}
    return parsed if isinstance(parsed, dict) else {"_raw": value}
