"""Real turns on a real socket, with the model behind a fake server speaking each wire format.

Everything but the model server is real: uvicorn, the socket layer, the Agents SDK runner
with its own ``OpenAIResponsesModel`` / ``OpenAIChatCompletionsModel``, the demo connectors,
SQLite and PostgreSQL.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx

from app.settings import Settings
from tests.fakes.model_server import Call, FakeModelServer, Recorded, Say, reply
from tests.support.clients import open_client
from tests.support.models import API_KEY
from tests.support.servers import serve
from tests.support.waiting import wait_until
from tests.ws.test_turns import assert_turn_order

PROMPT = "find sushi in Boston and email the list to bob@example.com"
ANSWER = "I found 5 sushi places in Boston and emailed the list to bob@example.com."
EMAIL = {
    "to": ["bob@example.com"],
    "subject": "Sushi in Boston",
    "body": "Here are the sushi places I found in Boston.",
}


def script_multi_agent_turn(fake: FakeModelServer) -> None:
    fake.script(
        Call("transfer_to_yelp", {}),
        Call(
            "search_businesses_at_yelp",
            {"term": "sushi", "location": "Boston, MA"},
            call_id="call_yelp_1",
        ),
        Call("transfer_to_gmail", {}),
        Call("send_google_email", EMAIL, call_id="call_mail_1"),
        # Paced like a real model: deltas that arrive together may share a frame.
        reply(Say(ANSWER, chunk=7), input_tokens=300, output_tokens=40, delay=0.005),
    )
    fake.structured["FollowUps"] = {
        "prompts": [
            "Show reviews for the top pick",
            "1. Find cheaper sushi",
            "",
            "Show reviews for the top pick",
        ]
    }
    fake.structured["ChatTitle"] = {"title": '"Sushi for Bob."'}


def instructions_of(request: Recorded) -> str:
    if request.path.endswith("/responses"):
        return str(request.body.get("instructions"))
    first = request.body["messages"][0]
    assert first["role"] in ("system", "developer")
    return str(first["content"])


def tool_names(request: Recorded) -> set[str]:
    names = set()
    for tool in request.body.get("tools", []):
        names.add(tool.get("name") or tool.get("function", {}).get("name"))
    return names


async def wait_for_title(http: httpx.AsyncClient, chat_id: str) -> str:
    """The chat's title, once it has one: titles are made off the turn, after its end."""

    async def title() -> str | None:
        chats = (await http.get("/api/chats")).json()["chats"]
        return next((chat["title"] for chat in chats if chat["id"] == chat_id), None)

    return str(await wait_until(title, what=f"a title for chat {chat_id}"))


