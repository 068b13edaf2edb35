"""Switchboard as a client of another Open Responses server (``responses:MODEL@URL``):
vendor extensions ignored quietly and never sent to another server, a failure before the
first token retried, refusals and cut-off answers shown as what they are."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from app.settings import Settings
from tests.fakes.model_server import (
    Call,
    FakeModelServer,
    Refuse,
    Say,
    Vendor,
    reply,
    running_model_server,
)
from tests.support.clients import open_client
from tests.support.servers import serve

pytestmark = pytest.mark.parametrize("_migrated_database", ["sqlite"], indirect=True)
# Vendor extensions and failed responses are the Responses wire's own.
RESPONSES = pytest.mark.parametrize("provider", ["responses"])

FAST_RETRY = {"retry-after-ms": "10"}


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"] != "llm_response_delta"]


def no_suggestions(fake: FakeModelServer) -> None:
    fake.structured["FollowUps"] = {"prompts": []}
    fake.structured["ChatTitle"] = {"title": "Hi"}


def vendor_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in body.get("input", []) if ":" in str(i.get("type"))]


@RESPONSES
async def test_vendor_items_and_events_are_ignored_quietly_and_never_sent_back(
    model_settings: Callable[..., Settings],
    fake_model: FakeModelServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_model.script(reply(Vendor(), Say("Hello there.")), Say("Second answer."))
    no_suggestions(fake_model)
    chat_id = uuid.uuid4().hex
    async with serve(model_settings()) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            first = await client.turn("hello")
            second = await client.turn("again")
    for events, text in ((first, "Hello there."), (second, "Second answer.")):
        assert types(events) == [
            "user_prompt",
            "llm_response",
            "end_of_stream",
            "suggested_prompts",
        ]
        assert [e["text"] for e in events if e["type"] == "llm_response"] == [text]
    assert "acme" not in json.dumps(first + second)
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == [], [r.getMessage() for r in loud]
    assert any(r.getMessage().startswith("ignored a vendor event") for r in caplog.records)
    # Not kept in the chat's history: not even their own server gets them back.
    body = fake_model.turn_requests()[1].body
    assert vendor_items(body) == [] and "acme" not in json.dumps(body)
    assert [i.get("content") for i in body["input"] if i.get("role") == "user"] == [
        "hello",
        "again",
    ]


@RESPONSES
async def test_vendor_items_are_not_sent_to_another_server(
    model_settings: Callable[..., Settings],
    fake_model: FakeModelServer,
) -> None:
    other = FakeModelServer(api_key=fake_model.api_key)
    fake_model.script(reply(Vendor(), Say("Hello there.")))
    no_suggestions(fake_model)
    chat_id = uuid.uuid4().hex
    async with serve(model_settings()) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            await client.turn("hello")
    async with running_model_server(other):
        other.script(Say("From the other server."))
        no_suggestions(other)
        settings = model_settings(model=f"responses:other@{other.base_url()}")
        async with serve(settings) as live, open_client(live.ws_url(chat_id)) as client:
            events = await client.turn("again")
    assert events[-2]["status"] == "completed"
    body = other.turn_requests()[0].body
    assert vendor_items(body) == [] and "acme" not in json.dumps(body)
    assert [i.get("content") for i in body["input"] if i.get("role") == "user"] == [
        "hello",
        "again",
    ]


@RESPONSES
async def test_a_failed_response_before_the_first_token_is_retried(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        # After the message was announced, before its first token.
        reply(Say("never shown"), break_before="response.output_text.delta"),
        # As the first event.
        reply(Say("never shown"), break_after=0, break_with="error_event"),
        Say("Hello! How can I help?"),
    )
    no_suggestions(fake_model)
    async with serve(model_settings(model_max_retries=2)) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("hello")
    assert types(events) == ["user_prompt", "llm_response", "end_of_stream", "suggested_prompts"]
    assert events[-2]["status"] == "completed" and events[-2]["usage"]["requests"] == 3
    assert len(fake_model.turn_requests()) == 3


@RESPONSES
async def test_a_failed_response_that_lasts_is_reported_after_the_retries(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    failed = reply(Say("never shown"), break_before="response.output_text.delta")
    fake_model.script(failed, failed, Say("a third try would take this"))
    async with serve(model_settings(model_max_retries=1)) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("hello")
    assert types(events) == ["user_prompt", "error", "end_of_stream"]
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "model_unavailable" and error["retryable"] is True
    assert len(fake_model.turn_requests()) == 2 and fake_model.pending == 1


@RESPONSES
async def test_a_failed_response_that_blames_the_request_is_not_retried(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        reply(Say("never shown"), break_after=0, error_code="invalid_prompt"),
        Say("a retry would take this"),
    )
    async with serve(model_settings(model_max_retries=3)) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("hello")
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "model_error" and error["retryable"] is False
    assert "invalid_prompt" in error["message"]
    assert len(fake_model.turn_requests()) == 1 and fake_model.pending == 1


@pytest.mark.parametrize("provider", ["responses", "openai"])
async def test_a_refusal_is_the_turns_answer_marked_as_a_refusal(
    model_settings: Callable[..., Settings],
    fake_model: FakeModelServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    refusal = "I can't help with that."
    fake_model.script(Refuse(refusal), Say("Sure, here is something else."))
    no_suggestions(fake_model)
    chat_id = uuid.uuid4().hex
    async with serve(model_settings()) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            events = await client.turn("something I should not ask")
            await client.turn("then something else")
        async with live.client() as http:
            detail = (await http.get(f"/api/chats/{chat_id}")).json()
    assert types(events) == ["user_prompt", "llm_response", "end_of_stream", "suggested_prompts"]
    answer = next(e for e in events if e["type"] == "llm_response")
    assert answer["text"] == refusal and answer["refusal"] is True
    deltas = "".join(e["delta"] for e in events if e["type"] == "llm_response_delta")
    assert deltas == refusal  # the deltas still join to the message's text
    assert events[-2]["status"] == "completed"
    assert detail["turns"][0]["status"] == "completed"
    assert detail["turns"][0]["final_text"] == refusal
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # The next turn's model knows it refused.
    assert refusal in json.dumps(fake_model.turn_requests()[1].body["input"])


@pytest.mark.parametrize("provider", ["responses", "openai"])
async def test_an_answer_cut_off_by_the_token_limit_is_shown_marked_as_cut_off(
    model_settings: Callable[..., Settings],
    fake_model: FakeModelServer,
) -> None:
    cut = "The answer is long and it was cut"
    fake_model.script(
        reply(Say(cut, chunk=5), incomplete="max_output_tokens"), Say("Shorter this time.")
    )
    no_suggestions(fake_model)
    chat_id = uuid.uuid4().hex
    async with serve(model_settings(model_max_retries=2)) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            events = await client.turn("tell me everything")
            await client.turn("shorter please")
        async with live.client() as http:
            detail = (await http.get(f"/api/chats/{chat_id}")).json()
    assert types(events) == ["user_prompt", "llm_response", "end_of_stream", "suggested_prompts"]
    answer = next(e for e in events if e["type"] == "llm_response")
    assert answer["text"] == cut and answer["incomplete_reason"] == "max_output_tokens"
    assert "refusal" not in answer
    deltas = "".join(e["delta"] for e in events if e["type"] == "llm_response_delta")
    assert deltas == cut
    assert events[-2]["status"] == "completed"
    assert detail["turns"][0]["final_text"] == cut
    # Not retried; the next turn's model reads the cut answer as what it said.
    assert len(fake_model.turn_requests()) == 2 and fake_model.pending == 0
    second = fake_model.turn_requests()[1].body
    assert cut in json.dumps(second.get("input") or second.get("messages"))


@RESPONSES
@pytest.mark.parametrize("connector_kind", ["chat", "responses"])
async def test_a_connector_agent_on_another_server_never_gets_the_vendor_items(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer, connector_kind: str
) -> None:
    # The orchestrator's server adds a vendor item to the response that hands off; the
    # connector agent runs on another server (SWITCHBOARD_CONNECTOR_MODEL), in the same turn.
    fake_model.script(reply(Vendor(), Call("transfer_to_yelp", {})))
    no_suggestions(fake_model)
    async with running_model_server(FakeModelServer(api_key=fake_model.api_key)) as other:
        other.script(Say("Yelp here: which city?"))
        no_suggestions(other)
        settings = model_settings(connector_model=f"{connector_kind}:small@{other.base_url()}")
        async with serve(settings) as live:
            async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
                events = await client.turn("find sushi")
    assert events[-2]["status"] == "completed"
    assert (
        next(e for e in events if e["type"] == "llm_response")["text"] == "Yelp here: which city?"
    )
    [sent] = other.turn_requests()
    assert "acme" not in sent.text
    assert "find sushi" in sent.text  # the history did go along


@RESPONSES
async def test_a_turn_paused_for_approval_with_a_vendor_item_resumes(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    # The paused run (with the vendor item among its items) is stored and restored.
    email = {"to": ["bob@example.com"], "subject": "Hi", "body": "Hello Bob."}
    fake_model.script(
        reply(Vendor(), Call("transfer_to_gmail", {})),
        reply(Vendor(data={"chunk": "second"}), Call("send_google_email", email)),
        Say("Sent."),
    )
    no_suggestions(fake_model)
    async with serve(model_settings()) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex), auto_approve=True) as client:
            events = await client.turn("email bob hello")
    assert "approval_resolved" in types(events)
    assert events[-2]["status"] == "completed"
    assert [e["text"] for e in events if e["type"] == "llm_response"] == ["Sent."]
    assert not any("acme" in r.text for r in fake_model.turn_requests())
