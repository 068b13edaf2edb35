"""Running turns: one task per turn, independent of the sockets that watch it.

A turn outlives the socket that started it: when the browser drops, the turn finishes,
is persisted, and the client resumes later. ``TurnManager`` owns the running tasks so
``cancel`` from any socket and a graceful shutdown can reach them.

One turn per chat, whatever the timing or the number of processes, rests on facts in the
database, never on "I am alone" or on Redis:

- storage lets a chat have one running turn, and each running turn names its runner (this
  instance) and holds a lease that the runner renews every ``LeaseTimings.renew_every``;
- a turn is orphaned only when its lease has expired: any instance then closes it
  (``end_of_stream`` ``failed``), at the latest ``LeaseTimings.sweep_every`` later;
- every write of a turn is fenced: it commits only while the turn still runs, so a runner
  that stalled past its lease cannot add to a turn closed elsewhere, and stops as soon as
  its renewal shows the lease lost;
- a stop is a database fact too (Redis only makes it arrive sooner);
- here, everything about a turn is keyed by its turn id and removed only by its own
  task, and a new turn of a chat starts only once the chat's earlier tasks here are done,
  so nothing of one turn lands among the next one's events.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from agents import Agent, RunConfig, Runner
from agents.result import RunResultStreaming

from storage.approvals import ApprovalRequest, ApprovalStore, Decided
from storage.errors import TurnFenced, TurnInProgress
from storage.events import EventStore
from storage.records import EventRecord, Lease, PausedRun, TurnUpdate
from storage.session import ChatSession, TurnSession
from websocket.cluster import Cluster, LocalCluster
from websocket.hub import Frame, Hub, channel_of
from websocket.metrics import Metrics
from websocket.pause import ResumeFailed, paused_state, restore, restore_session
from websocket.ports import FailureReporter
from websocket.protocol import encode, now_ts
from websocket.stream import PendingCall, StreamTranslator, pending_call, usage_of
from websocket.writer import EventWriter, WriterFailed
from wire.events import (
    EndOfStreamEvent,
    ErrorEvent,
    Event,
    LlmResponseDeltaEvent,
    LlmResponseEvent,
    SuggestedPromptsEvent,
    ToolCallEvent,
    ToolOutputEvent,
    Usage,
)

logger = logging.getLogger("switchboard.turn")

STORAGE_FAILED = ErrorEvent(
    code="server_error",
    message="The database became unavailable, so this turn was stopped. Try again in a moment.",
    retryable=True,
)
RESUME_FAILED = ErrorEvent(
    code="server_error",
    message="This turn could not continue after the approval (the server was updated "
    "while it waited). Nothing was run; ask again.",
    retryable=False,
)
DEFAULT_APPROVAL_TIMEOUT = 86_400.0
DEFAULT_LEASE_SECONDS = 15.0


@dataclass(frozen=True)
class LeaseTimings:
    """How often an instance renews its turns' leases and looks for expired ones.

    Renewing a few times per lease survives a missed renewal or two; renewing at least
    every 2 s also bounds how long a stop asked on another instance takes without Redis.
    A dead instance's turn ends at most ``seconds + sweep_every`` after its last renewal.
    """

    seconds: float

    @property
    def renew_every(self) -> float:
        return min(self.seconds / 3, 2.0)

    @property
    def sweep_every(self) -> float:
        return min(self.seconds / 3, 5.0)


# (prompt, final text, response_types shown) -> follow-up prompts
Suggester = Callable[[str, str, list[str]], Awaitable[list[str]]]
# (user_id, chat_id, turn_id) -> the run context handed to tools
ContextFactory = Callable[[str, str, str], Any]
# (user_id, chat_id, prompt) -> called once after the first turn of a chat completes
TitleHook = Callable[[str, str, str], Awaitable[None]]


@dataclass
class TurnEngine:
    """Everything a turn needs that does not change between turns."""

    orchestrator: Agent[Any]
    run_config: RunConfig
    tool_descriptions: dict[str, str]
    agent_display_names: dict[str, str]
    make_context: ContextFactory
    report_failure: FailureReporter
    suggest: Suggester | None = None
    on_first_turn: TitleHook | None = None
    max_model_turns: int = 12


# How a run ends: a turn's final status, or paused to wait for approvals.
RunStatus = Literal["completed", "cancelled", "failed", "paused"]


@dataclass(frozen=True)
class TurnOutcome:
    """How a turn ended (or paused), for ``TurnPlan.finished``."""

    status: RunStatus
    usage: dict[str, int]
    final_text: str
    error: dict[str, Any] | None = None  # the ``error`` event's payload of a failed turn
    # A paused turn's approvals (``approval_required`` payloads), in order.
    approvals: tuple[dict[str, Any], ...] = ()


@dataclass
class TurnPlan:
    """A turn started by another front end than the socket (the Open Responses API).

    ``agent``, ``input`` (model input items) and ``run_config`` replace the orchestrator,
    the prompt text and the engine's run config. ``observe`` sees every SDK stream event
    as it comes (it must neither block nor raise; errors are logged). ``finished`` runs
    once the turn's end (or pause) is committed and before another turn of the chat can
    start here. No suggested prompts are made for such turns. A turn resumed after its
    approvals runs the orchestrator unless a plan gives its ``agent`` again.
    """

    agent: Agent[Any] | None = None
    input: list[Any] | None = None
    run_config: RunConfig | None = None
    observe: Callable[[object], None] | None = None
    finished: Callable[[TurnOutcome], Awaitable[None]] | None = None


@dataclass(eq=False)
class _Active:
    """A turn's task in this process. Found by turn id; removed only by that task."""

    turn_id: str
    chat_id: str
    user_id: str
    prompt_seq: int  # orders the chat's turns: the highest is its current one
    channel: str  # the hub channel of the turn's chat
    task: asyncio.Task[None] | None = None
    result: RunResultStreaming | None = None
    cancel_requested: bool = False
    # After end_of_stream the turn may still be writing its suggestions; a new prompt
    # cancels their generation (and they are fenced out of storage once a later turn of
    # the chat has begun anywhere).
    suggestion: asyncio.Task[list[str]] | None = None
    # Its end's status is decided (the end_of_stream is being written): a cancel here
    # now has nothing to stop (one asked elsewhere is settled by storage: CancelRequested).
    ending: bool = False
    # Set when its end_of_stream is committed, before anyone can see it: for the client
    # nothing runs any more, so a prompt may come.
    finishing: bool = False
    # The run stopped for approvals and the pause is being stored: a cancel now ends the
    # paused turn right after (§3a), rather than reaching a run that is over.
    pausing: bool = False

    def stop(self) -> None:
        """Stop the run (no more model or tool calls); it ends as cancelled."""
        self.cancel_requested = True
        if self.result is not None:
            self.result.cancel()