async def test_a_multi_agent_turn_streams_like_the_offline_model(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    script_multi_agent_turn(fake_model)
    chat_id = uuid.uuid4().hex
    async with serve(model_settings()) as live:
        async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
            events = await client.turn(PROMPT, client_message_id="m1")
        async with live.client() as http:
            detail = (await http.get(f"/api/chats/{chat_id}")).json()
            title = await wait_for_title(http, chat_id)

    assert_turn_order(events)
    kinds = [e["type"] for e in events if e["type"] != "llm_response_delta"]
    # The send waits for the person's approval (PROTOCOL §3a), then the turn goes on.
    assert kinds == [
        "user_prompt",
        "handoff",
        "agent_updated",
        "tool_call",
        "tool_output",
        "handoff",
        "agent_updated",
        "tool_call",
        "approval_required",
        "approval_resolved",
        "tool_output",
        "llm_response",
        "end_of_stream",
        "suggested_prompts",
    ]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_type.setdefault(event["type"], []).append(event)
    assert [(h["from_agent"], h["to_agent"]) for h in by_type["handoff"]] == [
        ("Switchboard", "Yelp"),
        ("Yelp", "GMail"),
    ]
    search, send = by_type["tool_call"]
    assert search["name"] == "search_businesses_at_yelp" and search["call_id"] == "call_yelp_1"
    assert search["arguments"] == {"term": "sushi", "location": "Boston, MA"}
    assert search["current_agent"] == "Yelp"
    assert send["arguments"] == EMAIL and send["current_agent"] == "GMail"
    outputs = by_type["tool_output"]
    assert outputs[0]["output"]["response_type"] == "yelp_search_results"
    assert outputs[0]["output"]["response"], "the demo Yelp backend found nothing"
    assert outputs[1]["output"]["response_type"] == "send_google_email"
    deltas = by_type["llm_response_delta"]
    # How many frames depends on timing: under load the writer joins a batch's deltas
    # into one frame (docs/protocol.md §3 promises only that they join to the text).
    assert deltas, "the answer was not streamed"
    assert "".join(d["delta"] for d in deltas) == ANSWER
    assert by_type["llm_response"][0] == {
        **by_type["llm_response"][0],
        "text": ANSWER,
        "current_agent": "GMail",
    }
    usage = {
        "input_tokens": 4 * 100 + 300,
        "output_tokens": 4 * 10 + 40,
        "total_tokens": 4 * 110 + 340,
        "requests": 5,
    }
    end = by_type["end_of_stream"][0]
    assert end["status"] == "completed" and end["usage"] == usage
    # The fake's suggestions, cleaned: numbering dropped, empties and duplicates removed.
    assert by_type["suggested_prompts"][0]["prompts"] == [
        "Show reviews for the top pick",
        "Find cheaper sushi",
    ]
    assert title == "Sushi for Bob"

    # Usage is stored with the turn and summed for the chat.
    assert detail["turns"][0]["usage"] == usage and detail["turns"][0]["status"] == "completed"
    assert detail["usage"] == usage

    # What went over the wire: the key, the model, each agent's tools and instructions.
    sent = fake_model.turn_requests()
    assert len(sent) == 5 and fake_model.pending == 0
    for request in sent:
        assert request.headers["authorization"] == f"Bearer {API_KEY}"
        assert request.body["model"] == "fake-large" and request.body["stream"] is True
        # The SDK's GPT-5 defaults are not sent to whatever model this is.
        assert not {"reasoning", "reasoning_effort", "verbosity"} & set(request.body)
        assert "verbosity" not in str(request.body.get("text", ""))
    assert {"transfer_to_yelp", "transfer_to_gmail", "transfer_to_search"} <= tool_names(sent[0])
    assert "search_businesses_at_yelp" in tool_names(sent[1])
    assert "send_google_email" in tool_names(sent[3])
    orchestrator, yelp = instructions_of(sent[0]), instructions_of(sent[1])
    assert "You are Switchboard" in orchestrator and "Today is" in orchestrator
    assert "You are Yelp" in yelp and "[1]" in yelp and "Connect" in yelp
    # The search results reached the model as a tool result, then the email went out.
    assert "call_yelp_1" in sent[2].text and "Boston" in sent[2].text
    assert "call_mail_1" in sent[4].text
    structured = [r for r in fake_model.requests if r.structured_name]
    assert sorted(r.structured_name for r in structured) == ["ChatTitle", "FollowUps"]
    assert all(r.body.get("stream") in (None, False) for r in structured)
    assert PROMPT in next(r.text for r in structured if r.structured_name == "ChatTitle")


async def test_the_next_turn_sends_the_whole_conversation(
    model_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_search", {}),
        Call("search_google", {"query": "python asyncio"}, call_id="call_search_1"),
        Say("asyncio runs coroutines on an event loop [1]."),
        Say("Yes: asyncio.TaskGroup waits for all of its tasks [2]."),
    )
    fake_model.structured["FollowUps"] = {"prompts": []}
    fake_model.structured["ChatTitle"] = {"title": "Python asyncio"}
    async with serve(model_settings()) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex), auto_approve=True) as client:
            first = await client.turn("search the web for python asyncio")
            second = await client.turn("does it have task groups?")
    assert first[-2]["status"] == "completed" and second[-2]["status"] == "completed"
    assert first[-1] == {**first[-1], "type": "suggested_prompts", "prompts": []}
    # The second turn starts at the agent that answered the first one (the SDK's
    # last_agent is not kept between turns: it starts at the orchestrator again) and
    # carries everything said and done before, as full input, not previous_response_id.
    later = fake_model.turn_requests()[3]
    for earlier in (
        "search the web for python asyncio",
        "call_search_1",
        "asyncio runs coroutines on an event loop [1].",
        "does it have task groups?",
    ):
        assert earlier in later.text, f"{earlier!r} missing from the next turn's request"
    assert "previous_response_id" not in later.body
    assert second[-3]["text"] == "Yes: asyncio.TaskGroup waits for all of its tasks [2]."
