"""Suggested prompts and chat titles from a real model (structured output), per-agent
models, and what happens when those calls fail, stall or are switched off."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from app.llm.offline import offline_title
from app.settings import Settings
from tests.fakes.model_server import Call, Fail, FakeModelServer, Say, Stall
from tests.llm.test_model_turns import wait_for_title
from tests.support.clients import open_client
from tests.support.models import API_KEY
from tests.support.servers import serve

# The provider paths use storage the same way on both engines: the full turns of
# test_model_turns.py run on both, these cases on SQLite only (time budget of make test).
pytestmark = pytest.mark.parametrize("_migrated_database", ["sqlite"], indirect=True)

PROMPT = "what's in my inbox?"


async def test_failed_suggestions_send_none_and_the_title_falls_back(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(Say("You have 3 unread emails."))
    fake_model.structured["FollowUps"] = Fail(500, "server_error")
    fake_model.structured["ChatTitle"] = Fail(400, "invalid_request_error")
    chat_id = uuid.uuid4().hex
    async with serve(model_settings()) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            events = await client.turn(PROMPT)
        async with live.client() as http:
            title = await wait_for_title(http, chat_id)
    assert events[-2]["status"] == "completed"
    assert events[-1]["type"] == "suggested_prompts" and events[-1]["prompts"] == []
    assert title == offline_title(PROMPT)
    assert sorted(r.structured_name or "" for r in fake_model.requests if r.structured_name) == [
        "ChatTitle",
        "FollowUps",
    ]


async def test_slow_suggestions_and_titles_are_abandoned(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(Say("You have 3 unread emails."))
    fake_model.structured["FollowUps"] = Stall(2.0)
    fake_model.structured["ChatTitle"] = Stall(2.0)
    chat_id = uuid.uuid4().hex
    async with serve(model_settings(suggest_timeout=0.3)) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            events = await client.turn(PROMPT)
        async with live.client() as http:
            title = await wait_for_title(http, chat_id)
    assert events[-1]["type"] == "suggested_prompts" and events[-1]["prompts"] == []
    assert title == offline_title(PROMPT)


async def test_a_new_prompt_cancels_pending_suggestions(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(Say("You have 3 unread emails."), Say("The newest is from Ana."))
    fake_model.structured["FollowUps"] = Stall(3.0)
    fake_model.structured["ChatTitle"] = {"title": "Inbox check"}
    chat_id = uuid.uuid4().hex
    async with serve(model_settings()) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            await client.send({"type": "prompt", "text": PROMPT})
            first = await client.until("end_of_stream")
            await client.send({"type": "prompt", "text": "who sent the newest?"})
            second = await client.until("end_of_stream")
        async with live.client() as http:
            title = await wait_for_title(http, chat_id)
    assert first[-1]["status"] == "completed" and second[-1]["status"] == "completed"
    # The first turn's stalled suggestions were cancelled, not sent late into the second.
    assert [e["type"] for e in second if e["type"] == "suggested_prompts"] == []
    assert second[0]["type"] == "user_prompt" and second[0]["text"] == "who sent the newest?"
    assert title == "Inbox check"


async def test_suggestions_switched_off(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(Say("You have 3 unread emails."))
    chat_id = uuid.uuid4().hex
    async with serve(model_settings(suggest_model="off")) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            await client.send({"type": "prompt", "text": PROMPT})
            events = await client.until("end_of_stream")
            # Nothing follows the end: suggestions would be sent by the turn's task before
            # it ends, and the socket's frames keep their order, so once that task is over a
            # ping's pong is the very next frame.
            assert await live.services.turns.wait_idle(60), "the turn's task never ended"
            await client.send({"type": "ping"})
            assert [e["type"] for e in await client.until("pong")] == ["pong"]
        async with live.client() as http:
            title = await wait_for_title(http, chat_id)
    assert events[-1]["status"] == "completed"
    assert not [r for r in fake_model.requests if r.structured_name]
    assert title == offline_title(PROMPT)


@pytest.mark.parametrize("provider", ["responses"])
async def test_connector_agents_and_suggestions_can_use_other_models(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_gmail", {}),  # orchestrator: the large model
        Call("google_email_inbox", {}, call_id="c1"),  # GMail: the connector model
        Say("You have 3 unread emails."),
    )
    fake_model.structured["FollowUps"] = {"prompts": ["Show only unread"]}
    fake_model.structured["ChatTitle"] = {"title": "Inbox"}
    base = fake_model.base_url()
    settings = model_settings(
        connector_model=f"chat:fake-small@{base}", suggest_model=f"responses:fake-tiny@{base}"
    )
    async with serve(settings) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn(PROMPT)
    assert events[-1]["prompts"] == ["Show only unread"]
    sent = [
        (r.path.rsplit("/", 1)[-1], r.body["model"], r.structured_name) for r in fake_model.requests
    ]
    assert sent[:3] == [
        ("responses", "fake-large", None),
        ("completions", "fake-small", None),
        ("completions", "fake-small", None),
    ]
    assert sorted(sent[3:]) == [
        ("responses", "fake-tiny", "ChatTitle"),
        ("responses", "fake-tiny", "FollowUps"),
    ]
    assert all(r.headers["authorization"] == f"Bearer {API_KEY}" for r in fake_model.requests)


@pytest.mark.parametrize("provider", ["chat"])
async def test_the_offline_model_can_suggest_for_a_real_one(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(Say("Here you go."))
    chat_id = uuid.uuid4().hex
    async with serve(model_settings(suggest_model="offline")) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            events = await client.turn("hello")
        async with live.client() as http:
            title = await wait_for_title(http, chat_id)
    assert events[-1]["type"] == "suggested_prompts" and 0 < len(events[-1]["prompts"]) <= 4
    assert title == offline_title("hello")
    assert len(fake_model.requests) == 1


async def test_only_the_first_turn_titles_the_chat(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(Say("Hi!"), Say("Still here."))
    fake_model.structured["FollowUps"] = {"prompts": []}
    fake_model.structured["ChatTitle"] = {"title": "First words"}
    chat_id = uuid.uuid4().hex
    async with serve(model_settings()) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            await client.turn("hello")
            async with live.client() as http:
                assert await wait_for_title(http, chat_id) == "First words"
            fake_model.structured["ChatTitle"] = {"title": "Second words"}
            await client.turn("are you there?")
        # The second turn's task, where a title would be asked for, is over; leaving serve()
        # below lets the model work it started (a title call) finish before the count.
        assert await live.services.turns.wait_idle(60), "the turn's task never ended"
        async with live.client() as http:
            assert await wait_for_title(http, chat_id) == "First words"
    assert [r.structured_name for r in fake_model.requests].count("ChatTitle") == 1
