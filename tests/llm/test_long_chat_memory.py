"""A 500-turn chat against a small-context model server (issue 20, Memory): every request
fits, tool calls never leave their outputs, the summaries are stored and reused, and the
last answer still sees them.

Everything is real but the model: the app on uvicorn, a chat socket, the Agents SDK runner
with its own ``OpenAIResponsesModel``, the demo connectors, SQLite and PostgreSQL. The fake
model server refuses, as OpenAI does, any request longer than its context
(``context_length_exceeded``), so a turn whose history did not fit would fail.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from app.settings import Settings
from storage.memory import MemoryStore
from storage.session import ChatSession
from tests.fakes.model_server import (
    CHARS_PER_TOKEN,
    Call,
    FakeModelServer,
    Recorded,
    Say,
    reply,
    request_tokens,
    running_model_server,
)
from tests.support.clients import open_client
from tests.support.models import API_KEY, model_spec
from tests.support.servers import serve
from websocket.memory import is_summary_item

TURNS = 500
# Tokens: the instructions and tools of the largest agent (Gmail) take about 2,000. Small,
# because the OpenAI client's request building costs CPU in proportion to the input.
CONTEXT = 8_000
TOOL_EVERY = 10
SUMMARY = "The user's code word is ZEBRA-42; they asked many numbered questions."


@pytest.fixture
async def small_model() -> AsyncIterator[FakeModelServer]:
    async with running_model_server(
        FakeModelServer(api_key=API_KEY, context_tokens=CONTEXT)
    ) as server:
        yield server


def script_turn(fake: FakeModelServer, n: int) -> None:
    """Every tenth turn searches the web (a handoff, then the search: two call/output
    pairs); the others just answer. One delta per answer keeps 500 turns quick."""
    answer = f"Answer {n}: " + "this is what you asked about, in a few words. " * 3
    if n % TOOL_EVERY == 0:
        fake.script(
            Call("transfer_to_search", {}),
            Call("search_google", {"query": f"question {n}"}, call_id=f"call_search_{n}"),
        )
    fake.script(reply(Say(answer, chunk=len(answer))))


def prompt(n: int) -> str:
    return f"Question {n}: tell me about topic number {n}."


def calls_and_outputs(request: Recorded) -> tuple[list[str], list[str]]:
    items = request.body.get("input") or []
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    return calls, outputs


async def test_a_500_turn_chat_fits_a_small_context(
    make_settings: Callable[..., Settings], small_model: FakeModelServer
) -> None:
    fake = small_model
    fake.structured["ConversationSummary"] = {"summary": SUMMARY}
    settings = make_settings(
        model=model_spec("responses", fake),
        model_api_key=API_KEY,
        model_context_tokens=CONTEXT,
        prompts_per_minute=100_000,
        # No suggestions (two requests a turn fewer): the summaries then come from the
        # connector model, here the same fake server.
        suggest_model="off",
    )
    for n in range(TURNS):
        script_turn(fake, n)
    chat_id = uuid.uuid4().hex
    async with serve(settings) as live:
        async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
            for n in range(TURNS):
                await client.send({"type": "prompt", "text": prompt(n)})
                events = await client.decide_until_end()
                end = next(e for e in events if e["type"] == "end_of_stream")
                assert end["status"] == "completed", (n, events[-3:])
        db = live.services.db
        compaction = await MemoryStore(db).load(chat_id)
        rows = await ChatSession(db, chat_id).get_rows()

    # Every request fitted the context (the server refuses the others).
    assert fake.too_long == [] and fake.pending == 0
    assert fake.largest_request <= CONTEXT
    # ... and the context was a real constraint: the whole history is many times larger,
    # and the largest request came close to the limit.
    whole = sum(len(json.dumps(item, separators=(",", ":"))) for _, item in rows)
    assert whole / CHARS_PER_TOKEN > TURNS * CONTEXT / 100
    assert fake.largest_request > 0.35 * CONTEXT

    turn_requests = fake.turn_requests()
    assert len(turn_requests) == TURNS + 2 * (TURNS // TOOL_EVERY)
    for request in turn_requests:
        calls, outputs = calls_and_outputs(request)
        # No call without its output, no output without its call, in any request.
        assert sorted(calls) == sorted(outputs), request.body.get("input")

    # The summaries were stored and reused: a summary call every several turns, not one
    # per turn, and the stored compaction counts exactly those calls.
    summary_calls = [r for r in fake.requests if r.structured_name == "ConversationSummary"]
    assert compaction is not None and compaction.summary == SUMMARY
    assert compaction.compactions == len(summary_calls)
    assert 3 <= len(summary_calls) <= TURNS // 5
    # Each summary call merges the previous summary with the newly folded turns.
    assert SUMMARY in summary_calls[-1].text
    first_requests = [
        r for r in turn_requests if (r.body["input"] or [{}])[-1].get("role") == "user"
    ]
    assert len(first_requests) == TURNS
    with_summary = [r for r in first_requests if is_summary_item(r.body["input"][0])]
    assert len(with_summary) > TURNS - TURNS // 5

    # The last turn's answer still sees the compaction, then the turns after it.
    last = turn_requests[-1].body["input"]
    assert last[0]["role"] == "system" and SUMMARY in json.dumps(last[0])
    assert last[-1]["content"] == prompt(TURNS - 1)
    # A bounded history: the last turns send about as many items as the early ones did.
    sizes = [len(r.body["input"]) for r in first_requests]
    assert max(sizes[-50:]) <= max(sizes[:60]) + 2

    # The summary lives in its own table: the conversation items never hold it, and every
    # turn's items were kept (the transcript and the Open Responses replay read them).
    assert not any(is_summary_item(item) for _, item in rows)
    assert sum(1 for _, item in rows if item.get("role") == "user") == TURNS
    assert compaction.through_item_id < rows[-1][0]


async def test_the_fake_server_refuses_a_request_longer_than_its_context(
    small_model: FakeModelServer,
) -> None:
    """The check above can fail: too long a request gets OpenAI's error, and is kept."""
    body: dict[str, Any] = {
        "model": "fake-large",
        "input": [{"role": "user", "content": "x" * (CONTEXT * CHARS_PER_TOKEN)}],
    }
    assert request_tokens(body) > CONTEXT
    async with httpx.AsyncClient(base_url=small_model.base_url(), timeout=10) as http:
        answer = await http.post(
            "/responses", json=body, headers={"Authorization": f"Bearer {API_KEY}"}
        )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "context_length_exceeded" and error["param"] == "messages"
    assert error["type"] == "invalid_request_error"
    assert f"maximum context length is {CONTEXT} tokens" in error["message"]
    assert len(small_model.too_long) == 1


