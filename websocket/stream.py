"""Agents SDK stream events -> protocol events (docs/protocol.md §3). Pure: no I/O, no asyncio.

One ``StreamTranslator`` per turn. The turn runner feeds it every event of
``RunResultStreaming.stream_events()``; what comes out are the protocol's event models
(``wire.events``), which the writer persists (those marked ``persisted``), envelopes and
publishes.

Known limits of the SDK's event order, documented rather than patched over:

- ``llm_response.text`` is the item's text (``ItemHelpers.text_message_output``). The SDK
  streams exactly that text as deltas; if a provider ever differed, the item text wins.
- Model items are emitted after the model response completes, in output order, so a
  response with text then a tool call gives ``delta* llm_response tool_call``. A response
  with two messages (rare) streams both messages' deltas before either ``llm_response``.
- Refusal parts are not text: a refusal-only message gives ``llm_response`` with ``""``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from agents import ItemHelpers
from agents.items import HandoffOutputItem, MessageOutputItem, ToolCallItem, ToolCallOutputItem
from agents.stream_events import (
    AgentUpdatedStreamEvent,
    RawResponsesStreamEvent,
    RunItemStreamEvent,
)
from pydantic import BaseModel

from connectors.adapters import coerce_tool_output
from wire.events import (
    AgentUpdatedEvent,
    ErrorEvent,
    Event,
    HandoffEvent,
    LlmResponseDeltaEvent,
    LlmResponseEvent,
    ToolCallEvent,
    ToolOutputEvent,
    Usage,
)
from wire.tool_response import ToolResponseData

logger = logging.getLogger("switchboard.stream")

HANDOFF_TOOL_PREFIX = "transfer_to_"
MAX_ERROR_MESSAGE = 200
# The ``error`` codes an error result may ask for through ``debug_info["error_code"]``
# (server-side, never sent): a tool that never answered in time (a RAP remote tool, see
# connectors/rap) is ``tool_timeout``, which a client may retry; anything else is a
# ``tool_error``.
ToolErrorCode: TypeAlias = Literal["tool_error", "tool_timeout"]
RETRYABLE_TOOL_ERRORS: dict[ToolErrorCode, bool] = {"tool_error": False, "tool_timeout": True}


class StreamTranslator:
    """Turns the SDK events of one turn into protocol events, tracking the active agent."""

    def __init__(
        self,
        orchestrator_name: str,
        tool_descriptions: Mapping[str, str],
        agent_display_names: Mapping[str, str],
    ) -> None:
        self._orchestrator = orchestrator_name
        self._descriptions = tool_descriptions
        self._display_names = agent_display_names
        self._current_agent = orchestrator_name
        self._seen_agent_update = False
        # Deltas of messages not yet completed, by response item id (insertion-ordered).
        self._pending: dict[str, list[str]] = {}
        self._called: set[str] = set()  # call_ids reported as tool_call
        self._skipped: set[str] = set()  # handoff call_ids: neither call nor output is shown
        self._answered: set[str] = set()  # call_ids whose output was handled

    def resume(
        self, current_agent: str, approved: Iterable[str], declined: Iterable[str] = ()
    ) -> None:
        """Continue a turn that paused for approvals. ``approved`` calls were reported as
        ``tool_call`` before the pause and their outputs come now; ``declined`` ones never
        ran, so what the model reads instead of their output is not a ``tool_output``
        (§3: a call not approved has none). The agent that paused is active again (the SDK
        announces it anew, which is not a change)."""
        self._current_agent = current_agent
        self._seen_agent_update = True
        self._called.update(approved)
        self._called.update(declined)
        self._answered.update(declined)

    @property
    def current_agent(self) -> str:
        return self._current_agent

    @property
    def current_text(self) -> str:
        """Text streamed since the last ``llm_response``: what a resuming client must redraw."""
        return "".join("".join(parts) for parts in self._pending.values())

    def translate(self, event: object) -> list[Event]:
        try:
            if isinstance(event, RawResponsesStreamEvent):
                return self._raw(event)
            if isinstance(event, RunItemStreamEvent):
                return self._run_item(event)
            if isinstance(event, AgentUpdatedStreamEvent):
                return self._agent_updated(event)
        except Exception:
            # A shape we did not foresee must not end the user's turn; the log shows it.
            logger.warning("could not translate %s", type(event).__name__, exc_info=True)
        return []

    # ----------------------------------------------------------------- per event kind

    def _raw(self, event: RawResponsesStreamEvent) -> list[Event]:
        data = event.data
        if getattr(data, "type", None) != "response.output_text.delta":
            return []
        delta = getattr(data, "delta", "")
        if not isinstance(delta, str) or not delta:
            return []
        self._pending.setdefault(str(getattr(data, "item_id", "")), []).append(delta)
        return [LlmResponseDeltaEvent(delta=delta, current_agent=self._current_agent)]

    def _run_item(self, event: RunItemStreamEvent) -> list[Event]:
        item = event.item
        if event.name == "message_output_created" and isinstance(item, MessageOutputItem):
            return self._message(item)
        if event.name == "handoff_occured" and isinstance(item, HandoffOutputItem):
            return [
                HandoffEvent(from_agent=item.source_agent.name, to_agent=item.target_agent.name)
            ]
        if event.name == "tool_called" and isinstance(item, ToolCallItem):
            return self._tool_called(item)
        if event.name == "tool_output" and isinstance(item, ToolCallOutputItem):
            return self._tool_output(item)
        # handoff_requested: the transfer call is not a tool_call; reasoning, mcp, … not shown.
        return []

    def _agent_updated(self, event: AgentUpdatedStreamEvent) -> list[Event]:
        name = event.new_agent.name
        first, self._seen_agent_update = not self._seen_agent_update, True
        unchanged = name == self._current_agent
        self._current_agent = name
        if first and name == self._orchestrator:
            return []  # §3: not sent for the orchestrator at turn start
        if unchanged and not first:
            return []  # a resumed run starts with the agent that paused
        return [
            AgentUpdatedEvent(
                new_agent=name, name=self._display_names.get(name, name), current_agent=name
            )
        ]

    def _message(self, item: MessageOutputItem) -> list[Event]:
        text = ItemHelpers.text_message_output(item)
        item_id = str(getattr(item.raw_item, "id", ""))
        # Providers that do not carry ids through (Chat Completions shims) still stream the
        # message's deltas just before it: drop the oldest pending message then.
        key = item_id if item_id in self._pending else next(iter(self._pending), None)
        if key is not None:
            del self._pending[key]
        return [LlmResponseEvent(text=text, current_agent=self._current_agent)]

    def _tool_called(self, item: ToolCallItem) -> list[Event]:
        raw = item.raw_item
        kind = _get(raw, "type")
        name = item.tool_name or _get(raw, "name") or kind or "tool"
        call_id = _get(raw, "call_id") or _get(raw, "id")
        if not call_id:
            return []  # an output could never be paired with it
        call_id = str(call_id)
        if name.startswith(HANDOFF_TOOL_PREFIX):
            self._skipped.add(call_id)
            return []
        if call_id in self._called:
            return []
        self._called.add(call_id)
        return [
            ToolCallEvent(
                call_id=call_id,
                name=name,
                description=self._descriptions.get(name) or _humanise(name),
                arguments=call_arguments(raw),
                current_agent=self._current_agent,
            )
        ]

    def _tool_output(self, item: ToolCallOutputItem) -> list[Event]:
        call_id = _get(item.raw_item, "call_id") or _get(item.raw_item, "id")
        call_id = str(call_id) if call_id else ""
        # Only outputs of reported calls, once each: never an orphan tool_output.
        if call_id not in self._called or call_id in self._answered:
            return []
        self._answered.add(call_id)
        agent = getattr(item.agent, "name", None) or self._current_agent
        output = coerce_tool_output(item.output, agent)
        if output.get("display_response", True) is False:
            return []  # §3: hidden output is neither sent nor persisted; the model still has it
        events: list[Event] = [
            ToolOutputEvent(
                call_id=call_id,
                output=ToolResponseData.model_validate(output),
                current_agent=self._current_agent,
            )
        ]
        if output.get("response_type") == "error":
            message = output.get("error_message") or output.get("response")
            code = _tool_error_code(output)
            events.append(
                ErrorEvent(
                    code=code,
                    message=_short(message if isinstance(message, str) else "") or "A tool failed.",
                    retryable=RETRYABLE_TOOL_ERRORS[code],
                )
            )
        return events


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A tool call the SDK paused on for the person's approval, as they will see it:
    ``arguments`` are exactly those the call runs with."""

    call_id: str
    name: str
    description: str
    arguments: dict[str, Any]
    current_agent: str


