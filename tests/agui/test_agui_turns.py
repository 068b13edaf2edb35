"""AG-UI runs through a real uvicorn server: a turn with a tool card, a hidden result, a
second turn in the same thread, and the chat each leaves in the history."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fakes.model_server import FakeModelServer, Say
from tests.support.agui import chat_detail, chat_ids, new_thread, post, prompt_input
from tests.support.servers import LiveServer


async def test_a_turn_streams_its_tool_card_and_answer(offline: LiveServer) -> None:
    thread = new_thread()
    body = prompt_input(thread, "find sushi in Boston")
    run = await post(offline, body)
    assert run.status == 200
    assert run.headers["content-type"].startswith("text/event-stream")
    assert run.events[0] == {
        "type": "RUN_STARTED",
        "threadId": thread,
        "runId": body["runId"],
        "protocolVersion": "1.0",
    }
    [start] = run.of("TOOL_CALL_START")
    assert start["toolCallName"] == "search_businesses_at_yelp"
    assert start["metadata"]["switchboard"] == {"description": "Searching Yelp", "agent": "Yelp"}
    call_id = start["toolCallId"]
    [args] = run.of("TOOL_CALL_ARGS")
    assert json.loads(args["delta"])["term"] == "sushi"
    [result] = run.of("TOOL_CALL_RESULT")
    assert result["toolCallId"] == call_id and result["role"] == "tool"
    card = json.loads(result["content"])
    assert card["response_type"] == "yelp_search_results"
    assert card["display_response"] is True and card["response"][0]["name"]
    assert "debug_info" not in card
    assert run.types.index("TOOL_CALL_END") < run.types.index("TOOL_CALL_RESULT")
    [text_start] = run.of("TEXT_MESSAGE_START")
    assert text_start["role"] == "assistant" and text_start["name"] == "Yelp"
    assert run.last["type"] == "RUN_FINISHED"
    assert run.last["outcome"] == {"type": "success"}
    [usage] = run.last["usage"]
    assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"] > 0

    # Persisted like any chat: the same card, the same text, the message id kept.
    chat = await chat_detail(offline, thread)
    [turn] = chat["turns"]
    assert turn["status"] == "completed" and turn["prompt"] == "find sushi in Boston"
    assert turn["client_message_id"] == body["messages"][-1]["id"]
    assert turn["final_text"] == run.text_of()
    assert turn["usage"]["total_tokens"] == usage["totalTokens"]
    kinds = [event["type"] for event in chat["events"]]
    assert kinds[0] == "user_prompt" and "end_of_stream" in kinds
    [output] = [event for event in chat["events"] if event["type"] == "tool_output"]
    assert output["call_id"] == call_id and output["output"] == card
    assert await chat_ids(offline) == [thread]


async def test_a_hidden_result_never_reaches_the_client(offline: LiveServer) -> None:
    thread = new_thread()
    run = await post(offline, prompt_input(thread, "find coffee near me"))
    calls = {e["toolCallName"]: e["toolCallId"] for e in run.of("TOOL_CALL_START")}
    assert set(calls) == {"resolve_user_location", "search_businesses_at_yelp"}
    results = {e["toolCallId"]: e for e in run.of("TOOL_CALL_RESULT")}
    # The hidden lookup is answered, so no client takes it for a call of its own to
    # answer, but with nothing in it.
    hidden = results[calls["resolve_user_location"]]
    assert hidden["content"] == "" and hidden["metadata"] == {"switchboard": {"hidden": True}}
    assert "saved location" not in run.text  # the hidden result's own words
    shown = json.loads(results[calls["search_businesses_at_yelp"]]["content"])
    assert shown["response_type"] == "yelp_search_results"
    assert run.last["type"] == "RUN_FINISHED"
    # As on the socket: the hidden result is not persisted either.
    chat = await chat_detail(offline, thread)
    outputs = [e["call_id"] for e in chat["events"] if e["type"] == "tool_output"]
    assert outputs == [calls["search_businesses_at_yelp"]]
    assert "saved location" not in json.dumps(chat["events"])


async def test_a_thread_goes_on_with_the_servers_history(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(Say("Umi Sushi Bar is the top pick."), Say("It has 3 reviews."))
    thread = new_thread()
    async with scripted() as live:
        first = await post(live, prompt_input(thread, "find sushi in Boston"))
        assert first.text_of() == "Umi Sushi Bar is the top pick."
        # The client sends its own copy of the thread along; the server's history is the
        # one the model reads, and only the new message is a prompt.
        second_input = prompt_input(thread, "show reviews for the top pick")
        second_input["messages"] = [
            {"id": "u0", "role": "user", "content": "find sushi in Boston"},
            {"id": "a0", "role": "assistant", "content": "CLIENT-COPY"},
            *second_input["messages"],
        ]
        second = await post(live, second_input)
        assert second.text_of() == "It has 3 reviews."
        chat = await chat_detail(live, thread)
    sent = fake_model.turn_requests()[1].text
    assert "Umi Sushi Bar is the top pick." in sent and "CLIENT-COPY" not in sent
    assert "show reviews for the top pick" in sent
    assert [(t["prompt"], t["status"]) for t in chat["turns"]] == [
        ("find sushi in Boston", "completed"),
        ("show reviews for the top pick", "completed"),
    ]


async def test_a_message_runs_once(offline: LiveServer) -> None:
    thread = new_thread()
    body = prompt_input(thread, "find sushi in Boston")
    assert (await post(offline, body)).last["type"] == "RUN_FINISHED"
    again = await post(offline, {**body, "runId": "retry"})
    assert again.status == 409
    error = again.error()
    assert body["messages"][-1]["id"] in error["message"]
    assert f"/api/chats/{thread}/events" in error["message"]
    reused = prompt_input(thread, "something else")
    reused["messages"][-1]["id"] = body["messages"][-1]["id"]
    other_text = await post(offline, reused)
    assert other_text.status == 400 and "its own id" in other_text.error()["message"]
    assert len((await chat_detail(offline, thread))["turns"]) == 1


async def test_text_parts_are_one_prompt(offline: LiveServer) -> None:
    thread = new_thread()
    body = prompt_input(thread, "")
    body["messages"][-1]["content"] = [
        {"type": "text", "text": "find sushi"},
        {"type": "text", "text": "in Boston"},
    ]
    run = await post(offline, body)
    assert run.last["type"] == "RUN_FINISHED"
    [turn] = (await chat_detail(offline, thread))["turns"]
    assert turn["prompt"] == "find sushi\nin Boston"