async def test_a_chat_completions_server_reads_the_summary_as_a_system_message(
    make_settings: Callable[..., Settings], small_model: FakeModelServer
) -> None:
    """The same memory over Chat Completions: the summary is a system message after the
    agent's own, and no ``tool`` message is ever sent without its assistant call."""
    fake = small_model
    fake.structured["ConversationSummary"] = {"summary": SUMMARY}
    settings = make_settings(
        model=model_spec("chat", fake),
        model_api_key=API_KEY,
        model_context_tokens=CONTEXT,
        prompts_per_minute=100_000,
        suggest_model="off",
    )
    turns = 16
    for n in range(turns):
        script_turn(fake, n * TOOL_EVERY)  # a web search in every turn
    chat_id = uuid.uuid4().hex
    async with serve(settings) as live:
        async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
            for n in range(turns):
                await client.send({"type": "prompt", "text": prompt(n)})
                events = await client.decide_until_end()
                assert events[-1]["status"] == "completed", (n, events[-3:])

    assert fake.too_long == [] and fake.pending == 0
    summary_calls = [r for r in fake.requests if r.structured_name == "ConversationSummary"]
    assert 1 <= len(summary_calls) < turns
    last = fake.turn_requests()[-1].body["messages"]
    assert [m["role"] for m in last[:2]] == ["system", "system"]
    assert SUMMARY in last[1]["content"]
    for request in fake.turn_requests():
        messages = request.body["messages"]
        called = {c["id"] for m in messages for c in m.get("tool_calls") or []}
        answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
        assert called == answered
