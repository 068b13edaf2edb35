"""One turn's run in this process: the Agents SDK's stream into the turn's writer, then
the pause for approvals or the turn's end, then what the front end and the chat are told.

``TurnRun.run`` is the whole of it, in three steps: ``_run_model`` streams the run (a new
one, or one resumed after its approvals) and settles how it went, turning a failure into
the failed turn's ``error`` event; ``_end`` stores the pause or writes the
``end_of_stream`` and tells the hub; ``_report`` tells the front end (``TurnPlan.finished``)
and makes the suggested prompts and the chat's title (websocket.after_turn).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from agents import (
    RunErrorHandlerInput,
    RunErrorHandlerResult,
    RunErrorHandlers,
    Runner,
    RunState,
    TResponseInputItem,
)
from agents.result import RunResultStreaming

from connectors.caller_tools import drop_pending
from connectors.effects import CallLedger
from storage.approvals import ApprovalRequest, ApprovalStore
from storage.errors import TurnFenced
from storage.events import EventStore, interrupted_action_error
from storage.memory import MemoryStore
from storage.records import EventRecord, PausedRun, TurnUpdate
from storage.session import ChatSession, TurnSession
from websocket.active_turns import ActiveTurn, ActiveTurns
from websocket.after_turn import give_title, suggest_prompts
from websocket.hub import Frame, Hub
from websocket.memory import TurnMemory
from websocket.metrics import Metrics
from websocket.pause import (
    ResumeFailed,
    approved_effect,
    paused_state,
    restore,
    restore_session,
    shown_before_pause,
    wire_effect,
)
from websocket.sdk_events import incomplete_reason
from websocket.stream import PendingCall, StreamTranslator, pending_call, usage_of
from websocket.tracing import TurnTrace
from websocket.turn_phase import TurnPhase
from websocket.turn_plan import RunStatus, TurnEngine, TurnOutcome, TurnPlan
from websocket.usage_hooks import UsageHooks
from websocket.writer import EventWriter, WriterFailed
from wire.events import (
    EndOfStreamEvent,
    EndStatus,
    ErrorEvent,
    Event,
    LlmResponseDeltaEvent,
    LlmResponseEvent,
    ToolCallEvent,
    ToolOutputEvent,
    Usage,
    encode,
    now_ts,
)

logger = logging.getLogger("switchboard.turn")

STORAGE_FAILED = ErrorEvent(
    code="server_error",
    message="The database became unavailable, so this turn was stopped. Try again in a moment.",
    retryable=True,
)
# What the model reads for an approved call whose turn was stopped before it started.
NOT_STARTED = "Not run: the turn was stopped before this approved call started. Nothing was done."


def not_started_error(description: str) -> ErrorEvent:
    """The ``error`` of an approved call that never started: the turn was stopped first."""
    return ErrorEvent(
        code="tool_error",
        message=f"You approved this ({description.strip() or 'a tool call'}), but the "
        "answer was stopped before it started: nothing was done.",
        retryable=False,
    )


RESUME_FAILED = ErrorEvent(
    code="server_error",
    message="This turn could not continue after the approval (the server was updated "
    "while it waited). Nothing was run; ask again.",
    retryable=False,
)

# (user_id, chat_id, turn_id, via, ts) -> whether a paused turn was ended
Supersede = Callable[[str, str, str, str, str], Awaitable[bool]]


@dataclass(frozen=True)
class RunServices:
    """What every turn's run shares with the manager that starts it."""

    store: EventStore
    hub: Hub
    approvals: ApprovalStore
    metrics: Metrics
    db: Any
    approval_timeout: float
    turns: ActiveTurns  # this process's; a run detaches its own turn when it is over
    supersede: Supersede  # ends a paused turn (a cancel came while its pause was stored)
    hooks: UsageHooks  # every run's: token usage per model

    def writer(self, active: ActiveTurn, *, after_end: bool = False) -> EventWriter:
        def ended() -> None:
            active.move(TurnPhase.FINISHED)

        return EventWriter(
            self.store,
            self.hub,
            active.chat_id,
            active.turn_id,
            active.channel,
            after_end=after_end,
            metrics=self.metrics,
            on_end=ended,
        )


