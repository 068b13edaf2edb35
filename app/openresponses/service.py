"""Run one Open Responses request as a turn of a chat.

Each response is a turn, so it is persisted, shown in the chat history and watched live
by any socket of its chat, exactly like a prompt typed in the UI. A request without
``previous_response_id`` starts a new chat; with one, it continues that response's chat,
or a fork of it when the chat has moved on since (another response chained to the same
one, a prompt from the UI) so that the context is exactly the chain's.

The turn runs in the turn manager (``websocket.turn.TurnPlan``): this module feeds its SDK
events to a ``ResponseBuilder`` and, when the turn has ended, stores the final Response
object before the terminal event goes out, so a client can chain on it at once.

Approvals (docs/protocol.md §3a): a turn that pauses for them ends its response ``completed``
with ``switchboard:approval_request`` items; the paused turn stays the chat's running
turn. A request chained on that response with ``switchboard:approval_response`` items
takes the decisions (``TurnManager.decide``) and the turn resumes into the new response;
one with anything else supersedes the pause, in the same chat (``TurnManager.submit``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, cast

from agents import (
    ModelSettings,
    RunConfig,
    RunErrorHandlerInput,
    RunErrorHandlerResult,
    RunErrorHandlers,
    TResponseInputItem,
)

from app.openresponses.agents import (
    caller_tools,
    function_tools,
    gated_tools,
    handoff_names,
    response_agent,
    tool_definitions,
    tool_policy,
)
from app.openresponses.compaction import compaction_resource, expander
from app.openresponses.errors import OpenResponsesError, invalid
from app.openresponses.files import check_uploads, store_uploads, uploads_in
from app.openresponses.request import (
    CompactRequest,
    CreateResponse,
    Decision,
    approval_decisions,
    check_decisions,
    turn_input,
    window_items,
)
from app.openresponses.stream import (
    DecidedCall,
    Event,
    ResponseBuilder,
    approval_requests,
    caller_calls,
    new_id,
)
from app.services import Services
from connectors.context import ChatContext
from storage.approvals import NOT_RUN
from storage.attachments import AttachmentRecord
from storage.chats import ChatRepository
from storage.errors import ApprovalDecided, ApprovalNotFound, TurnInProgress
from storage.open_responses import ResponseRepository, StoredResponse
from storage.records import ApprovalRecord, UserRecord
from storage.session import answer_unanswered
from websocket.protocol import now_ts
from websocket.turn import NotApproved, TurnOutcome, TurnPlan

logger = logging.getLogger("switchboard.openresponses")

LOST = "the response stopped unexpectedly; try again"

# A cancelled turn (a graceful shutdown ran out of time, or someone pressed Stop in the
# chat) is a failed response: "incomplete" is for a token budget (docs/open-responses.md).
CANCELLED = {
    "code": "cancelled",
    "message": "The response was stopped before it finished "
    "(the server is restarting, or it was stopped from the chat); try again.",
}


@dataclass
class StartedResponse:
    id: str
    events: asyncio.Queue[Event | None]  # the stream; None after the terminal event
    final: asyncio.Future[tuple[TurnOutcome, dict[str, Any]]]  # outcome, Response object
    turn: asyncio.Task[None] | None
    builder: ResponseBuilder
    # What a later response chains on, once this one is over (stored or not: a
    # WebSocket keeps it for its next request, store or not); None if it was lost.
    record: asyncio.Future[StoredResponse | None] | None = None

    @property
    def lost(self) -> bool:
        """The turn ended without finishing the response (a bug or a crash in it)."""
        return self.turn is not None and self.turn.done() and not self.final.done()

    async def outcome(self) -> tuple[TurnOutcome, dict[str, Any]] | None:
        """The outcome and final object; None if the turn ended without one."""
        waiting: set[asyncio.Future[Any]] = {self.final}
        if self.turn is not None:
            waiting.add(self.turn)
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if not self.final.done():
            await asyncio.sleep(0)  # the turn's last step may have just set it
        return self.final.result() if self.final.done() else None


def response_error(error: dict[str, Any] | None) -> dict[str, Any]:
    """A failed (or cancelled) turn's ``error`` event → the Response object's ``error``."""
    error = error or CANCELLED
    code = "rate_limit_exceeded" if error.get("code") == "rate_limited" else "server_error"
    return {"code": code, "message": str(error.get("message") or "The response failed.")}


def http_error(response_id: str, outcome: TurnOutcome) -> OpenResponsesError:
    """What a non-streaming request that failed answers (the Open Responses spec, "Error Types")."""
    error = outcome.error or CANCELLED
    code = str(error.get("code") or "server_error")
    message = f"{error.get('message') or 'The response failed.'} (response {response_id})"
    if code == "rate_limited":
        return OpenResponsesError(
            "too_many_requests", message, code=code, headers={"Retry-After": "5"}
        )
    if code in ("model_error", "model_unavailable"):
        return OpenResponsesError("model_error", message, code=code)
    if code == "cancelled":
        return OpenResponsesError(
            "server_error", message, code=code, status=503, headers={"Retry-After": "5"}
        )
    return OpenResponsesError("server_error", message, code=code)


def _run_config(base: RunConfig, request: CreateResponse) -> RunConfig:
    wanted = ModelSettings(
        temperature=request.temperature,
        top_p=request.top_p,
        max_tokens=request.max_output_tokens,
        parallel_tool_calls=None if request.parallel_tool_calls else False,
    )
    if wanted == ModelSettings():
        return base
    current = base.model_settings or ModelSettings()
    return replace(base, model_settings=current.resolve(wanted))


def _echo(request: CreateResponse, tools: list[dict[str, Any]]) -> dict[str, Any]:
    choice = request.tool_choice
    return {
        "store": request.store,
        "prompt_cache_key": request.prompt_cache_key,
        "instructions": request.instructions,
        "previous_response_id": request.previous_response_id,
        "tool_choice": choice if isinstance(choice, str) else choice.model_dump(),
        "tools": tools,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_output_tokens": request.max_output_tokens,
        "parallel_tool_calls": request.parallel_tool_calls,
        "metadata": request.metadata,
        "user": request.user,
        "truncation": request.truncation,
    }


# How long a request over the user's limit of running turns waits for one to end: a
# client sending a burst of requests is served in turn rather than refused at once.
TURN_WAIT_SECONDS = 30.0


async def _check_limits(
    services: Services, user: UserRecord, wait: float = TURN_WAIT_SECONDS
) -> None:
    settings, turns = services.settings, services.turns
    if turns.draining:
        raise OpenResponsesError(
            "server_error",
            "the server is restarting; try again in a moment",
            status=503,
            headers={"Retry-After": "5"},
        )
    deadline = asyncio.get_running_loop().time() + wait
    while turns.running_for(user.id) >= settings.max_turns_per_user:
        running = turns.running_tasks(user.id)
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0 or not running:
            services.metrics.rate_limited.labels("turns").inc()
            raise OpenResponsesError(
                "too_many_requests",
                "too many responses or turns are running at once for this user; wait for "
                "one to end",
                code="rate_limited",
                headers={"Retry-After": "1"},
            )
        await asyncio.wait(running, timeout=left, return_when=asyncio.FIRST_COMPLETED)
    wait_for = await services.prompt_limiter.wait_for(user.id)
    if wait_for is not None:
        services.metrics.rate_limited.labels("prompts").inc()
        seconds = max(1, math.ceil(wait_for))
        raise OpenResponsesError(
            "too_many_requests",
            f"too many requests; try again in {seconds} s",
            code="rate_limited",
            headers={"Retry-After": str(seconds)},
        )


# Responses a WebSocket made, by id: what it may chain on without storage (``store``
# false), and faster (docs/open-responses.md, "WebSocket").
Remembered = Mapping[str, StoredResponse]


async def _previous(
    services: Services, user: UserRecord, response_id: str, remembered: Remembered
) -> StoredResponse:
    stored = remembered.get(response_id)
    if stored is None:
        stored = await ResponseRepository(services.db, user.id).get(response_id)
    if stored is None:
        raise OpenResponsesError(
            "not_found",
            f"no response {response_id!r}: it does not exist, belongs to "
            "another user, or has not finished yet",
            code="previous_response_not_found",
            param="previous_response_id",
        )
    return stored


def _asked(stored: StoredResponse) -> list[str]:
    """The approval ids ``stored`` asked for (none unless its turn paused)."""
    return [str(item.get("approval_id")) for item in approval_requests(stored.body)]


async def _still_asking(services: Services, stored: StoredResponse) -> bool:
    """Whether ``stored``'s approvals all still wait: its pause is the turn's current one
    (a turn resumed by another response and paused again waits for other approvals)."""
    asked = _asked(stored)
    for approval_id in asked:
        record = await services.turns.approvals.get(stored.chat_id, approval_id)
        if record is None or record.status != "pending":
            return False
    return bool(asked)


async def _continues(services: Services, user: UserRecord, stored: StoredResponse) -> bool:
    """Whether the chat still ends exactly where ``stored`` left it."""
    newest = await ResponseRepository(services.db, user.id).newest_item_id(stored.chat_id)
    if newest != stored.last_item_id:
        return False
    running = await services.store.running_turn(stored.chat_id)
    if running is None:
        return True
    # The turn still waits for this very response's approvals: the chat is where the
    # response left it, and the new turn's prompt supersedes the pause (§3a).
    return running.paused and running.id == stored.turn_id and await _still_asking(services, stored)


def paused_context(items: list[dict[str, Any]], call_ids: set[str]) -> list[dict[str, Any]]:
    """A paused turn's conversation items as they were at the pause on ``call_ids``: up
    to the last of those calls, each call without an output answered "not run" (a model
    API refuses a call without one), as when a pause is superseded. Pure."""
    last = max(
        (
            index
            for index, item in enumerate(items)
            if item.get("type") == "function_call" and item.get("call_id") in call_ids
        ),
        default=None,
    )
    if last is None:
        # None of those calls is among the items (the turn was stopped before they were
        # saved): its input, the messages it starts with.
        last = -1
        while last + 1 < len(items) and items[last + 1].get("type", "message") == "message":
            last += 1
    return answer_unanswered(items[: last + 1], NOT_RUN)


async def _paused_items(
    responses: ResponseRepository, stored: StoredResponse
) -> list[dict[str, Any]]:
    """A response that asked for approval was stored while its turn was paused, before
    the turn wrote its items: those items as they were at that pause ([] for others)."""
    asked = approval_requests(stored.body)
    if not asked:
        return []
    return paused_context(
        await responses.turn_items(stored), {str(item.get("call_id")) for item in asked}
    )


async def _new_chat(services: Services, user: UserRecord, fork_of: StoredResponse | None) -> str:
    chat_id = uuid.uuid4().hex  # the shape of the UI's chat ids
    responses = ResponseRepository(services.db, user.id)
    if fork_of is None:
        await ChatRepository(services.db, user.id).get_or_create(chat_id)
        return chat_id
    await responses.fork(fork_of, chat_id, await _paused_items(responses, fork_of))
    return chat_id


async def compact_response(
    services: Services,
    user: UserRecord,
    request: CompactRequest,
    remembered: Remembered | None = None,
) -> dict[str, Any]:
    """The ``response.compaction`` object for ``request``'s conversation: the chain of its
    ``previous_response_id``, then its ``input`` (docs/open-responses.md, "Compaction")."""
    items: list[dict[str, Any]] = []
    pending = None
    if request.previous_response_id is not None:
        previous = await _previous(services, user, request.previous_response_id, remembered or {})
        responses = ResponseRepository(services.db, user.id)
        items = await responses.items_until(previous) + await _paused_items(responses, previous)
        pending = caller_calls(previous.body)
    if request.input is not None:
        given = window_items(request.input, pending, expander(services.fernet, user.id))
        uploads = uploads_in(given)
        if uploads:
            raise invalid(
                "images and files are not taken by compaction; send them in a response's "
                "input, then compact from its previous_response_id",
                uploads[0][1].where,
            )
        items += given
    return compaction_resource(services.fernet, user.id, items)


# ----------------------------------------------------------------------------- one response


@dataclass
class _Response:
    """One response being built: its events, its end, and the turn plan that feeds them."""

    services: Services
    user: UserRecord
    request: CreateResponse
    builder: ResponseBuilder
    events: asyncio.Queue[Event | None]
    final: asyncio.Future[tuple[TurnOutcome, dict[str, Any]]]  # outcome, Response object
    started: asyncio.Future[tuple[str, str]]  # its chat id and turn id, once known
    record: asyncio.Future[StoredResponse | None]

    @classmethod
    def create(
        cls,
        services: Services,
        user: UserRecord,
        request: CreateResponse,
        tools: list[dict[str, Any]],
        gated: frozenset[str],
        callers: frozenset[str],
    ) -> _Response:
        builder = ResponseBuilder(
            id=new_id("resp"),
            created_at=int(time.time()),
            model=request.model,
            echo=_echo(request, tools),
            gated=gated,
            callers=callers,
        )
        events: asyncio.Queue[Event | None] = asyncio.Queue()
        for event in builder.start():
            events.put_nowait(event)
        loop = asyncio.get_running_loop()
        return cls(
            services,
            user,
            request,
            builder,
            events,
            loop.create_future(),
            loop.create_future(),
            loop.create_future(),
        )

    @property
    def id(self) -> str:
        return self.builder.id

    def observe(self, sdk_event: object) -> None:
        for event in self.builder.feed(sdk_event):
            self.events.put_nowait(event)

    async def finished(self, outcome: TurnOutcome) -> None:
        # A turn paused for approvals has done all it can: the response is complete and
        # asks for the decisions (its approval request items). A model that ran out of
        # its token budget leaves an incomplete one, its answer cut off.
        status = "completed" if outcome.status in ("completed", "paused") else "failed"
        if outcome.incomplete is not None:  # the turn completed with its answer cut off
            status = "incomplete"
        closing = self.builder.finish(
            status,
            usage=outcome.usage,
            completed_at=int(time.time()),
            error=response_error(outcome.error) if status == "failed" else None,
            incomplete_reason=outcome.incomplete,
            approvals=outcome.approvals if outcome.status == "paused" else (),
        )
        body = closing[-1]["response"]
        record: StoredResponse | None = None
        try:
            chat_id, turn_id = await asyncio.wait_for(asyncio.shield(self.started), 30)
            responses = ResponseRepository(self.services.db, self.user.id)
            previous = self.request.previous_response_id
            if self.request.store:
                last = await responses.save(self.id, chat_id, turn_id, previous, status, body)
            else:  # not stored: only the WebSocket that asked keeps it (StartedResponse)
                last = await responses.newest_item_id(chat_id)
            record = StoredResponse(
                self.id, chat_id, turn_id, previous, status, last, body, datetime.now(UTC)
            )
        except Exception:
            logger.exception("could not store the response", extra={"response_id": self.id})
        finally:
            for event in closing:
                self.events.put_nowait(event)
            self.events.put_nowait(None)
            if not self.record.done():
                self.record.set_result(record)
            if not self.final.done():
                self.final.set_result((outcome, body))

    def plan(self, agent: Any, items: list[dict[str, Any]] | None) -> TurnPlan:
        return TurnPlan(
            agent=agent,
            # Responses API input items, converted from the validated request (request.py).
            input=cast("list[TResponseInputItem] | None", items),
            run_config=_run_config(self.services.turns.engine.run_config, self.request),
            observe=self.observe,
            finished=self.finished,
            error_handlers=REFUSAL_AS_ANSWER,
        )

    def running(self, task: asyncio.Task[None] | None) -> StartedResponse:
        return StartedResponse(self.id, self.events, self.final, task, self.builder, self.record)


def _refusal(data: RunErrorHandlerInput[ChatContext]) -> RunErrorHandlerResult:
    # A refusal is the model's answer, not a failure: its message (a ``refusal`` part)
    # ends the response, as a completed one.
    refusal = getattr(data.error, "refusal", "")
    return RunErrorHandlerResult(final_output=refusal, include_in_history=False)


REFUSAL_AS_ANSWER: RunErrorHandlers[ChatContext] = {"model_refusal": _refusal}


async def start_response(
    services: Services,
    user: UserRecord,
    request: CreateResponse,
    remembered: Remembered | None = None,
) -> StartedResponse:
    """Start the turn; raises ``OpenResponsesError`` for anything that cannot run.
    ``remembered``: the responses of the WebSocket this request came on."""
    turns = services.turns
    decisions = approval_decisions(request)
    orchestrator = turns.engine.orchestrator
    policy = tool_policy(request, function_tools(orchestrator).keys(), handoff_names(orchestrator))
    callers = caller_tools(request, policy.callers)
    agent = (
        orchestrator
        if policy.default and not request.instructions
        else response_agent(orchestrator, request.instructions, policy, callers)
    )
    previous = (
        await _previous(services, user, request.previous_response_id, remembered or {})
        if request.previous_response_id
        else None
    )
    given = (
        None
        if decisions
        else turn_input(
            request,
            services.settings.max_prompt_chars,
            pending=caller_calls(previous.body) if previous is not None else None,
            expand=expander(services.fernet, user.id),
        )
    )
    if given is not None:
        check_uploads(services.attachments, given.items)
    asked: list[ApprovalRecord] = []
    if decisions:
        assert previous is not None  # approval_decisions requires it
        asked = await _pending(services, previous, decisions)
    await _check_limits(services, user)

    response = _Response.create(
        services,
        user,
        request,
        tool_definitions(request, [tool.name for tool in request.caller_tools]),
        gated_tools(orchestrator),
        frozenset(tool.name for tool in callers),
    )
    if decisions:
        assert previous is not None
        return await _resume(services, user, response, agent, previous, decisions, asked)
    assert given is not None
    continuing = previous is not None and await _continues(services, user, previous)
    chat_id = (
        previous.chat_id
        if continuing and previous is not None
        else await _new_chat(services, user, previous)
    )
    # The input's images and files become attachments of the chat (nothing is stored
    # unless every one of them is acceptable, nor kept unless the turn starts).
    stored: list[AttachmentRecord] = []
    try:
        stored = await store_uploads(services.attachments, user.id, chat_id, given.items)
        plan = response.plan(agent, given.items)
        try:
            submitted = await turns.submit(
                user.id, chat_id, given.prompt, None, now_ts(), plan, attachments=stored
            )
        except TurnInProgress:
            if not continuing:
                raise
            # The chat started another turn since we looked: continue in a fork instead.
            chat_id = await _new_chat(services, user, previous)
            await services.attachments.repo.move([record.id for record in stored], chat_id)
            submitted = await turns.submit(
                user.id, chat_id, given.prompt, None, now_ts(), plan, attachments=stored
            )
    except BaseException as exc:
        await services.attachments.discard(stored)
        response.started.set_exception(
            exc if isinstance(exc, Exception) else RuntimeError("stopped")
        )
        response.started.exception()  # retrieved: the finish hook will not run without a turn
        raise
    response.started.set_result((chat_id, submitted.user_prompt.turn_id or ""))
    logger.info(
        "open responses turn started",
        extra={
            "response_id": response.id,
            "chat_id": chat_id,
            "turn_id": submitted.user_prompt.turn_id,
        },
    )
    return response.running(submitted.task)


# ----------------------------------------------------------------------------- approvals


def _decided_error(approval_id: str, status: str, param: str) -> OpenResponsesError:
    """A decision on an approval that is not pending any more: 409, as the REST endpoint
    answers, since the request conflicts with what happened to it, not with its shape."""
    if status == "expired":
        return OpenResponsesError(
            "invalid_request",
            f"approval {approval_id!r} expired before it was answered, "
            "so nothing was run; ask again in a new message",
            code="approval_expired",
            param=param,
            status=409,
        )
    if status == "superseded":
        return OpenResponsesError(
            "invalid_request",
            f"approval {approval_id!r} was superseded by a later "
            "message (or stopped from the chat), so nothing was run; ask again in a new "
            "message",
            code="approval_decided",
            param=param,
            status=409,
        )
    return OpenResponsesError(
        "invalid_request",
        f"approval {approval_id!r} is already {status}; the first "
        "decision stands (continue from the response that followed it)",
        code="approval_decided",
        param=param,
        status=409,
    )


async def _pending(
    services: Services, previous: StoredResponse, decisions: list[Decision]
) -> list[ApprovalRecord]:
    """The approvals ``decisions`` answer, checked before any is taken: each is one that
    ``previous`` asked for, all of them are answered, and each still waits."""
    check_decisions(decisions, _asked(previous), previous.id)
    records = []
    now = datetime.now(UTC)
    for decision in decisions:
        record = await services.turns.approvals.get(previous.chat_id, decision.approval_id)
        param = f"{decision.param}.approval_id"
        if record is None:  # the chat was deleted meanwhile
            raise OpenResponsesError(
                "not_found",
                f"approval {decision.approval_id!r} no longer exists",
                code="previous_response_not_found",
                param=param,
            )
        if record.status != "pending":
            raise _decided_error(record.id, record.status, param)
        if record.expires_at <= now:
            # Due but not swept yet: refused here, so nothing is decided (the sweep
            # resolves it as expired, as everywhere else).
            raise _decided_error(record.id, "expired", param)
        records.append(record)
    return records


async def _resume(
    services: Services,
    user: UserRecord,
    response: _Response,
    agent: Any,
    previous: StoredResponse,
    decisions: list[Decision],
    records: list[ApprovalRecord],
) -> StartedResponse:
    """Take the decisions; the last one resumes the paused turn into ``response``."""
    response.builder.resuming(
        DecidedCall(record.call_id, record.name, record.arguments, decision.approve)
        for decision, record in zip(decisions, records, strict=True)
    )
    plan = response.plan(agent, None)
    # The turn that resumes is the one that paused: the response belongs to it.
    response.started.set_result((previous.chat_id, previous.turn_id))
    resumed = None
    for decision, record in zip(decisions, records, strict=True):
        param = f"{decision.param}.approval_id"
        try:
            decided = await services.turns.decide(
                user.id,
                previous.chat_id,
                decision.approval_id,
                decision.approve,
                decision.reason,
                "responses",
                plan,
            )
        except ApprovalNotFound:
            raise OpenResponsesError(
                "not_found",
                f"approval {decision.approval_id!r} no longer exists",
                code="previous_response_not_found",
                param=param,
            ) from None
        except ApprovalDecided as exc:  # decided elsewhere since we looked
            raise _decided_error(exc.approval_id, exc.status, param) from None
        except NotApproved as exc:
            raise OpenResponsesError(
                "server_error" if exc.retryable else "invalid_request",
                str(exc),
                code="approval_unchecked" if exc.retryable else "approval_changed",
                param=param,
                status=503 if exc.retryable else 409,
            ) from None
        if decided.expired:
            # It expired in the moment since we looked, and was resolved as such: not
            # run. The builder learns it before the resumed turn's first event, short of
            # a race of milliseconds (it would then show the "not run" text as output).
            response.builder.decided(
                DecidedCall(record.call_id, record.name, record.arguments, False)
            )
            if decided.resume is None:
                raise _decided_error(decision.approval_id, "expired", param)
        resumed = decided.resume or resumed
    if resumed is None:
        # Every decision was taken, yet the pause had already ended (stopped from the
        # chat meanwhile): nothing runs into this response.
        raise OpenResponsesError(
            "invalid_request",
            "the decisions were recorded, but the paused turn had "
            "already been stopped; send a new message to go on",
            code="approval_decided",
            status=409,
        )
    logger.info(
        "open responses turn resumed",
        extra={
            "response_id": response.id,
            "chat_id": previous.chat_id,
            "turn_id": previous.turn_id,
        },
    )
    # The response watches the resumed turn's task, to notice a turn that dies unfinished.
    return response.running(services.turns.running_task(previous.chat_id, resumed.turn_id))
