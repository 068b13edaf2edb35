"""One turn's SDK events and outcome -> AG-UI events (docs/ag-ui.md). Pure: no I/O.

Tool calls go through the socket's own ``StreamTranslator``, so an AG-UI client sees exactly
the calls and cards a chat socket sees: hand-off tools are not calls, a tool's result is
the connector's ToolResponse (in ``TOOL_CALL_RESULT.content``, as JSON, ``debug_info`` left
out), and a result whose ``display_response`` is false never leaves the server. Text is
read from the SDK's own facts (``websocket.sdk_events``), which keep the model's message
ids, so two messages streamed at once stay two AG-UI messages.

How a run ends (``finish``): ``RUN_FINISHED`` with outcome ``success``, ``interrupt`` (the
turn waits for approvals: one ``tool_call`` interrupt per call, whose id is the approval
id), or ``cancelled``; a failed turn ends with ``RUN_ERROR``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from app.agui.request import RESPONSE_SCHEMA
from websocket.sdk_events import MessageDone, TextDelta, ToolReturned, read
from websocket.stream import StreamTranslator
from websocket.turn_plan import TurnOutcome
from wire.events import ToolCallEvent, ToolOutputEvent, encode

logger = logging.getLogger("switchboard.agui")

# The key of Switchboard's own fields in an event's, tool call's or interrupt's metadata
# (AG-UI reserves "ag-ui"; every other key is the application's).
META = "switchboard"
FAILED = "The run failed."
USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class RunEvents:
    """The AG-UI events of one run: a new turn, or a paused turn resumed (``resuming``)."""

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        orchestrator_name: str,
        tool_descriptions: Mapping[str, str],
        agent_display_names: Mapping[str, str],
    ) -> None:
        self.thread_id, self.run_id = thread_id, run_id
        self._display_names = agent_display_names
        self._tools = StreamTranslator(orchestrator_name, tool_descriptions, agent_display_names)
        self._open: dict[str, str] = {}  # open text messages: model item id -> message id
        self._called: set[str] = set()  # calls whose TOOL_CALL_START went out
        self._answered: set[str] = set()  # calls whose TOOL_CALL_RESULT went out, or none will
        # A resumed turn's usage counts from its start; a run reports only its own calls.
        self._usage_before: Mapping[str, Any] = {}

    def start(self) -> list[BaseEvent]:
        return [
            RunStartedEvent(
                thread_id=self.thread_id, run_id=self.run_id, protocol_version=PROTOCOL_VERSION
            )
        ]

    def resuming(
        self,
        current_agent: str,
        approved: Iterable[str],
        declined: Iterable[str],
        usage_before: Mapping[str, Any] | None = None,
    ) -> None:
        """The run continues a paused turn: its ``approved`` calls were shown in the run
        that paused and their results come now, against the same tool call ids; the
        ``declined`` ones never ran, and get no result (as on the socket).
        ``usage_before``: the turn's usage when it paused, which that run reported."""
        approved, declined = list(approved), list(declined)
        self._usage_before = usage_before or {}
        self._tools.resume(current_agent, approved, declined)
        self._called.update(approved, declined)
        self._answered.update(declined)

    # ----------------------------------------------------------------------- the stream

    def feed(self, sdk_event: object) -> list[BaseEvent]:
        try:
            fact = read(sdk_event)
            if isinstance(fact, TextDelta):
                return self._delta(fact)
            if isinstance(fact, MessageDone):
                return self._message(fact)
            events = [
                converted
                for event in self._tools.translate(sdk_event)
                for converted in self._tool_event(event)
            ]
            if isinstance(fact, ToolReturned) and not events:
                events = self._hidden(fact.call_id)
            return events
        except Exception:
            # A shape we did not foresee must not end the person's run; the log shows it.
            logger.warning("could not translate %s", type(sdk_event).__name__, exc_info=True)
            return []

    def _delta(self, fact: TextDelta) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        message_id = self._open.get(fact.item_id)
        if message_id is None:
            message_id = self._open[fact.item_id] = new_id("msg")
            events.append(self._text_start(message_id))
        events.append(TextMessageContentEvent(message_id=message_id, delta=fact.delta))
        return events

    def _message(self, fact: MessageDone) -> list[BaseEvent]:
        # Providers that do not carry ids through (Chat Completions shims) still stream a
        # message's deltas just before it: the oldest open message is the one that ended.
        key = fact.item_id if fact.item_id in self._open else next(iter(self._open), None)
        if key is not None:
            return [TextMessageEndEvent(message_id=self._open.pop(key))]
        # A model that did not stream: the whole text at once. A refusal is the model's
        # answer too, shown as the message it is (marked, as the chat socket marks it).
        refused = bool(fact.refusal) and not fact.text
        text = fact.refusal if refused else fact.text
        if not text:
            return []  # an empty message: nothing to show
        message_id = new_id("msg")
        return [
            self._text_start(message_id, refusal=refused),
            TextMessageContentEvent(message_id=message_id, delta=text),
            TextMessageEndEvent(message_id=message_id),
        ]

    def _text_start(self, message_id: str, *, refusal: bool = False) -> TextMessageStartEvent:
        agent = self._tools.current_agent
        about: dict[str, object] = {"agent": agent}
        if refusal:
            about["refusal"] = True
        return TextMessageStartEvent(
            message_id=message_id,
            role="assistant",
            name=self._display_names.get(agent, agent),
            metadata={META: about},
        )

    def _tool_event(self, event: object) -> list[BaseEvent]:
        if isinstance(event, ToolCallEvent):
            return self._call(
                event.call_id, event.name, event.arguments, event.description, event.current_agent
            )
        if isinstance(event, ToolOutputEvent):
            self._answered.add(event.call_id)
            card = event.output.model_dump(exclude={"debug_info"})
            return [
                ToolCallResultEvent(
                    message_id=new_id("tool"),
                    tool_call_id=event.call_id,
                    content=encode(card),
                    role="tool",
                    metadata={META: {"response_type": event.output.response_type}},
                )
            ]
        # Agent changes and hand-offs are not AG-UI events (the agent's display name is
        # each text message's ``name``); a failing tool's card is its TOOL_CALL_RESULT.
        return []

    def _call(
        self, call_id: str, name: str, arguments: dict[str, Any], description: str, agent: str
    ) -> list[BaseEvent]:
        self._called.add(call_id)
        return [
            ToolCallStartEvent(
                tool_call_id=call_id,
                tool_call_name=name,
                metadata={META: {"description": description, "agent": agent}},
            ),
            ToolCallArgsEvent(tool_call_id=call_id, delta=encode(arguments)),
            ToolCallEndEvent(tool_call_id=call_id),
        ]

    def _hidden(self, call_id: str) -> list[BaseEvent]:
        """A result the person must not see (``display_response`` false). The call gets an
        empty result all the same: a call left without one is, to an AG-UI client, a
        client tool it must run and answer (``pendingToolCallIds``)."""
        if call_id not in self._called or call_id in self._answered:
            return []
        self._answered.add(call_id)
        return [
            ToolCallResultEvent(
                message_id=new_id("tool"),
                tool_call_id=call_id,
                content="",
                role="tool",
                metadata={META: {"hidden": True}},
            )
        ]

    # ----------------------------------------------------------------------- the end

    def finish(self, outcome: TurnOutcome) -> list[BaseEvent]:
        """The run's last events: open text messages closed, then how it ended."""
        events: list[BaseEvent] = [TextMessageEndEvent(message_id=m) for m in self._open.values()]
        self._open.clear()
        usage = [TokenUsage(**{key: self._own(outcome.usage, key) for key in USAGE_KEYS})]
        if outcome.status == "failed":
            error = outcome.error or {}
            events.append(
                RunErrorEvent(
                    message=str(error.get("message") or FAILED),
                    code=str(error.get("code") or "server_error"),
                    usage=usage,
                    # Whether sending the same message again may work (a busy model).
                    metadata={META: {"retryable": bool(error.get("retryable"))}},
                )
            )
            return events
        if outcome.status == "paused":
            events += self._asked(outcome.approvals)
            finished: Any = RunFinishedInterruptOutcome(
                interrupts=[interrupt(asked) for asked in outcome.approvals]
            )
        elif outcome.status == "cancelled":
            finished = RunFinishedCancelledOutcome()
        else:
            finished = RunFinishedSuccessOutcome()
        events.append(
            RunFinishedEvent(
                thread_id=self.thread_id, run_id=self.run_id, outcome=finished, usage=usage
            )
        )
        return events

    def _own(self, usage: Mapping[str, Any], key: str) -> int:
        before = self._usage_before.get(key)
        used = int(usage.get(key) or 0)
        return max(0, used - int(before)) if isinstance(before, int) else used

    def _asked(self, approvals: Iterable[Mapping[str, Any]]) -> list[BaseEvent]:
        """The calls an interrupt names that this run has not shown (none, as the SDK
        reports each call before pausing on it; an interrupt must name a shown call)."""
        events: list[BaseEvent] = []
        for asked in approvals:
            call_id = str(asked["call_id"])
            if call_id not in self._called:
                events += self._call(
                    call_id,
                    str(asked["name"]),
                    dict(asked["arguments"]),
                    str(asked["description"]),
                    str(asked["current_agent"]),
                )
        return events


