"""Run one Open Responses request as a turn of a chat.

Each response is a turn, so it is persisted, shown in the chat history and watched live
by any socket of its chat, exactly like a prompt typed in the UI. A request without
``previous_response_id`` starts a new chat; with one, it continues that response's chat,
or a fork of it when the chat has moved on since (another response chained to the same
one, a prompt from the UI) so that the context is exactly the chain's.

The turn runs in the turn manager (``websocket.turn.TurnPlan``): this module feeds its SDK
events to a ``ResponseBuilder`` and, when the turn has ended, stores the final Response
object before the terminal event goes out, so a client can chain on it at once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from agents import ModelSettings, RunConfig

from app.openresponses.agents import (
    ToolPolicy,
    function_tools,
    response_agent,
    tool_definitions,
    tool_policy,
)
from app.openresponses.errors import OpenResponsesError
from app.openresponses.request import CreateResponse, turn_input
from app.openresponses.stream import Event, ResponseBuilder, new_id
from app.services import Services
from storage.chats import ChatRepository
from storage.errors import TurnInProgress
from storage.open_responses import ResponseRepository, StoredResponse
from storage.records import UserRecord
from websocket.protocol import now_ts
from websocket.turn import TurnOutcome, TurnPlan

logger = logging.getLogger("switchboard.openresponses")

# A cancelled turn (a graceful shutdown ran out of time, or someone pressed Stop in the
# chat) is a failed response: "incomplete" is for a token budget (seed 002).
CANCELLED = {"code": "cancelled", "message": "The response was stopped before it finished "
             "(the server is restarting, or it was stopped from the chat); try again."}


@dataclass
class StartedResponse:
    id: str
    events: asyncio.Queue[Event | None]  # the stream; None after the terminal event
    final: asyncio.Future[tuple[TurnOutcome, dict[str, Any]]]  # outcome, Response object
    turn: asyncio.Task[None] | None
    builder: ResponseBuilder

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
    """What a non-streaming request that failed answers (seed 002, "Error Types")."""
    error = outcome.error or CANCELLED
    code = str(error.get("code") or "server_error")
    message = f"{error.get('message') or 'The response failed.'} (response {response_id})"
    if code == "rate_limited":
        return OpenResponsesError("too_many_requests", message, code=code,
                                  headers={"Retry-After": "5"})
    if code in ("model_error", "model_unavailable"):
        return OpenResponsesError("model_error", message, code=code)
    if code == "cancelled":
        return OpenResponsesError("server_error", message, code=code, status=503,
                                  headers={"Retry-After": "5"})
    return OpenResponsesError("server_error", message, code=code)


def _run_config(base: RunConfig, request: CreateResponse) -> RunConfig:
    wanted = ModelSettings(temperature=request.temperature, top_p=request.top_p,
                           max_tokens=request.max_output_tokens,
                           parallel_tool_calls=None if request.parallel_tool_calls else False)
    if wanted == ModelSettings():
        return base
    current = base.model_settings or ModelSettings()
    return replace(base, model_settings=current.resolve(wanted))


def _echo(request: CreateResponse, tools: list[dict[str, Any]]) -> dict[str, Any]:
    choice = request.tool_choice
    return {
        "instructions": request.instructions,
        "previous_response_id": request.previous_response_id,
        "tool_choice": choice if isinstance(choice, str) else choice.model_dump(),
        "tools": tools, "temperature": request.temperature, "top_p": request.top_p,
        "max_output_tokens": request.max_output_tokens,
        "parallel_tool_calls": request.parallel_tool_calls,
        "metadata": request.metadata, "user": request.user, "truncation": request.truncation,
    }


def _check_limits(services: Services, user: UserRecord) -> None:
    settings, turns = services.settings, services.turns
    if turns.draining:
        raise OpenResponsesError("server_error", "the server is restarting; try again in a "
                                 "moment", status=503, headers={"Retry-After": "5"})
    if turns.running_for(user.id) >= settings.max_turns_per_user:
        services.metrics.rate_limited.labels("turns").inc()
        raise OpenResponsesError("too_many_requests", "too many responses or turns are "
                                 "running at once for this user; wait for one to end",
                                 code="rate_limited", headers={"Retry-After": "1"})
    wait = services.prompt_limiter.allow(user.id)
    if wait is not None:
        services.metrics.rate_limited.labels("prompts").inc()
        seconds = max(1, math.ceil(wait))
        raise OpenResponsesError("too_many_requests", f"too many requests; try again in "
                                 f"{seconds} s", code="rate_limited",
                                 headers={"Retry-After": str(seconds)})


async def _previous(services: Services, user: UserRecord,
                    response_id: str) -> StoredResponse:
    stored = await ResponseRepository(services.db, user.id).get(response_id)
    if stored is None:
        raise OpenResponsesError(
            "not_found", f"no response {response_id!r}: it does not exist, belongs to "
            "another user, or has not finished yet", code="previous_response_not_found",
            param="previous_response_id")
    return stored


async def _continues(services: Services, user: UserRecord, stored: StoredResponse) -> bool:
    """Whether the chat still ends exactly where ``stored`` left it."""
    newest = await ResponseRepository(services.db, user.id).newest_item_id(stored.chat_id)
    running = await services.store.running_turn(stored.chat_id)
    return newest == stored.last_item_id and running is None


async def _new_chat(services: Services, user: UserRecord,
                    fork_of: StoredResponse | None) -> str:
    chat_id = uuid.uuid4().hex  # the shape of the UI's chat ids
    if fork_of is not None:
        await ResponseRepository(services.db, user.id).fork(fork_of, chat_id)
    else:
        await ChatRepository(services.db, user.id).get_or_create(chat_id)
    return chat_id


async def start_response(services: Services, user: UserRecord,
                         request: CreateResponse) -> StartedResponse:
    """Start the turn; raises ``OpenResponsesError`` for anything that cannot run."""
    turns = services.turns
    given = turn_input(request, services.settings.max_prompt_chars)
    orchestrator = turns.engine.orchestrator
    policy = tool_policy(request, function_tools(orchestrator).keys())
    agent = orchestrator if policy == ToolPolicy(None, None) and not request.instructions \
        else response_agent(orchestrator, request.instructions, policy)
    previous = (await _previous(services, user, request.previous_response_id)
                if request.previous_response_id else None)
    _check_limits(services, user)

    response_id = new_id("resp")
    builder = ResponseBuilder(id=response_id, created_at=int(time.time()), model=request.model,
                              echo=_echo(request, tool_definitions(orchestrator,
                                                                   policy.allowed)))
    events: asyncio.Queue[Event | None] = asyncio.Queue()
    for event in builder.start():
        events.put_nowait(event)
    loop = asyncio.get_running_loop()
    final: asyncio.Future[tuple[TurnOutcome, dict[str, Any]]] = loop.create_future()
    started: asyncio.Future[tuple[str, str]] = loop.create_future()  # chat id, turn id

    def observe(sdk_event: object) -> None:
        for event in builder.feed(sdk_event):
            events.put_nowait(event)

    async def finished(outcome: TurnOutcome) -> None:
        status = "completed" if outcome.status == "completed" else "failed"
        closing = builder.finish(
            status, usage=outcome.usage, completed_at=int(time.time()),
            error=response_error(outcome.error) if status == "failed" else None)
        body = closing[-1]["response"]
        try:
            chat_id, turn_id = await asyncio.wait_for(asyncio.shield(started), 30)
            await ResponseRepository(services.db, user.id).save(
                response_id, chat_id, turn_id, request.previous_response_id, status, body)
        except Exception:
            logger.exception("could not store the response", extra={"response_id": response_id})
        finally:
            for event in closing:
                events.put_nowait(event)
            events.put_nowait(None)
            if not final.done():
                final.set_result((outcome, body))

    plan = TurnPlan(agent=agent, input=given.items,
                    run_config=_run_config(turns.engine.run_config, request),
                    observe=observe, finished=finished)
    continuing = previous is not None and await _continues(services, user, previous)
    chat_id = previous.chat_id if continuing and previous is not None \
        else await _new_chat(services, user, previous)
    try:
        try:
            submitted = await turns.submit(user.id, chat_id, given.prompt, None, now_ts(), plan)
        except TurnInProgress:
            if not continuing:
                raise
            # The chat started another turn since we looked: continue in a fork instead.
            chat_id = await _new_chat(services, user, previous)
            submitted = await turns.submit(user.id, chat_id, given.prompt, None, now_ts(),
                                           plan)
    except BaseException as exc:
        started.set_exception(exc if isinstance(exc, Exception) else RuntimeError("stopped"))
        started.exception()  # retrieved: the finish hook will not run without a turn
        raise
    started.set_result((chat_id, submitted.user_prompt.turn_id or ""))
    logger.info("open responses turn started", extra={
        "response_id": response_id, "chat_id": chat_id,
        "turn_id": submitted.user_prompt.turn_id})
    return StartedResponse(response_id, events, final, submitted.task, builder)
