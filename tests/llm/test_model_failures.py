"""Model failures over the real wire: retried only before the first token, classified for
the user (PROTOCOL.md §5), and never leaking the key or the request."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from app.settings import Settings
from tests.fakes.model_server import Fail, FakeModelServer, Say, Stall, reply
from tests.support.clients import open_client
from tests.support.models import API_KEY
from tests.support.servers import LiveServer, serve

# The provider paths use storage the same way on both engines: the full turns of
# test_model_turns.py run on both, these cases on SQLite only (time budget of make test).
pytestmark = pytest.mark.parametrize("_migrated_database", ["sqlite"], indirect=True)

FAST_RETRY = {"retry-after-ms": "10"}  # the server's own Retry-After keeps tests quick


async def one_turn(live: LiveServer, text: str = "hello there") -> list[dict[str, Any]]:
    async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
        return await client.turn(text)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"] != "llm_response_delta"]


def error_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["type"] == "error")


async def test_a_rate_limit_before_the_first_token_is_retried(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Fail(429, "rate_limit_exceeded", headers=FAST_RETRY),
        Fail(503, "server_error", headers=FAST_RETRY),
        Say("Hello! How can I help?"),
    )
    fake_model.structured["FollowUps"] = {"prompts": []}
    fake_model.structured["ChatTitle"] = {"title": "Greeting"}
    async with serve(model_settings(model_max_retries=2)) as live:
        events = await one_turn(live)
    assert types(events) == ["user_prompt", "llm_response", "end_of_stream", "suggested_prompts"]
    assert events[-2]["status"] == "completed"
    assert len(fake_model.turn_requests()) == 3
    # The SDK counts the failed attempts as requests (with no tokens).
    assert events[-2]["usage"] == {
        "input_tokens": 100,
        "output_tokens": 10,
        "total_tokens": 110,
        "requests": 3,
    }


async def test_a_rate_limit_that_lasts_ends_the_turn_as_rate_limited(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(*[Fail(429, "rate_limit_exceeded", headers=FAST_RETRY)] * 2)
    async with serve(model_settings(model_max_retries=1)) as live:
        events = await one_turn(live)
    assert types(events) == ["user_prompt", "error", "end_of_stream"]
    error = error_of(events)
    assert error["code"] == "rate_limited" and error["retryable"] is True
    assert events[-1]["status"] == "failed"
    assert len(fake_model.turn_requests()) == 2 and fake_model.pending == 0


async def test_server_errors_are_retried_with_backoff_then_model_unavailable(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    # No Retry-After: the policy's own backoff (0.5 s, jittered) separates the attempts.
    fake_model.script(Fail(500, "server_error"), Fail(502, None))
    async with serve(model_settings(model_max_retries=1)) as live:
        events = await one_turn(live)
    error = error_of(events)
    assert error == {**error, "code": "model_unavailable", "retryable": True}
    assert "HTTP 502" in error["message"]
    assert events[-1]["status"] == "failed" and len(fake_model.turn_requests()) == 2


@pytest.mark.parametrize("status", [400, 404, 422])
async def test_client_errors_are_model_errors_and_not_retried(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer, status: int
) -> None:
    fake_model.script(Fail(status, "invalid_request_error"), Say("never sent"))
    async with serve(model_settings(model_max_retries=3)) as live:
        events = await one_turn(live)
    error = error_of(events)
    assert error["code"] == "model_error" and error["retryable"] is False
    assert f"HTTP {status}" in error["message"]
    assert len(fake_model.turn_requests()) == 1 and fake_model.pending == 1


async def test_a_wrong_key_is_a_model_error_that_names_no_key(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    wrong = "sk-wrong-0000000000000000"
    fake_model.script(Say("never sent"))
    async with serve(model_settings(model_api_key=wrong)) as live:
        events = await one_turn(live)
    error = error_of(events)
    assert error["code"] == "model_error" and error["retryable"] is False
    assert "credentials" in error["message"] and "HTTP 401" in error["message"]
    assert wrong not in str(events) and API_KEY not in str(events)


@pytest.mark.parametrize("break_with", ["failed", "error_event", "disconnect"])
async def test_a_failure_after_the_first_token_is_not_retried(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer, break_with: str
) -> None:
    text = "Here is the first part of a long answer that never finishes."
    fake_model.script(
        reply(Say(text, chunk=5), break_after=3, break_with=break_with),  # type: ignore[arg-type]
        Say("a retry would take this"),
    )
    chat_id = uuid.uuid4().hex
    async with serve(model_settings(model_max_retries=3)) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            events = await client.turn("tell me a long story")
        async with live.client() as http:
            detail = (await http.get(f"/api/chats/{chat_id}")).json()
    assert types(events) == ["user_prompt", "error", "end_of_stream"]
    streamed = "".join(e["delta"] for e in events if e["type"] == "llm_response_delta")
    assert streamed == text[:15]
    error = error_of(events)
    # The fake fails with the provider code "server_error" (or just drops the connection).
    assert error["code"] == "model_unavailable" and error["retryable"] is True
    assert events[-1]["status"] == "failed"
    assert len(fake_model.turn_requests()) == 1 and fake_model.pending == 1
    # What the user saw is kept as the turn's text.
    assert detail["turns"][0]["status"] == "failed"
    assert detail["turns"][0]["final_text"] == streamed


async def test_a_server_that_does_not_answer_in_time_is_retried(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(Stall(1.5), Say("Sorry for the wait."))
    fake_model.structured["FollowUps"] = {"prompts": ["Thanks"]}
    fake_model.structured["ChatTitle"] = {"title": "Waiting"}
    async with serve(model_settings(model_timeout=0.3, model_max_retries=1)) as live:
        events = await one_turn(live)
    assert events[-2]["status"] == "completed"
    assert next(e for e in events if e["type"] == "llm_response")["text"] == "Sorry for the wait."
    assert len(fake_model.turn_requests()) == 2


async def test_a_server_that_never_answers_is_model_unavailable(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(Stall(1.5), Stall(1.5))
    async with serve(model_settings(model_timeout=0.3, model_max_retries=1)) as live:
        events = await one_turn(live)
    error = error_of(events)
    assert error["code"] == "model_unavailable" and error["retryable"] is True
    assert "in time" in error["message"]
    assert events[-1]["status"] == "failed" and len(fake_model.turn_requests()) == 2


async def test_a_stream_that_goes_silent_fails_without_a_retry(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        reply(Say("Thinking about it", chunk=4), break_after=2, break_with="stall"),
        Say("a retry would take this"),
    )
    async with serve(model_settings(model_timeout=0.4, model_max_retries=2)) as live:
        events = await one_turn(live)
    assert types(events) == ["user_prompt", "error", "end_of_stream"]
    assert error_of(events)["code"] == "model_unavailable"
    assert len(fake_model.turn_requests()) == 1


async def test_a_call_longer_than_the_call_timeout_is_cut(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    # Every chunk comes quickly (no read timeout), but the whole answer takes too long.
    fake_model.script(reply(Say("one two three four five six seven eight", chunk=4), delay=0.1))
    async with serve(
        model_settings(model_timeout=5, model_call_timeout=0.8, model_max_retries=0)
    ) as live:
        events = await one_turn(live)
    error = error_of(events)
    assert error["code"] == "model_unavailable" and "in time" in error["message"]
    assert any(e["type"] == "llm_response_delta" for e in events)
    assert events[-1]["status"] == "failed"


@pytest.mark.parametrize(
    "failure",
    [
        Fail(400, "invalid_request_error", "bad request", echo_request=True),
        Fail(429, "rate_limit_exceeded", "slow down", headers=FAST_RETRY, echo_request=True),
        Fail(500, "server_error", "boom", headers=FAST_RETRY, echo_request=True),
    ],
)
async def test_no_key_or_request_body_in_events_or_logs(
    model_settings: Callable[..., Settings],
    fake_model: FakeModelServer,
    caplog: pytest.LogCaptureFixture,
    failure: Fail,
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_model.script(failure, failure)
    async with serve(model_settings(model_max_retries=1)) as live:
        events = await one_turn(live, "look up the weather for me")
    error = error_of(events)
    assert error["code"] in ("model_error", "rate_limited", "model_unavailable")
    wire = str([e for e in events if e["type"] != "user_prompt"])
    logs = caplog.text + " ".join(str(vars(record)) for record in caplog.records)
    assert fake_model.requests, "the model server was never called"
    # The instructions and the tool schemas are only ever in the request body (the prompt
    # is also in storage's own DEBUG lines, so it cannot tell).
    for secret in (API_KEY, "You are Switchboard", "transfer_to_yelp"):
        assert secret not in wire, f"{secret!r} reached the socket"
        assert secret not in logs, f"{secret!r} reached the log"
    # The failure is logged, by its facts.
    failed = [r for r in caplog.records if r.getMessage().startswith("turn failed")]
    assert failed and getattr(failed[0], "status", None) == failure.status