def interrupt(asked: Mapping[str, Any]) -> Interrupt:
    """The ``tool_call`` interrupt of an ``approval_required`` payload: its id is the
    approval id, the call is the one shown by ``toolCallId``, and the answer is
    ``{"approved": bool, "reason"?}`` for exactly those arguments (no edits). What the
    call will do, when its connector resolved it before asking, leads the message and is
    in the metadata as ``effect``."""
    effect = asked.get("effect")
    what = f"{effect['summary']} — " if isinstance(effect, Mapping) else ""
    return Interrupt(
        id=str(asked["approval_id"]),
        reason="tool_call",
        message=f"{asked['description']}: {what}approve {asked['name']} with exactly these "
        "arguments?",
        tool_call_id=str(asked["call_id"]),
        response_schema=RESPONSE_SCHEMA,
        expires_at=asked.get("expires_at"),
        metadata={
            META: {
                "name": asked["name"],
                "description": asked["description"],
                "arguments": asked["arguments"],
                "effect": effect,
                "agent": asked["current_agent"],
            }
        },
    )


def run_error(
    code: str, message: str, interrupts: Iterable[Mapping[str, Any]] = ()
) -> RunErrorEvent:
    """A run refused before it began: the thread's open interrupts, if any, ride along in
    the metadata, so a client that lost them can answer."""
    open_ = [interrupt(asked).model_dump(mode="json", by_alias=True) for asked in interrupts]
    return RunErrorEvent(
        message=message, code=code, metadata={META: {"interrupts": open_}} if open_ else None
    )
