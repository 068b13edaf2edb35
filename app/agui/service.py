"""Run one AG-UI request as a turn of a chat (docs/ag-ui.md).

The thread is the chat (``threadId`` is the chat id), so every run is persisted, shown in
the chat history and watched live by any socket of the chat, exactly like a prompt typed in
the UI. The turn runs in the turn manager (``websocket.turn.TurnPlan``) like every other
front end's: this module only feeds the turn's SDK events to ``RunEvents`` and queues what
comes out for the response.

Approvals (docs/protocol.md §3a) are AG-UI interrupts. A turn that pauses ends its run with
``RUN_FINISHED`` outcome ``interrupt``; the paused turn stays the chat's running turn. A
run whose ``resume`` answers every open interrupt takes the decisions
(``TurnManager.decide``), and the turn resumes into that run. As AG-UI asks, a new message
while interrupts are open is refused with ``RUN_ERROR`` (on the socket it would supersede
them): the person's pending decision is never dropped by a client that forgot it.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ag_ui.core import BaseEvent

from app.agui.events import RunEvents
from app.agui.request import Answer, InterruptError, Prompt, RunRequest
from app.api_json import approval_json
from app.errors import ApiError
from app.services import Services
from storage.chats import ChatRepository
from storage.errors import ApprovalDecided, ApprovalNotFound, ClientMessageReused, TurnInProgress
from storage.records import ApprovalRecord, PausedRun, UserRecord
from websocket.protocol import now_ts
from websocket.turn import NotApproved, ServerDraining, TurnOutcome, TurnPlan

logger = logging.getLogger("switchboard.agui")

VIA = "ag-ui"  # who decided an approval, in its record (GET /api/chats/{id})
BUSY = "another run is going on in this thread; wait for it to finish, then send again"


class Refused(ApiError):
    """A request that cannot run now; ``headers`` (``Retry-After``) go with the answer."""

    def __init__(self, status: int, code: str, message: str, retry_after: int) -> None:
        super().__init__(status, code, message)
        self.headers = {"Retry-After": str(retry_after)}


@dataclass
class Run:
    """A run under way: its events (None after the last) and the turn's task."""

    events: RunEvents
    queue: asyncio.Queue[BaseEvent | None] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    ended: bool = False  # the run's last event is queued

    @property
    def lost(self) -> bool:
        """The turn's task ended without ending the run (a bug or a crash in it)."""
        return self.task is not None and self.task.done() and not self.ended

    def observe(self, sdk_event: object) -> None:
        for event in self.events.feed(sdk_event):
            self.queue.put_nowait(event)

    async def finished(self, outcome: TurnOutcome) -> None:
        for event in self.events.finish(outcome):
            self.queue.put_nowait(event)
        self.ended = True
        self.queue.put_nowait(None)

    def plan(self) -> TurnPlan:
        # The orchestrator, the prompt and the engine's run config, as on the socket.
        return TurnPlan(observe=self.observe, finished=self.finished)


def _new_run(services: Services, request: RunRequest) -> Run:
    engine = services.turns.engine
    run = Run(
        RunEvents(
            request.thread_id,
            request.run_id,
            engine.orchestrator.name,
            engine.tool_descriptions,
            engine.agent_display_names,
        )
    )
    for event in run.events.start():
        run.queue.put_nowait(event)
    return run


async def start_run(services: Services, user: UserRecord, request: RunRequest) -> Run:
    """Start the run's turn, or resume the paused one; raises ``ApiError`` for a request
    that cannot run and ``InterruptError`` for one the interrupt rules refuse."""
    if request.prompt is not None:
        return await _prompt(services, user, request, request.prompt)
    return await _resume(services, user, request, request.answers)


# ----------------------------------------------------------------------------- a new turn


async def _check_limits(services: Services, user: UserRecord) -> None:
    settings, turns = services.settings, services.turns
    if turns.draining:
        raise Refused(503, "server_error", "the server is restarting; send again in a moment", 5)
    if turns.running_for(user.id) >= settings.max_turns_per_user:
        services.metrics.rate_limited.labels("turns").inc()
        raise Refused(
            429, "rate_limited", "too many runs going on at once for you; wait for one to end", 1
        )
    wait = await services.prompt_limiter.wait_for(user.id)
    if wait is not None:
        services.metrics.rate_limited.labels("prompts").inc()
        seconds = max(1, math.ceil(wait))
        raise Refused(429, "rate_limited", f"too many messages; try again in {seconds} s", seconds)


async def _open_interrupts(services: Services, chat_id: str) -> tuple[dict[str, Any], ...]:
    """The approvals the chat's paused turn waits for (none when no turn is paused)."""
    running = await services.store.running_turn(chat_id)
    if running is None or not running.paused:
        return ()
    return tuple(
        approval_json(record)
        for record in await services.turns.approvals.for_chat(chat_id)
        if record.turn_id == running.id and record.status == "pending"
    )


def _pending_error(interrupts: tuple[dict[str, Any], ...]) -> InterruptError:
    ids = ", ".join(repr(asked["approval_id"]) for asked in interrupts)
    return InterruptError(
        "interrupts_pending",
        f"this thread's run waits for the person's decision on {ids}: answer every open "
        "interrupt in `resume` (status 'cancelled' declines) before sending a new message",
        interrupts,
    )


