"""What goes wrong on ``/ag-ui``: bad input is a clear 4xx before anything runs and leaves
nothing behind; a run that fails ends with ``RUN_ERROR``; auth is the REST API's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from app.agui.routes import MAX_BODY_BYTES
from tests.fakes.model_server import Fail, FakeModelServer, Refuse, Say, Stall, reply
from tests.support.agui import (
    MULTI,
    approve,
    chat_detail,
    chat_ids,
    new_thread,
    post,
    prompt_input,
    resume_input,
    sent_mail,
)
from tests.support.servers import LiveServer
from tests.support.waiting import wait_until

T = "t-1"


def with_last(**message: Any) -> dict[str, Any]:
    body = prompt_input(T, "hello")
    body["messages"][-1] = {"id": "m1", "role": "user", "content": "hi", **message}
    return body


BAD: list[tuple[Any, str]] = [
    ("not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ({"runId": "r", "messages": []}, "threadId"),
    ({"threadId": T, "runId": "r"}, "messages"),
    ({**prompt_input(T, "hi"), "threadId": "a b"}, "threadId must match"),
    ({**prompt_input(T, "hi"), "threadId": "x" * 65}, "threadId must match"),
    ({**prompt_input(T, "hi"), "runId": ""}, "runId"),
    ({**prompt_input(T, "hi"), "messages": []}, "messages is empty"),
    (
        {**prompt_input(T, "hi"), "messages": [{"id": "a", "role": "assistant", "content": "x"}]},
        "not 'assistant'",
    ),
    (
        {
            **prompt_input(T, "hi"),
            "messages": [{"id": "t", "role": "tool", "content": "x", "toolCallId": "c"}],
        },
        "run on the server",
    ),
    (with_last(role="robot"), "messages.0"),
    (with_last(content="   "), "content is empty"),
    (with_last(content="x" * 40_000), "the limit is"),
    (with_last(content="nul \u0000 here"), "content"),
    (with_last(id="i" * 65), "id must be 1..64"),
    (
        with_last(content=[{"type": "image", "source": {"type": "url", "value": "http://x/y"}}]),
        "text only",
    ),
    ("[" * 100 + "]" * 100, "nested"),
]


@pytest.mark.parametrize("body, words", BAD, ids=[str(i) for i in range(len(BAD))])
async def test_bad_input_is_a_clear_400_and_leaves_nothing(
    offline: LiveServer, body: Any, words: str
) -> None:
    answer = await post(offline, body)
    assert answer.status == 400, answer.text
    error = answer.error()
    assert error["code"] == "invalid_request"
    assert words in error["message"], error
    assert await chat_ids(offline) == []
    # The server goes on: the same thread runs once the input is right.
    assert (await post(offline, prompt_input(T, "find sushi in Boston"))).status == 200


async def test_a_body_too_big_is_413_and_a_get_is_405(offline: LiveServer) -> None:
    big = json.dumps(prompt_input(T, "x" * (MAX_BODY_BYTES + 1)))
    answer = await post(offline, big)
    assert answer.status == 413 and "bytes" in answer.error()["message"]
    async with httpx.AsyncClient(base_url=offline.http) as http:
        got = await http.get("/ag-ui")
    assert got.status_code == 405 and got.headers["allow"] == "POST"
    assert got.json()["error"]["code"] == "invalid_request"
    assert await chat_ids(offline) == []


@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "text/plain; charset=utf-8"]
)
async def test_a_body_sent_as_another_media_type_is_415(
    offline: LiveServer, content_type: str
) -> None:
    # What curl -d sends: a JSON-looking body, declared as a form (it was read as JSON).
    body = json.dumps(prompt_input(T, "hello"))
    answer = await post(offline, body, headers={"Content-Type": content_type})
    assert answer.status == 415, answer.text
    error = answer.error()
    assert error["code"] == "invalid_request"
    assert "Content-Type: application/json" in error["message"]
    assert content_type.split(";")[0] in error["message"]
    assert await chat_ids(offline) == []
    # JSON by another name (application/*+json) and charset parameters are JSON.
    typed = {"Content-Type": "application/vnd.example+json; charset=utf-8"}
    assert (await post(offline, body, headers=typed)).status == 200


async def test_a_refusal_is_the_run_s_answer_marked_as_a_refusal(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    refusal = "I can't help with that."
    fake_model.script(Refuse(refusal))
    thread = new_thread()
    async with scripted() as live:
        run = await post(live, prompt_input(thread, "something I should not ask"))
    assert run.types == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    start, content = run.events[1], run.events[2]
    assert start["metadata"]["switchboard"]["refusal"] is True
    assert content["delta"] == refusal


async def test_a_model_that_fails_ends_the_run_with_run_error(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(Fail(500, message="upstream exploded: Traceback (most recent call last)"))
    thread = new_thread()
    async with scripted() as live:
        run = await post(live, prompt_input(thread, "hello"))
        chat = await chat_detail(live, thread)
    assert run.types == ["RUN_STARTED", "RUN_ERROR"]
    error = run.last
    assert error["code"] in ("model_error", "model_unavailable")
    assert "Traceback" not in error["message"] and error["message"]
    assert isinstance(error["metadata"]["switchboard"]["retryable"], bool)
    [turn] = chat["turns"]
    assert turn["status"] == "failed"
    assert [e["type"] for e in chat["events"]][-2:] == ["error", "end_of_stream"]


async def test_a_busy_thread_is_409_and_a_stopped_run_finishes_cancelled(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(Stall(60))
    thread = new_thread()
    async with scripted(model_timeout=120, model_call_timeout=120) as live:
        first = asyncio.create_task(post(live, prompt_input(thread, "hello")))
        await wait_until(
            lambda: live.services.store.running_turn(thread), what="the first run's turn"
        )
        busy = await post(live, prompt_input(thread, "and again"))
        assert busy.status == 409 and busy.error()["code"] == "turn_in_progress"
        assert await live.services.turns.cancel_anywhere("local", thread)
        run = await asyncio.wait_for(first, 30)
        chat = await chat_detail(live, thread)
    assert run.types == ["RUN_STARTED", "RUN_FINISHED"]
    assert run.last["outcome"] == {"type": "cancelled"}
    assert [t["status"] for t in chat["turns"]] == ["cancelled"]


async def test_too_many_messages_is_429_with_retry_after(
    make_settings: Callable[..., Any],
) -> None:
    from tests.support.servers import serve

    async with serve(make_settings(prompts_per_minute=1)) as live:
        assert (await post(live, prompt_input(new_thread(), "find sushi in Boston"))).status == 200
        thread = new_thread()
        limited = await post(live, prompt_input(thread, "find sushi in Boston"))
        assert limited.status == 429 and limited.error()["code"] == "rate_limited"
        assert int(limited.headers["retry-after"]) >= 1
        assert thread not in await chat_ids(live)


async def test_token_mode_needs_a_token_and_keeps_threads_apart(tokened: LiveServer) -> None:
    ada, bob = tokened.tokens["ada"], tokened.tokens["bob"]
    thread = new_thread()
    for token in (None, "sb_not_a_real_token"):
        refused = await post(tokened, prompt_input(thread, MULTI), token=token)
        assert refused.status == 401, refused.text
        assert refused.error()["code"] == "unauthorized"
        assert "Bearer" in refused.error()["message"]
    run = await post(tokened, prompt_input(thread, MULTI), token=ada)
    [asked] = run.interrupts
    # Bob can neither write to Ada's thread nor answer her interrupt: it does not exist
    # for him.
    intruder = await post(tokened, prompt_input(thread, "hello"), token=bob)
    assert intruder.status == 404 and intruder.error()["code"] == "not_found"
    answer = await post(tokened, resume_input(thread, approve(asked["id"])), token=bob)
    assert answer.status == 404
    assert await chat_ids(tokened, bob) == []
    assert sent_mail(tokened, tokened.tokens["ada:id"]) == []
    # Ada's thread is as she left it, and goes on.
    resumed = await post(tokened, resume_input(thread, approve(asked["id"])), token=ada)
    assert resumed.last["outcome"] == {"type": "success"}
    assert len(sent_mail(tokened, tokened.tokens["ada:id"])) == 1
    chat = await chat_detail(tokened, thread, ada)
    assert [t["prompt"] for t in chat["turns"]] == [MULTI]
    assert await chat_ids(tokened, ada) == [thread]


async def test_a_page_from_another_origin_is_refused(offline: LiveServer) -> None:
    answer = await post(
        offline, prompt_input(new_thread(), "hello"), headers={"Origin": "https://evil.example"}
    )
    assert answer.status == 403 and answer.error()["code"] == "forbidden"
    assert await chat_ids(offline) == []


async def test_a_client_that_goes_away_loses_nothing(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    answer = "A long answer, streamed a few characters at a time, to the end."
    fake_model.script(reply(Say(answer, chunk=3), delay=0.02))
    thread = new_thread()
    async with scripted() as live:
        async with httpx.AsyncClient(base_url=live.http, timeout=30) as http:
            async with http.stream("POST", "/ag-ui", json=prompt_input(thread, "hi")) as sse:
                lines = sse.aiter_lines()
                async for line in lines:
                    if '"TEXT_MESSAGE_CONTENT"' in line:
                        break  # the person closes the tab mid-answer
        # The turn finishes and is stored all the same, like a closed socket's.
        turns = await wait_until(
            lambda: _finished_turns(live, thread), what="the abandoned run's turn to finish"
        )
    assert [(t["status"], t["final_text"]) for t in turns] == [("completed", answer)]


async def _finished_turns(live: LiveServer, thread: str) -> list[dict[str, Any]]:
    turns = (await chat_detail(live, thread))["turns"]
    return turns if turns and turns[0]["status"] != "running" else []