class TurnRun:
    """One run of a turn: started fresh, or resumed (``resume``) once every approval it
    paused on is decided. Built when the turn's task may begin (the chat's earlier tasks
    here are done): from then on the turn counts as running here."""

    def __init__(
        self,
        services: RunServices,
        engine: TurnEngine,
        active: ActiveTurn,
        prompt: str,
        plan: TurnPlan | None,
        resume: PausedRun | None,
        model_input: list[TResponseInputItem] | None = None,
    ) -> None:
        self.services, self.engine, self.active = services, engine, active
        self.prompt, self.resume = prompt, resume
        # The model's input when it is not just the prompt: a prompt with attachments
        # (websocket.attachment_input), a continue (websocket.turn_actions).
        self.model_input = model_input
        self.log_extra = {"chat_id": active.chat_id, "turn_id": active.turn_id}
        services.metrics.turns_running.inc()
        self.started = time.monotonic()
        self.trace: TurnTrace | None = None
        if engine.tracer is not None:  # makes the turn's span current in this task
            self.trace = engine.tracer.start_turn(
                user_id=active.user_id,
                chat_id=active.chat_id,
                turn_id=active.turn_id,
                resumed=resume is not None,
                front_end="api" if plan is not None else "socket",
            )
        # After the span: the writer's task takes this task's context, so its writes are
        # the turn's spans.
        self.writer = services.writer(active)
        self.tools = ToolTally(self.trace)
        self.translator = StreamTranslator(
            engine.orchestrator.name,
            engine.tool_descriptions,
            engine.agent_display_names,
            engine.max_argument_chars,
        )
        self.status: RunStatus = "completed"
        self.usage = Usage()
        self.shown_types: list[str] = []  # the response_types of the tool outputs shown
        self.text = _Text()
        self.external, self.plan = plan is not None, plan or TurnPlan()
        self.failed_with: ErrorEvent | None = None  # the error event of a failed turn
        self.agent = self.plan.agent or engine.orchestrator
        self.context = engine.make_context(active.user_id, active.chat_id, active.turn_id)
        # The calls that ask for approval: their effects, the decisions, the runs.
        self.ledger: CallLedger = getattr(self.context, "calls", None) or CallLedger()
        stored = ChatSession(services.db, active.chat_id)
        # The history fitted to the model's context: its summary and the items after it.
        self.memory: TurnMemory | None = None
        if engine.memory is not None:
            given = self.plan.input if self.plan.input is not None else prompt
            self.memory = TurnMemory(
                engine.memory, MemoryStore(services.db), stored, self.agent, self.context, given
            )
        memory = self.memory
        self.session = TurnSession(
            stored,
            history=memory.history if memory is not None else None,
            stored_tail=memory.stored_tail if memory is not None else None,
        )
        self.incomplete: str | None = None  # the model ran out of its token budget
        self.waiting: list[PendingCall] = []  # the calls a paused turn waits on
        self.asked: list[EventRecord] = []  # a paused turn's approval_required events
        # Another instance closed the turn (its lease lapsed while this one stalled).
        self.fenced = False

    async def run(self) -> None:
        """The run, its end, what follows; then this process no longer runs the turn."""
        await self._run_model()
        await self._end()
        try:
            await self._report()
        finally:
            self.services.turns.detach(self.active)

    # -- the model's run ----------------------------------------------------------------

    async def _run_model(self) -> None:
        """Stream the run into the writer and settle its status; a failure becomes the
        failed (or cancelled) turn's status and ``error`` event."""
        try:
            result = await self._start()
            self.active.result = result
            if self.active.stop_requested:
                result.cancel()
            await self._stream(result)
            self._settle(result)
        except WriterFailed:
            self._storage_failed()
        except ResumeFailed:
            self.status, self.failed_with = "failed", RESUME_FAILED
            logger.exception("a paused turn could not be resumed", extra=self.log_extra)
            self.writer.put(RESUME_FAILED)
        except Exception as exc:
            self._run_failed(exc)

    async def _start(self) -> RunResultStreaming:
        engine, plan = self.engine, self.plan
        run_config = plan.run_config or engine.run_config
        if self.memory is not None:  # every model call kept within the model's budget
            run_config = self.memory.run_config(run_config)
        if self.resume is None:
            return Runner.run_streamed(
                self.agent,
                input=plan.input if plan.input is not None else self._input(),
                context=self.context,
                run_config=run_config,
                max_turns=engine.max_model_turns,
                session=self.session,
                error_handlers=self._error_handlers(),
                hooks=self.services.hooks,
            )
        state = await self._restore(self.resume)
        return Runner.run_streamed(
            self.agent,
            input=state,
            run_config=run_config,
            max_turns=engine.max_model_turns,
            session=self.session,
            error_handlers=self._error_handlers(),
            hooks=self.services.hooks,
        )

    def _input(self) -> Any:
        return self.model_input if self.model_input is not None else self.prompt

    def _error_handlers(self) -> RunErrorHandlers[Any]:
        handlers = self.plan.error_handlers
        return handlers if handlers is not None else REFUSAL_AS_ANSWER

    async def _restore(self, resume: PausedRun) -> RunState[Any]:
        """§3a: the person has decided every call the turn paused on."""
        restore_session(self.session, resume.state)
        self.shown_types[:] = shown_before_pause(resume.state)
        state = await restore(self.agent, resume.state, self.context, resume.approvals)
        approved = [a for a in resume.approvals if a.status == "approved"]
        # Exactly what the person was shown is what runs (connectors.effects).
        self.ledger.approved.update({a.call_id: approved_effect(a) for a in approved})
        self.translator.resume(
            resume.state.get("agent") or self.agent.name,
            approved=[a.call_id for a in approved],
            declined=[a.call_id for a in resume.approvals if a.status != "approved"],
        )
        self.tools.agents.update({a.call_id: a.current_agent for a in approved})
        return state

    async def _stream(self, result: RunResultStreaming) -> None:
        plan, writer = self.plan, self.writer
        # Locals: this loop runs once per streamed token (bench/streaming.py).
        translate, text, put = self.translator.translate, self.text, writer.put
        async for sdk_event in result.stream_events():
            if plan.observe is not None:
                _observe(plan.observe, sdk_event, self.log_extra)
            for event in translate(sdk_event):
                if isinstance(event, LlmResponseDeltaEvent):
                    text.delta(event.delta)
                else:
                    self.tools.see(event)
                    if isinstance(event, LlmResponseEvent):
                        text.message(event.text)
                    elif isinstance(event, ToolOutputEvent):
                        self.shown_types.append(event.output.response_type)
                put(event)
            if writer.error is not None:
                raise WriterFailed("could not persist the turn") from writer.error

    def _settle(self, result: RunResultStreaming) -> None:
        """How a run that streamed to its end went: completed, cancelled, or paused on
        calls that wait for approval."""
        self.usage = usage_of(result.context_wrapper.usage)
        if self.active.stop_requested:
            self.status = "cancelled"
        elif result.interruptions:
            current = self.translator.current_agent
            self.waiting = [
                call
                for item in result.interruptions
                if (call := pending_call(item, self.engine.tool_descriptions, current)) is not None
            ]
            if len(self.waiting) != len(result.interruptions):
                raise RuntimeError("the run paused on a call without a call id")
            self.status = "paused"
            self.active.move(TurnPhase.PAUSING)

    def _storage_failed(self) -> None:
        self.status = "failed"
        logger.error("turn aborted: storage unavailable", extra=self.log_extra)
        if self.active.result is not None:
            self.active.result.cancel()  # no more tool calls for a turn that has stopped
            self.usage = usage_of(self.active.result.context_wrapper.usage)
        # Written with the end_of_stream once the store is back (websocket.writer).
        self.failed_with = STORAGE_FAILED
        self.writer.put(STORAGE_FAILED)

    def _run_failed(self, exc: Exception) -> None:
        self.status = "cancelled" if self.active.stop_requested else "failed"
        self.incomplete = incomplete_reason(exc)
        if self.status == "failed" and self.incomplete is not None:
            self._cut_off(self.incomplete)
        elif self.status == "failed":
            # Logged server-side by the app's reporter; the event says only what is safe.
            error = self.failed_with = self.engine.report_failure(exc, self.log_extra)
            self.services.metrics.model_errors.labels(error.code).inc()
            self.writer.put(error)
        if self.active.result is not None:
            self.usage = usage_of(self.active.result.context_wrapper.usage)

    def _cut_off(self, reason: str) -> None:
        """The model stopped at its limit (``reason``): not a failure but an answer cut
        short, which the person sees as the turn's answer, marked as such."""
        self.status = "completed"
        answer = self.translator.cut_off(reason)
        self.text.message(answer.text)
        self.writer.put(answer)
        if answer.text:
            # The next turn's model reads the cut answer as what it said (the SDK kept
            # nothing of the step that stopped).
            self.session.pending.append({"role": "assistant", "content": answer.text})
        logger.info("turn's answer cut off", extra={**self.log_extra, "reason": reason})

    # -- the pause or the end ---------------------------------------------------------

    async def _end(self) -> None:
        """Store the pause, or write the turn's end; then tell the hub, and count it."""
        if self.status != "completed" and self.text.partial:
            self.text.final = self.text.partial  # what the user saw before the turn stopped
        try:
            if self.status == "paused":
                await self._pause()
            if self.status in ("cancelled", "failed"):
                await self._settle_approved()
            if self.status != "paused":
                await self._write_end(self.status)
        except WriterFailed:
            logger.error("turn could not be closed in storage", extra=self.log_extra)
        finally:
            await self._publish_end()
            self._count()

    async def _pause(self) -> None:
        """Store the pause (docs/protocol.md §3a) after every event before it; its
        ``approval_required`` events become ``asked``. When storage fails the turn fails
        instead, its end written by a fresh writer."""
        assert self.active.result is not None
        try:
            await self.writer.close()
            resolved = self.ledger.resolved
            requests = [
                ApprovalRequest(
                    new_approval_id(),
                    call.call_id,
                    call.name,
                    call.description,
                    call.arguments,
                    call.current_agent,
                    wire_effect(resolved.get(call.call_id)),
                )
                for call in self.waiting
            ]
            expires_at = datetime.now(UTC) + timedelta(seconds=self.services.approval_timeout)
            paused = await self.services.approvals.pause(
                self.active.chat_id,
                self.active.turn_id,
                requests,
                paused_state(
                    self.active.result,
                    self.session,
                    self.translator.current_agent,
                    self.shown_types,
                ),
                self.usage.model_dump(),
                expires_at,
                now_ts(),
                text=self.text.final,
            )
        except TurnFenced:
            logger.warning("turn closed elsewhere before it could pause", extra=self.log_extra)
            self.fenced = True
            return
        except Exception:
            logger.exception("could not store the turn's pause", extra=self.log_extra)
            self.writer = self.services.writer(self.active)
            self.writer.put(STORAGE_FAILED)
            self.status, self.failed_with = "failed", STORAGE_FAILED
            return
        if paused.cancel_requested:  # asked on another instance before the run paused
            self.active.move(TurnPhase.PAUSING_STOPPED)
        self.asked = paused.events
        self.services.metrics.approvals.labels("asked").inc(len(self.asked))
        self.services.metrics.events_persisted.inc(len(self.asked))
        extra = {**self.log_extra, "approvals": len(self.asked)}
        logger.info("turn paused for approval", extra=extra)

    async def _settle_approved(self) -> None:
        """A resumed turn that stopped says what became of each call the person approved
        whose result it has not shown: its result, once the call has run to its end
        (``connectors.approvals`` carries a started call through a stop), or that it
        never started. Never silence, which reads the same whether it was sent or not."""
        if self.resume is None or self.writer.error is not None:
            return
        for approval in self.resume.approvals:
            call_id = approval.call_id
            if approval.status != "approved" or self.translator.answered(call_id):
                continue
            started = self.ledger.runs.get(call_id)
            if started is None:
                self.writer.put(not_started_error(approval.description))
                self._answer(call_id, NOT_STARTED)
                continue
            try:
                value = await asyncio.shield(started)  # bounded by the tool's own timeout
            except Exception:
                logger.exception("an approved call failed after a stop", extra=self.log_extra)
                self.writer.put(interrupted_action_error([approval.name]))
                continue
            agent = self.tools.agents.get(call_id) or approval.current_agent
            for event in self.translator.returned(call_id, value, agent):
                self.tools.see(event)
                if isinstance(event, ToolOutputEvent):
                    self.shown_types.append(event.output.response_type)
                self.writer.put(event)
            self._answer(call_id, str(value))

    def _answer(self, call_id: str, output: str) -> None:
        """What the next turn's model reads as the call's output, unless the run kept one."""
        pending = self.session.pending
        if not any(
            item.get("type") == "function_call_output" and item.get("call_id") == call_id
            for item in pending
        ):
            pending.append({"type": "function_call_output", "call_id": call_id, "output": output})

    async def _write_end(self, status: EndStatus) -> None:
        self.active.move(TurnPhase.ENDING)  # its status is final: nothing left to stop
        self.writer.put(
            EndOfStreamEvent(status=status, usage=self.usage),
            TurnUpdate(
                turn_id=self.active.turn_id,
                status=status,
                final_text=self.text.final,
                # The checkpointed text is only for resuming a running turn: once the
                # answer is final_text, a second copy is bytes stored for nothing.
                partial_text="",
                usage=self.usage.model_dump(),
                # A call of the API caller's own tools ends the turn; its output is the
                # caller's to give (connectors.caller_tools), not the placeholder.
                items=drop_pending(self.session.items_to_keep(status == "completed")),
            ),
        )
        await self.writer.close()
        if self.writer.cancelled_at_end:  # a stop asked elsewhere got there first
            self.status = "cancelled"

    async def _publish_end(self) -> None:
        active, hub = self.active, self.services.hub
        if self.fenced or isinstance(self.writer.error, TurnFenced):
            await self._catch_up_closed_elsewhere()
        hub.end_turn(active.channel, active.turn_id)
        if self.status == "paused":
            # No process runs a paused turn: from here a cancel or a prompt ends it
            # in storage (§3a), and a decision resumes it wherever it is taken.
            self.services.turns.detach(active)
        # After end_turn: a socket joining now replays the pause from storage.
        hub.publish(active.channel, [Frame(r.seq, encode(r.to_wire())) for r in self.asked])
        if self.asked and active.stop_requested:  # cancelled while the pause was stored
            try:
                await self.services.supersede(
                    active.user_id, active.chat_id, active.turn_id, "cancel", now_ts()
                )
            except Exception:
                logger.exception("could not end a paused turn on cancel", extra=self.log_extra)

    async def _catch_up_closed_elsewhere(self) -> None:
        """The instance that closed the turn told only its own sockets (and, through
        Redis, the others'); without Redis those watching here would wait for an end that
        never comes. They get what storage holds after the last frame published here:
        the closer's ``end_of_stream`` (a socket drops what it already has, by seq)."""
        active, hub = self.active, self.services.hub
        running = hub.running_turn(active.channel)
        after = running.last_seq if running is not None and running.turn_id == active.turn_id else 0
        try:
            records = await self.services.store.list_after(active.chat_id, after)
        except Exception:
            logger.warning("could not read the end of a turn closed elsewhere", exc_info=True)
            return
        hub.deliver_local(active.channel, [Frame(r.seq, encode(r.to_wire())) for r in records])

    def _count(self) -> None:
        metrics = self.services.metrics
        metrics.turns_running.dec()
        if self.status != "paused":  # a pause is not an end: the turn goes on later
            metrics.turns.labels(self.status).inc()
            metrics.turn_seconds.observe(time.monotonic() - self.started)
        waiting = frozenset(call.call_id for call in self.waiting)
        self.tools.record(metrics, waiting=waiting)
        if self.trace is not None:
            error = self.failed_with.code if self.failed_with is not None else None
            self.trace.end(self.status, self.usage, error, waiting)

    # -- after the end ------------------------------------------------------------------

    async def _report(self) -> None:
        """Tell the front end how the turn went; then its suggestions and the title."""
        if self.plan.finished is not None:
            # Its end is out: a new prompt for this chat now waits for this task.
            try:
                await self.plan.finished(self._outcome())
            except Exception:
                logger.exception("the turn's finish hook failed", extra=self.log_extra)
        active, engine = self.active, self.engine
        if self._suggests() and engine.suggest is not None:
            await suggest_prompts(
                active,
                engine.suggest,
                self.prompt,
                self.text.final,
                self.shown_types,
                lambda: self.services.writer(active, after_end=True),
            )
        # A title needs only the prompt: a first turn that failed, was stopped or waits
        # for approvals must not leave the chat untitled.
        if active.prompt_seq == 1 and self.resume is None:
            await give_title(
                engine.on_first_turn, active.user_id, active.chat_id, active.turn_id, self.prompt
            )

    def _suggests(self) -> bool:
        """Suggested prompts follow a completed, stored turn of the socket's own."""
        return self.status == "completed" and self.writer.error is None and not self.external

    def _outcome(self) -> TurnOutcome:
        return TurnOutcome(
            self.status,
            self.usage.model_dump(),
            self.text.final,
            self.failed_with.payload() if self.failed_with is not None else None,
            tuple(r.to_wire() for r in self.asked),
            self.incomplete,
        )