async def _prompt(services: Services, user: UserRecord, request: RunRequest, prompt: Prompt) -> Run:
    chat_id, turns = request.thread_id, services.turns
    await _check_limits(services, user)
    # Another user's thread answers 404 (app.errors), as the REST API does.
    await ChatRepository(services.db, user.id).get_or_create(chat_id)
    interrupts = await _open_interrupts(services, chat_id)
    if interrupts:
        raise _pending_error(interrupts)
    run = _new_run(services, request)
    try:
        submitted = await turns.submit(
            user.id, chat_id, prompt.text, prompt.message_id, now_ts(), run.plan()
        )
    except TurnInProgress:
        raise ApiError(409, "turn_in_progress", BUSY) from None
    except ClientMessageReused:
        raise ApiError(
            400,
            "invalid_request",
            f"message id {prompt.message_id!r} was already used in this thread for another "
            "text; give each message its own id",
        ) from None
    if not submitted.created:
        raise ApiError(
            409,
            "invalid_request",
            f"message {prompt.message_id!r} has already run in this thread (turn "
            f"{submitted.user_prompt.turn_id}); its events are at GET /api/chats/{chat_id}/events",
        )
    logger.info(
        "ag-ui run started",
        extra={"chat_id": chat_id, "turn_id": submitted.user_prompt.turn_id},
    )
    run.task = submitted.task
    return run


# ----------------------------------------------------------------------------- a resume


def _refusal(record: ApprovalRecord | None, interrupt_id: str) -> InterruptError:
    """Why an answer to ``interrupt_id`` changes nothing. Replaying a resume is safe: the
    first decision stands and nothing runs twice."""
    if record is None:
        return InterruptError("interrupt_unknown", f"no interrupt {interrupt_id!r} in this thread")
    if record.status == "expired" or (
        record.status == "pending" and record.expires_at <= datetime.now(UTC)
    ):
        return InterruptError(
            "interrupt_expired",
            f"interrupt {interrupt_id!r} expired before it was answered, so nothing was run; "
            "ask again in a new message",
        )
    if record.status == "superseded":
        return InterruptError(
            "interrupt_resolved",
            f"interrupt {interrupt_id!r} was ended by a later message or a stop, so nothing "
            "was run; ask again in a new message",
        )
    return InterruptError(
        "interrupt_resolved",
        f"interrupt {interrupt_id!r} is already {record.status}; the first decision stands "
        "(its results are in the thread's events)",
    )


async def _check_answers(
    services: Services, chat_id: str, answers: tuple[Answer, ...]
) -> dict[str, Any]:
    """Every answer is to an open interrupt, and every open interrupt is answered (AG-UI
    resumes are whole), before any decision is taken. Returns the paused turn's usage."""
    running = await services.store.running_turn(chat_id)
    records = {record.id: record for record in await services.turns.approvals.for_chat(chat_id)}
    now = datetime.now(UTC)
    for answer in answers:
        record = records.get(answer.interrupt_id)
        if record is None or record.status != "pending" or record.expires_at <= now:
            raise _refusal(record, answer.interrupt_id)
    open_ = [
        record
        for record in records.values()
        if running is not None
        and running.paused
        and record.turn_id == running.id
        and record.status == "pending"
    ]
    missing = [record for record in open_ if record.id not in {a.interrupt_id for a in answers}]
    if missing:
        ids = ", ".join(repr(record.id) for record in missing)
        raise InterruptError(
            "interrupts_unanswered",
            f"resume must answer every open interrupt of the thread; {ids} not answered",
            tuple(approval_json(record) for record in open_),
        )
    return dict(running.usage or {}) if running is not None else {}


async def _resume(
    services: Services, user: UserRecord, request: RunRequest, answers: tuple[Answer, ...]
) -> Run:
    chat_id = request.thread_id
    if await ChatRepository(services.db, user.id).get(chat_id) is None:
        raise ApiError(404, "not_found", "thread not found")
    usage_before = await _check_answers(services, chat_id, answers)
    run = _new_run(services, request)
    resumed: PausedRun | None = None
    for answer in answers:
        try:
            decided = await services.turns.decide(
                user.id,
                chat_id,
                answer.interrupt_id,
                answer.approve,
                answer.reason,
                VIA,
                run.plan(),
            )
        except (ApprovalNotFound, ApprovalDecided):  # decided elsewhere since we looked
            record = await services.turns.approvals.get(chat_id, answer.interrupt_id)
            raise _refusal(record, answer.interrupt_id) from None
        except ServerDraining as exc:
            raise Refused(503, "server_error", str(exc), 5) from None
        except NotApproved as exc:
            if exc.retryable:
                raise Refused(503, "server_error", str(exc), 5) from None
            raise ApiError(409, "invalid_request", str(exc)) from None
        if decided.expired and decided.resume is None:
            raise _refusal(
                await services.turns.approvals.get(chat_id, answer.interrupt_id),
                answer.interrupt_id,
            )
        resumed = decided.resume or resumed
    if resumed is None:
        raise InterruptError(
            "interrupt_resolved",
            "the decisions were recorded, but the paused run had already ended (stopped "
            "from the chat); send a new message to go on",
        )
    # No await since the last decision: the resumed turn's task has not run yet, so the
    # run knows which calls it shows the results of before the first result comes.
    run.events.resuming(
        str(resumed.state.get("agent") or services.turns.engine.orchestrator.name),
        approved=[a.call_id for a in resumed.approvals if a.status == "approved"],
        declined=[a.call_id for a in resumed.approvals if a.status != "approved"],
        usage_before=usage_before,
    )
    run.task = services.turns.running_task(chat_id, resumed.turn_id)
    logger.info("ag-ui run resumed", extra={"chat_id": chat_id, "turn_id": resumed.turn_id})
    return run