class ServerDraining(RuntimeError):
    """This instance is shutting down and starts nothing new; try again in a moment."""


@dataclass(frozen=True)
class Submitted:
    """The outcome of a prompt: a new turn, or the existing one for a repeated id."""

    user_prompt: EventRecord
    created: bool
    task: asyncio.Task[None] | None = None  # the running turn, when one was started


class TurnManager:
    def __init__(
        self,
        store: EventStore,
        hub: Hub,
        engine: TurnEngine,
        db: Any,
        cluster: Cluster | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        metrics: Metrics | None = None,
        approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT,
    ) -> None:
        self.store = store
        self.approvals = ApprovalStore(db)
        self.hub = hub
        self.engine = engine
        self.db = db
        self.cluster: Cluster = cluster or LocalCluster()
        # This instance's claim on the turns it runs (storage.records.Lease).
        self.lease = Lease(self.cluster.instance_id, lease_seconds)
        self.timings = LeaseTimings(lease_seconds)
        self.approval_timeout = approval_timeout
        self.draining = False
        self.metrics = metrics or Metrics()
        self._active: dict[str, _Active] = {}  # by turn id

    @property
    def running_count(self) -> int:
        return len(self._active)

    def running_for(self, user_id: str) -> int:
        # A finishing turn (writing its suggestions) no longer counts: its user may go on.
        return sum(
            1
            for active in self._active.values()
            if active.user_id == user_id and not active.finishing
        )

    def _of_chat(self, chat_id: str) -> list[_Active]:
        return [active for active in self._active.values() if active.chat_id == chat_id]

    def _current(self, chat_id: str) -> _Active | None:
        """The chat's newest turn here (earlier ones can only be finishing)."""
        return max(self._of_chat(chat_id), key=lambda active: active.prompt_seq, default=None)

    async def submit(
        self,
        user_id: str,
        chat_id: str,
        text: str,
        client_message_id: str | None,
        ts: str,
        plan: TurnPlan | None = None,
    ) -> Submitted:
        """Persist the prompt and start the turn (raises ``TurnInProgress``, and
        ``ClientMessageReused`` for a known ``client_message_id`` with another text)."""
        channel = channel_of(user_id, chat_id)
        # ``owner``: the chat may have been deleted, and its id taken by another user,
        # since this user's socket checked it (raises ChatNotFound).
        try:
            turn, event, created = await self.store.start_turn(
                chat_id, text, client_message_id, ts, owner=user_id, lease=self.lease
            )
        except TurnInProgress as exc:
            # §3a: a prompt while the turn waits for approvals ends that turn (its
            # approvals superseded); a turn whose runner's lease expired is closed.
            # Either way the chat is free again.
            if not (
                await self._supersede(user_id, chat_id, exc.turn_id, "prompt", ts)
                or await self._close_orphan(chat_id, exc.turn_id, channel, ts)
            ):
                raise
            turn, event, created = await self.store.start_turn(
                chat_id, text, client_message_id, ts, owner=user_id, lease=self.lease
            )
        if not created:
            return Submitted(event, created=False)
        self.metrics.events_persisted.inc()  # the user_prompt
        task = self._start(user_id, chat_id, turn.id, text, event.seq, plan, first=event)
        return Submitted(event, created=True, task=task)

    def _start(
        self,
        user_id: str,
        chat_id: str,
        turn_id: str,
        prompt: str,
        prompt_seq: int,
        plan: TurnPlan | None,
        resume: PausedRun | None = None,
        first: EventRecord | None = None,
    ) -> asyncio.Task[None]:
        """Start the turn's task and register it, with no await in between: from here on
        this process runs the turn, for cancels and lease renewals. ``first``: the
        turn's ``user_prompt``, published once the chat's earlier tasks here are done."""
        active = _Active(
            turn_id=turn_id,
            chat_id=chat_id,
            user_id=user_id,
            prompt_seq=prompt_seq,
            channel=channel_of(user_id, chat_id),
        )
        earlier = [other for other in self._of_chat(chat_id) if other.task is not None]
        active.task = asyncio.create_task(
            self._run(active, prompt, plan, resume, first, earlier), name=f"turn-{turn_id}"
        )
        self._active[turn_id] = active
        return active.task

    async def _after_earlier(self, earlier: list[_Active]) -> None:
        """Wait for the chat's earlier tasks here: storage says they ended (the chat runs
        one turn at a time), but they may still be writing suggestions, or, closed
        elsewhere after their lease lapsed, still be running. Either way they stop now."""
        for other in earlier:
            if other.suggestion is not None:
                other.suggestion.cancel()
            if not other.finishing and not other.pausing:
                other.stop()
        tasks = [other.task for other in earlier if other.task is not None]
        if tasks:
            await asyncio.wait(tasks)

    # -- approvals (docs/protocol.md §3a) ------------------------------------------------------

    async def decide(
        self,
        user_id: str,
        chat_id: str,
        approval_id: str,
        approve: bool,
        reason: str | None,
        via: str,
        plan: TurnPlan | None = None,
    ) -> Decided:
        """Take the person's decision on a pending approval of their chat; when it was the
        pause's last, the turn resumes here (with ``plan``, for another front end).

        Raises ``ApprovalNotFound`` / ``ApprovalDecided``, or ``ServerDraining`` while
        this instance shuts down (the approval stays pending: a resumed turn would be cut
        short mid-action); an approval that had expired is resolved as ``expired``
        (``Decided.expired``) instead of decided.
        """
        if self.draining:
            raise ServerDraining("the server is restarting; decide again in a moment")
        reason = (reason or "").strip() or None  # a blank reason is no reason
        decided = await self.approvals.decide(
            user_id,
            chat_id,
            approval_id,
            "approved" if approve else "rejected",
            reason,
            via,
            now_ts(),
            self.lease,
        )
        self._after_decision(decided, plan)
        return decided

    def _after_decision(self, decided: Decided, plan: TurnPlan | None = None) -> None:
        """Publish a decision and, when it was the pause's last, resume the turn here.
        Synchronous: the resumed turn is registered before anything else can run."""
        event, paused = decided.event, decided.resume
        self.metrics.approvals.labels(event.payload["decision"]).inc()
        self.metrics.events_persisted.inc()
        channel = channel_of(decided.owner, event.chat_id)
        self.hub.publish(channel, [Frame(event.seq, encode(event.to_wire()))])
        if paused is None:
            return
        self._start(
            paused.user_id,
            paused.chat_id,
            paused.turn_id,
            paused.prompt,
            paused.prompt_seq,
            plan,
            paused,
        )

    async def expire_approvals(self) -> int:
        """Resolve the approvals past their expiry as ``expired`` (each is treated as a
        rejection; a pause with none left pending resumes here). Returns how many."""
        expired = 0
        for approval_id, chat_id in await self.approvals.due():
            if self.draining:
                break  # the instances that stay up expire the rest
            decided = await self.approvals.expire(chat_id, approval_id, now_ts(), self.lease)
            if decided is None:
                continue  # decided meanwhile
            self._after_decision(decided)
            expired += 1
        return expired

    async def watch_approvals(self, every: float) -> None:
        """Run ``expire_approvals`` every ``every`` seconds, until cancelled."""
        await every_so_often(every, self.expire_approvals, "could not expire approvals")

    async def _supersede(self, user_id: str, chat_id: str, turn_id: str, via: str, ts: str) -> bool:
        """End the chat's paused turn (a new prompt or a cancel came); False when
        ``turn_id`` is not paused."""
        ending = await self.approvals.supersede(chat_id, turn_id, via, ts)
        if ending is None:
            return False
        channel = channel_of(user_id, chat_id)
        self.metrics.events_persisted.inc(len(ending))
        self.hub.publish(channel, [Frame(r.seq, encode(r.to_wire())) for r in ending])
        self.metrics.approvals.labels("superseded").inc(
            sum(r.type == "approval_resolved" for r in ending)
        )
        self.metrics.turns.labels("cancelled").inc()
        return True

    # -- leases and orphans ----------------------------------------------------------------

    async def renew_leases(self) -> None:
        """Renew the leases of the turns running here; stop those closed elsewhere (a
        turn marked failed must not go on acting) and those someone asked to stop."""
        running = [
            active
            for active in self._active.values()
            if not active.finishing and not active.pausing
        ]
        if not running:
            return
        renewal = await self.store.renew_leases(self.lease, [a.turn_id for a in running])
        for active in running:
            if active.finishing or self._active.get(active.turn_id) is not active:
                continue  # it ended meanwhile
            if active.turn_id not in renewal.kept:
                logger.warning(
                    "turn closed elsewhere after its lease expired; stopping it",
                    extra={"chat_id": active.chat_id, "turn_id": active.turn_id},
                )
                active.stop()
            elif active.turn_id in renewal.cancel and not active.cancel_requested:
                self._cancel(active)

    async def keep_leases(self) -> None:
        """Run ``renew_leases`` every ``timings.renew_every`` seconds, until cancelled."""
        await every_so_often(
            self.timings.renew_every, self.renew_leases, "could not renew turn leases"
        )

    async def close_orphans(self, ts: str) -> int:
        """Close the turns whose runner's lease expired (their instance died or lost the
        database): at start-up, then every ``timings.sweep_every`` seconds, so a browser
        waiting on one sees it end unprompted."""
        closed = 0
        for running in await self.store.expired_turns():
            closed += await self._close_orphan(
                running.chat_id, running.turn_id, channel_of(running.user_id, running.chat_id), ts
            )
        return closed

    async def close_if_orphaned(self, user_id: str, chat_id: str) -> bool:
        """Close the chat's running turn if its runner's lease expired (a socket is about
        to watch it): the socket then need not wait for the sweep."""
        running = await self.store.running_turn(chat_id)
        if running is None or running.paused:
            return False
        return await self._close_orphan(chat_id, running.id, channel_of(user_id, chat_id), now_ts())

    async def watch_orphans(self) -> None:
        """Run ``close_orphans`` every ``timings.sweep_every`` seconds, until cancelled."""
        await every_so_often(
            self.timings.sweep_every,
            lambda: self.close_orphans(now_ts()),
            "could not look for orphaned turns",
        )

    async def _close_orphan(self, chat_id: str, turn_id: str, channel: str, ts: str) -> bool:
        """Close the turn in storage if its lease expired, and tell every socket of the
        chat it ended. Never one of this instance's own turns: their leases are renewed,
        and a renewal that failed is no sign of death."""
        if turn_id in self._active:
            return False
        ending = await self.store.close_turn(chat_id, turn_id, ts)
        if not ending:
            return False  # it ended meanwhile, its lease holds, or it is paused
        logger.warning("closed an orphaned turn", extra={"chat_id": chat_id, "turn_id": turn_id})
        self.metrics.turns.labels("failed").inc()
        self.hub.publish(channel, [Frame(r.seq, encode(r.to_wire())) for r in ending])
        self.hub.end_turn(channel, turn_id)
        return True

    # -- cancel -----------------------------------------------------------------------------

    def cancel(self, chat_id: str, turn_id: str | None = None) -> bool:
        """Cancel the chat's turn running in this process."""
        active = self._current(chat_id)
        if active is None or (turn_id is not None and turn_id != active.turn_id):
            return False
        return self._cancel(active)

    def _cancel(self, active: _Active) -> bool:
        if active.ending or active.finishing:
            return False  # its end is decided: for the client nothing runs any more
        if active.pausing:
            active.cancel_requested = True
            return True  # superseded as soon as its pause is stored (``_run``)
        active.stop()
        return True

    async def cancel_anywhere(self, user_id: str, chat_id: str, turn_id: str | None = None) -> bool:
        """Cancel the chat's running turn, whichever instance runs it; False when no
        such turn runs. Raises when the stop cannot be recorded (the database is down):
        the caller must say so, never pretend it was delivered."""
        for _ in range(3):  # the turn may pause, resume or end while we look
            if self.cancel(chat_id, turn_id):
                return True
            running = await self.store.running_turn(chat_id)
            if running is None or (turn_id is not None and running.id != turn_id):
                return False
            # §3a: waiting for approvals, nothing runs to hear the cancel: end it here.
            if running.paused:
                if await self._supersede(user_id, chat_id, running.id, "cancel", now_ts()):
                    return True
                continue  # resumed meanwhile, here or elsewhere
            if self.cancel(chat_id, turn_id):
                return True  # resumed here meanwhile
            # Nobody left to hear it: end it here, as failed (it was cut short).
            if await self._close_orphan(
                chat_id, running.id, channel_of(user_id, chat_id), now_ts()
            ):
                return True
            # Its runner sees the stop at its next renewal; Redis, when up, tells it now.
            if await self.store.request_cancel(chat_id, running.id):
                await self.cluster.request_cancel(chat_id, running.id)
                return True
        return False

    def running_task(self, chat_id: str, turn_id: str) -> asyncio.Task[None] | None:
        """The task running ``turn_id`` in this process (e.g. resumed by ``decide``)."""
        active = self._active.get(turn_id)
        return active.task if active is not None and active.chat_id == chat_id else None

    async def wait_idle(self, within: float | None = None) -> bool:
        """Wait for every running turn to end; False if some still run after ``within`` s."""
        tasks = [active.task for active in self._active.values() if active.task is not None]
        if not tasks:
            return True
        _, pending = await asyncio.wait(tasks, timeout=within)
        return not pending

    async def shutdown(self, grace: float) -> None:
        """Let turns finish within ``grace`` seconds, then cancel them (persisted as cancelled)."""
        if await self.wait_idle(grace):
            return
        for active in list(self._active.values()):
            if active.suggestion is not None:
                active.suggestion.cancel()  # a nicety: never worth holding a shutdown
            self._cancel(active)
        await self.wait_idle(5.0)

    async def _run(
        self,
        active: _Active,
        prompt: str,
        plan: TurnPlan | None,
        resume: PausedRun | None,
        first: EventRecord | None,
        earlier: list[_Active],
    ) -> None:
        try:
            await self._after_earlier(earlier)
        except asyncio.CancelledError:
            self._detach(active)
            raise
        turn_id = active.turn_id
        if resume is None:
            assert first is not None
            self.hub.begin_turn(active.channel, turn_id, first.seq)
            self.hub.publish(active.channel, [Frame(first.seq, encode(first.to_wire()))])
        else:
            self.hub.begin_turn(active.channel, turn_id, resume.after_seq + 1)
        await self._turn(active, prompt, plan, resume)

    async def _turn(
        self, active: _Active, prompt: str, plan: TurnPlan | None, resume: PausedRun | None
    ) -> None:
        engine = self.engine
        user_id, chat_id, turn_id = active.user_id, active.chat_id, active.turn_id
        prompt_seq = active.prompt_seq
        writer = self._writer(active)
        metrics = self.metrics
        metrics.turns_running.inc()
        started = time.monotonic()
        tools = ToolTally()
        translator = StreamTranslator(
            engine.orchestrator.name, engine.tool_descriptions, engine.agent_display_names
        )
        status: RunStatus = "completed"
        usage = Usage()
        shown_types: list[str] = []
        final_text = partial_text = ""
        log_extra = {"chat_id": chat_id, "turn_id": turn_id}
        session = TurnSession(ChatSession(self.db, chat_id))
        external, plan = plan is not None, plan or TurnPlan()
        failed_with: ErrorEvent | None = None  # the error event of a failed turn
        agent = plan.agent or engine.orchestrator
        context = engine.make_context(user_id, chat_id, turn_id)
        waiting: list[PendingCall] = []  # the calls a paused turn waits on
        result: RunResultStreaming | None = None
        try:
            if resume is None:
                result = Runner.run_streamed(
                    agent,
                    input=plan.input if plan.input is not None else prompt,
                    context=context,
                    run_config=plan.run_config or engine.run_config,
                    max_turns=engine.max_model_turns,
                    session=session,
                )
            else:
                # §3a: the person has decided every call the turn paused on.
                restore_session(session, resume.state)
                state = await restore(agent, resume.state, context, resume.approvals)
                approved = [a for a in resume.approvals if a.status == "approved"]
                translator.resume(
                    resume.state.get("agent") or agent.name,
                    approved=[a.call_id for a in approved],
                    declined=[a.call_id for a in resume.approvals if a.status != "approved"],
                )
                tools.agents.update({a.call_id: a.current_agent for a in approved})
                result = Runner.run_streamed(
                    agent,
                    input=state,
                    run_config=plan.run_config or engine.run_config,
                    max_turns=engine.max_model_turns,
                    session=session,
                )
            active.result = result
            if active.cancel_requested:
                result.cancel()
            async for sdk_event in result.stream_events():
                if plan.observe is not None:
                    _observe(plan.observe, sdk_event, log_extra)
                for event in translator.translate(sdk_event):
                    tools.see(event)
                    if isinstance(event, LlmResponseDeltaEvent):
                        partial_text += event.delta
                    elif isinstance(event, LlmResponseEvent):
                        final_text, partial_text = event.text, ""
                    elif isinstance(event, ToolOutputEvent):
                        shown_types.append(event.output.response_type)
                    writer.put(event)
                if writer.error is not None:
                    raise WriterFailed("could not persist the turn") from writer.error
            usage = usage_of(result.context_wrapper.usage)
            if active.cancel_requested:
                status = "cancelled"
            elif result.interruptions:
                waiting = [
                    call
                    for item in result.interruptions
                    if (
                        call := pending_call(
                            item, engine.tool_descriptions, translator.current_agent
                        )
                    )
                    is not None
                ]
                if len(waiting) != len(result.interruptions):
                    raise RuntimeError("the run paused on a call without a call id")
                status, active.pausing = "paused", True
        except WriterFailed:
            status = "failed"
            logger.error("turn aborted: storage unavailable", extra=log_extra)
            if active.result is not None:
                active.result.cancel()  # no more tool calls for a turn that has stopped
                usage = usage_of(active.result.context_wrapper.usage)
            # Written with the end_of_stream once the store is back (websocket.writer).
            failed_with = STORAGE_FAILED
            writer.put(STORAGE_FAILED)
        except ResumeFailed:
            status, failed_with = "failed", RESUME_FAILED
            logger.exception("a paused turn could not be resumed", extra=log_extra)
            writer.put(RESUME_FAILED)
        except Exception as exc:
            status = "cancelled" if active.cancel_requested else "failed"
            if status == "failed":
                # Logged server-side by the app's reporter; the event says only what is safe.
                error = failed_with = engine.report_failure(exc, log_extra)
                metrics.model_errors.labels(error.code).inc()
                writer.put(error)
            if active.result is not None:
                usage = usage_of(active.result.context_wrapper.usage)

        if status != "completed" and partial_text:
            final_text = partial_text  # what the user saw before the turn stopped
        asked: list[EventRecord] = []  # a paused turn's approval_required events
        try:
            if status == "paused":
                assert result is not None
                asked, failing = await self._pause(
                    active,
                    writer,
                    result,
                    session,
                    waiting,
                    usage,
                    final_text,
                    translator.current_agent,
                    log_extra,
                )
                if failing is not None:  # the pause could not be stored: the turn fails
                    writer, status, failed_with = failing, "failed", STORAGE_FAILED
            if status != "paused":
                active.ending = True  # its status is final: a cancel now has nothing to stop
                writer.put(
                    EndOfStreamEvent(status=status, usage=usage),
                    TurnUpdate(
                        turn_id=turn_id,
                        status=status,
                        final_text=final_text,
                        usage=usage.model_dump(),
                        items=session.items_to_keep(status == "completed"),
                    ),
                )
                await writer.close()
                if writer.cancelled_at_end:  # a stop asked elsewhere got there first
                    status = "cancelled"
        except WriterFailed:
            logger.error("turn could not be closed in storage", extra=log_extra)
        finally:
            self.hub.end_turn(active.channel, turn_id)
            if status == "paused":
                # No process runs a paused turn: from here a cancel or a prompt ends it
                # in storage (§3a), and a decision resumes it wherever it is taken.
                self._detach(active)
            # After end_turn: a socket joining now replays the pause from storage.
            self.hub.publish(active.channel, [Frame(r.seq, encode(r.to_wire())) for r in asked])
            if asked and active.cancel_requested:  # cancelled while the pause was stored
                try:
                    await self._supersede(user_id, chat_id, turn_id, "cancel", now_ts())
                except Exception:
                    logger.exception("could not end a paused turn on cancel", extra=log_extra)
            metrics.turns_running.dec()
            if status != "paused":  # a pause is not an end: the turn goes on later
                metrics.turns.labels(status).inc()
                metrics.turn_seconds.observe(time.monotonic() - started)
            tools.record(metrics, waiting={call.call_id for call in waiting})
        try:
            if plan.finished is not None:
                # Its end is out: a new prompt for this chat now waits for this task.
                try:
                    await plan.finished(
                        TurnOutcome(
                            status,
                            usage.model_dump(),
                            final_text,
                            failed_with.payload() if failed_with is not None else None,
                            tuple(r.to_wire() for r in asked),
                        )
                    )
                except Exception:
                    logger.exception("the turn's finish hook failed", extra=log_extra)
            if status == "completed" and writer.error is None:
                await self._after_turn(
                    active,
                    user_id,
                    chat_id,
                    turn_id,
                    prompt,
                    final_text,
                    shown_types,
                    prompt_seq,
                    suggest=not external,
                    title=resume is None,
                )
            elif prompt_seq == 1 and resume is None:
                # A title needs only the prompt: a first turn that failed, was stopped or
                # waits for approvals must not leave the chat untitled.
                await self._title(user_id, chat_id, turn_id, prompt)
        finally:
            self._detach(active)

    def _detach(self, active: _Active) -> None:
        """This process no longer runs ``active`` (idempotent). Only its own entry goes:
        a resumed turn keeps its id, and registers anew."""
        if self._active.get(active.turn_id) is active:
            del self._active[active.turn_id]

    def _writer(self, active: _Active, *, after_end: bool = False) -> EventWriter:
        def ended() -> None:
            active.finishing = True

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

    async def _pause(
        self,
        active: _Active,
        writer: EventWriter,
        result: RunResultStreaming,
        session: TurnSession,
        waiting: list[PendingCall],
        usage: Usage,
        text: str,
        current_agent: str,
        log_extra: dict[str, Any],
    ) -> tuple[list[EventRecord], EventWriter | None]:
        """Store the pause (docs/protocol.md §3a) after every event before it.

        Returns its ``approval_required`` events, and None; or, when storage failed, no
        events and a fresh writer for the failed turn's end.
        """
        try:
            await writer.close()
            requests = [
                ApprovalRequest(
                    new_approval_id(),
                    call.call_id,
                    call.name,
                    call.description,
                    call.arguments,
                    call.current_agent,
                )
                for call in waiting
            ]
            expires_at = datetime.now(UTC) + timedelta(seconds=self.approval_timeout)
            paused = await self.approvals.pause(
                writer.chat_id,
                writer.turn_id,
                requests,
                paused_state(result, session, current_agent),
                usage.model_dump(),
                expires_at,
                now_ts(),
                text=text,
            )
        except TurnFenced:
            logger.warning("turn closed elsewhere before it could pause", extra=log_extra)
            return [], None
        except Exception:
            logger.exception("could not store the turn's pause", extra=log_extra)
            failed = self._writer(active)
            failed.put(STORAGE_FAILED)
            return [], failed
        if paused.cancel_requested:  # asked on another instance before the run paused
            active.cancel_requested = True
        asked = paused.events
        self.metrics.approvals.labels("asked").inc(len(asked))
        self.metrics.events_persisted.inc(len(asked))
        logger.info("turn paused for approval", extra={**log_extra, "approvals": len(asked)})
        return asked, None

    async def _after_turn(
        self,
        active: _Active,
        user_id: str,
        chat_id: str,
        turn_id: str,
        prompt: str,
        final_text: str,
        shown_types: list[str],
        prompt_seq: int,
        suggest: bool = True,
        title: bool = True,
    ) -> None:
        """Suggestions and the chat title: useful, never allowed to fail the turn."""
        engine = self.engine
        log_extra = {"chat_id": chat_id, "turn_id": turn_id}
        if engine.suggest is not None and suggest:
            active.suggestion = asyncio.ensure_future(
                engine.suggest(prompt, final_text, shown_types)
            )
            try:
                prompts = (await active.suggestion)[:4]
                writer = self._writer(active, after_end=True)
                writer.put(SuggestedPromptsEvent(prompts=prompts))
                await writer.close()
            except asyncio.CancelledError:
                if not active.suggestion.cancelled():
                    raise  # the turn task itself is being cancelled
            except Exception as exc:
                # Fenced: the chat's next turn has begun; its prompt made these moot.
                if not isinstance(exc.__cause__, TurnFenced):
                    logger.exception("suggested prompts failed", extra=log_extra)
        if prompt_seq == 1 and title:
            await self._title(user_id, chat_id, turn_id, prompt)

    async def _title(self, user_id: str, chat_id: str, turn_id: str, prompt: str) -> None:
        if self.engine.on_first_turn is None:
            return
        try:
            await self.engine.on_first_turn(user_id, chat_id, prompt)
        except Exception:
            logger.exception("chat title failed", extra={"chat_id": chat_id, "turn_id": turn_id})


async def every_so_often(
    period: float, work: Callable[[], Awaitable[object]], failure: str
) -> None:
    """Await ``work()`` every ``period`` seconds until cancelled; a failure is logged as
    ``failure`` and the next round tries again."""
    while True:
        await asyncio.sleep(period)
        try:
            await work()
        except Exception:
            logger.warning(failure, exc_info=True)


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

    def __init__(self) -> None:
        self.agents: dict[str, str] = {}
        self.outcomes: dict[str, str] = {}

    def see(self, event: Event) -> None:
        if isinstance(event, ToolCallEvent):
            self.agents[event.call_id] = event.current_agent
        elif isinstance(event, ToolOutputEvent):
            failed = event.output.response_type == "error"
            self.outcomes[event.call_id] = "error" if failed else "ok"

    def record(self, metrics: Metrics, waiting: set[str] | frozenset[str] = frozenset()) -> None:
        """Count the calls that ran; ``waiting`` ones (paused for approval) have not yet:
        they are counted by the resumed turn, if they run at all."""
        for call_id, agent in self.agents.items():
            if call_id in waiting:
                continue
            # No tool_output: a hidden result, which is a success.
            metrics.tool_calls.labels(agent, self.outcomes.get(call_id, "ok")).inc()