class _Text:
    """The turn's text: its last whole message, and the one streaming (kept as pieces:
    ``+=`` on an attribute copies the whole text per delta)."""

    def __init__(self) -> None:
        self.final = ""
        self._parts: list[str] = []

    def delta(self, delta: str) -> None:
        self._parts.append(delta)

    def message(self, text: str) -> None:
        self.final = text
        self._parts.clear()

    @property
    def partial(self) -> str:
        return "".join(self._parts)


def _refusal_as_answer(data: RunErrorHandlerInput[Any]) -> RunErrorHandlerResult:
    # A refusal is the model's answer, not a failure: the turn completes with it (its
    # message, with the refusal part, is already in the run's items).
    return RunErrorHandlerResult(
        final_output=getattr(data.error, "refusal", ""), include_in_history=False
    )


REFUSAL_AS_ANSWER: RunErrorHandlers[Any] = {"model_refusal": _refusal_as_answer}


def new_approval_id() -> str:
    return "ap_" + uuid.uuid4().hex


def _observe(
    observe: Callable[[object], None], sdk_event: object, log_extra: dict[str, Any]
) -> None:
    try:
        observe(sdk_event)
    except Exception:
        # An observer's bug must not end the turn that everyone else is watching.
        logger.exception("a turn observer failed", extra=log_extra)


class ToolTally:
    """Tool calls of one turn by agent and outcome, for the metrics."""

    def __init__(self, trace: TurnTrace | None = None) -> None:
        self.agents: dict[str, str] = {}
        self.outcomes: dict[str, str] = {}
        self.trace = trace  # told of each call too, when the turn is traced

    def see(self, event: Event) -> None:
        if isinstance(event, ToolCallEvent):
            self.agents[event.call_id] = event.current_agent
            if self.trace is not None:
                self.trace.tool_called(event.call_id, event.name, event.current_agent)
        elif isinstance(event, ToolOutputEvent):
            failed = event.output.response_type == "error"
            outcome = self.outcomes[event.call_id] = "error" if failed else "ok"
            if self.trace is not None:
                self.trace.tool_finished(event.call_id, outcome)

    def record(self, metrics: Metrics, waiting: set[str] | frozenset[str] = frozenset()) -> None:
        """Count the calls that ran; ``waiting`` ones (paused for approval) have not yet:
        they are counted by the resumed turn, if they run at all."""
        for call_id, agent in self.agents.items():
            if call_id in waiting:
                continue
            # No tool_output: a hidden result, which is a success.
            metrics.tool_calls.labels(agent, self.outcomes.get(call_id, "ok")).inc()
