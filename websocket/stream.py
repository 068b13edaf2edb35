"""Agents SDK stream events -> protocol events (docs/protocol.md §3). Pure: no I/O, no asyncio.

One ``StreamTranslator`` per turn. The turn runner feeds it every event of
``RunResultStreaming.stream_events()``; ``websocket.sdk_events`` reads each into a fact,
and what comes out are the protocol's event models (``wire.events``), which the writer
persists (those marked ``persisted``), envelopes and publishes.

Known limits of the SDK's event order, documented rather than patched over:

- ``llm_response.text`` is the item's text (``ItemHelpers.text_message_output``). The SDK
  streams exactly that text as deltas; if a provider ever differed, the item text wins.
- Model items are emitted after the model response completes, in output order, so a
  response with text then a tool call gives ``delta* llm_response tool_call``. A response
  with two messages (rare) streams both messages' deltas before either ``llm_response``.
- Refusal parts are not text (nor streamed as text deltas): a refusal-only message gives
  one ``llm_response_delta`` with the refusal, then ``llm_response`` with it and
  ``refusal: true``, so the deltas still join to the message's text.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from connectors.adapters import coerce_tool_response
from connectors.arguments import DEFAULT_MAX_CHARS
from websocket.sdk_events import (
    AgentChanged,
    HandedOff,
    MessageDone,
    TextDelta,
    ToolCalled,
    ToolReturned,
    call_arguments,
    call_id_of,
    get,
    read,
)
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
        max_argument_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self._orchestrator = orchestrator_name
        self._max_argument_chars = max_argument_chars
        self._descriptions = tool_descriptions
        self._display_names = agent_display_names
        self._current_agent = orchestrator_name
        self._seen_agent_update = False
        # Deltas of messages not yet completed, by response item id (insertion-ordered).
        self._pending: dict[str, list[str]] = {}
        self._called: set[str] = set()  # call_ids reported as tool_call
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

    def answered(self, call_id: str) -> bool:
        """Whether the call's output was handled (shown, or hidden as it asked)."""
        return call_id in self._answered

    def returned(self, call_id: str, value: object, agent: str | None) -> list[Event]:
        """The events of a call's result that reached us outside the SDK's stream (an
        approved call carried to its end after the turn was stopped)."""
        return self._tool_returned(ToolReturned(call_id, value, None, agent))

    @property
    def current_text(self) -> str:
        """Text streamed since the last ``llm_response``: what a resuming client must redraw."""
        return "".join("".join(parts) for parts in self._pending.values())

    def translate(self, event: object) -> list[Event]:
        try:
            fact = read(event)
            if isinstance(fact, TextDelta):
                return self._delta(fact)
            if isinstance(fact, MessageDone):
                return self._message(fact)
            if isinstance(fact, AgentChanged):
                return self._agent_changed(fact.agent)
            if isinstance(fact, HandedOff):
                return [HandoffEvent(from_agent=fact.from_agent, to_agent=fact.to_agent)]
            if isinstance(fact, ToolCalled):
                return self._tool_called(fact)
            if isinstance(fact, ToolReturned):
                return self._tool_returned(fact)
        except Exception:
            # A shape we did not foresee must not end the user's turn; the log shows it.
            logger.warning("could not translate %s", type(event).__name__, exc_info=True)
        return []

    # ----------------------------------------------------------------- per fact

    def _delta(self, fact: TextDelta) -> list[Event]:
        # Once per streamed token: no setdefault, whose default list is built every call.
        parts = self._pending.get(fact.item_id)
        if parts is None:
            parts = self._pending[fact.item_id] = []
        parts.append(fact.delta)
        return [LlmResponseDeltaEvent(delta=fact.delta, current_agent=self._current_agent)]

    def _agent_changed(self, name: str) -> list[Event]:
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

    def _message(self, fact: MessageDone) -> list[Event]:
        # Providers that do not carry ids through (Chat Completions shims) still stream the
        # message's deltas just before it: drop the oldest pending message then.
        key = fact.item_id if fact.item_id in self._pending else next(iter(self._pending), None)
        if key is not None:
            del self._pending[key]
        agent = self._current_agent
        if fact.refusal and not fact.text and key is None:
            # The model declined: that is its answer, shown as the message it is.
            return [
                LlmResponseDeltaEvent(delta=fact.refusal, current_agent=agent),
                LlmResponseEvent(text=fact.refusal, current_agent=agent, refusal=True),
            ]
        return [LlmResponseEvent(text=fact.text, current_agent=agent)]

    def cut_off(self, reason: str) -> LlmResponseEvent:
        """The message being streamed when the model stopped at its limit (``reason``),
        as the answer it is, marked as cut off; the deltas sent join to its text."""
        text = self.current_text
        self._pending.clear()
        return LlmResponseEvent(
            text=text, current_agent=self._current_agent, incomplete_reason=reason
        )

    def _tool_called(self, fact: ToolCalled) -> list[Event]:
        if fact.call_id in self._called:
            return []
        self._called.add(fact.call_id)
        return [
            ToolCallEvent(
                call_id=fact.call_id,
                name=fact.name,
                description=self._descriptions.get(fact.name) or _humanise(fact.name),
                arguments=call_arguments(fact.raw, self._max_argument_chars),
                current_agent=self._current_agent,
            )
        ]

    def _tool_returned(self, fact: ToolReturned) -> list[Event]:
        call_id = fact.call_id
        # Only outputs of reported calls, once each: never an orphan tool_output.
        if call_id not in self._called or call_id in self._answered:
            return []
        self._answered.add(call_id)
        # Validated once, when built (a connector's ToolResponse is taken as it is).
        output = coerce_tool_response(fact.value, fact.agent or self._current_agent)
        if not output.display_response:
            return []  # §3: hidden output is neither sent nor persisted; the model still has it
        events: list[Event] = [
            ToolOutputEvent(call_id=call_id, output=output, current_agent=self._current_agent)
        ]
        if output.response_type == "error":
            message = output.error_message or output.response
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
    call_id = call_id_of(raw)
    if call_id is None:
        return None
    name = item.name or get(raw, "type") or "tool"
    agent = getattr(getattr(item, "agent", None), "name", None) or current_agent
    return PendingCall(
        call_id, name, descriptions.get(name) or _humanise(name), call_arguments(raw), agent
    )


def usage_of(usage: Any) -> Usage:
    """``agents.usage.Usage`` (or None) -> the ``end_of_stream.usage`` model."""
    return Usage(**{key: int(getattr(usage, key, 0) or 0) for key in Usage.model_fields})


# --------------------------------------------------------------------------- helpers


def _humanise(name: str) -> str:
    return f"Running {name.replace('_', ' ')}"


def _tool_error_code(output: ToolResponseData) -> ToolErrorCode:
    code = (output.debug_info or {}).get("error_code")
    return "tool_timeout" if code == "tool_timeout" else "tool_error"


def _short(message: str) -> str:
    """First line, bounded: error text for users never carries traces."""
    line = message.strip().split("\n", 1)[0].strip()
    if len(line) > MAX_ERROR_MESSAGE:
        line = line[: MAX_ERROR_MESSAGE - 1] + "…"
    return line