def pending_call(
    item: Any, descriptions: Mapping[str, str], current_agent: str
) -> PendingCall | None:
    """An ``agents.items.ToolApprovalItem`` → ``PendingCall`` (None without a call id)."""
    raw = item.raw_item
    call_id = _get(raw, "call_id") or _get(raw, "id")
    if not call_id:
        return None
    name = item.name or _get(raw, "type") or "tool"
    agent = getattr(getattr(item, "agent", None), "name", None) or current_agent
    return PendingCall(
        str(call_id), name, descriptions.get(name) or _humanise(name), call_arguments(raw), agent
    )


def usage_of(usage: Any) -> Usage:
    """``agents.usage.Usage`` (or None) -> the ``end_of_stream.usage`` model."""
    return Usage(**{key: int(getattr(usage, key, 0) or 0) for key in Usage.model_fields})


# --------------------------------------------------------------------------- helpers


def _get(obj: Any, key: str) -> Any:
    """A field of a raw SDK item, which is a pydantic object or a plain dict."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _humanise(name: str) -> str:
    return f"Running {name.replace('_', ' ')}"


def _reject_constant(value: str) -> Any:
    raise ValueError(f"{value} is not JSON")  # NaN/Infinity would make the wire frame invalid


def call_arguments(raw: Any) -> dict[str, Any]:
    """A raw tool call's arguments as ``tool_call`` and ``approval_required`` show them: an
    object; what is not a JSON object is kept as ``{"_raw": text}``."""
    value = _get(raw, "arguments")
    if value is None:
        # Hosted tools (web search, …) describe what they do in ``action``; custom tools in input.
        value = _get(raw, "action") or _get(raw, "input")
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


def _tool_error_code(output: dict[str, Any]) -> ToolErrorCode:
    debug = output.get("debug_info")
    code = debug.get("error_code") if isinstance(debug, dict) else None
    return "tool_timeout" if code == "tool_timeout" else "tool_error"


def _short(message: str) -> str:
    """First line, bounded: error text for users never carries traces."""
    line = message.strip().split("\n", 1)[0].strip()
    if len(line) > MAX_ERROR_MESSAGE:
        line = line[: MAX_ERROR_MESSAGE - 1] + "…"
    return line
