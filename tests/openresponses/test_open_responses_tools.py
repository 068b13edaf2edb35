"""The caller's own function tools beside Switchboard's (the spec's externally and
internally hosted tools), ``tool_choice`` over both, refusals, ``incomplete``, the order of
items, ``store: false`` and compaction, on a live server.

``offline`` runs the offline model, which calls the caller's tools too; ``scripted`` the
fake model server, which shows exactly what the model was offered and read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool

from connectors.caller_tools import PENDING
from storage.session import ChatSession
from tests.fakes.model_server import Call, FakeModelServer, Refuse, Say, reply
from tests.openresponses.spec import check_resource, check_stream, parse_sse
from tests.support.clients import client_for
from tests.support.servers import LiveServer

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    },
}


async def post(live: LiveServer, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=live.http, timeout=30) as http:
        answer = await http.post("/v1/responses", json={"model": "switchboard", **body})
    assert answer.status_code == status, answer.text
    result: dict[str, Any] = answer.json()
    if status == 200:
        check_resource(result)
    return result


async def stream(live: LiveServer, body: dict[str, Any]) -> Any:
    async with (
        httpx.AsyncClient(base_url=live.http, timeout=30) as http,
        http.stream(
            "POST", "/v1/responses", json={"model": "switchboard", "stream": True, **body}
        ) as answer,
    ):
        assert answer.status_code == 200
        events = parse_sse("".join([chunk async for chunk in answer.aiter_text()]))
    check_stream(events)
    return events


def kinds(body: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(item["type"], item.get("name")) for item in body["output"]]


def text_of(body: dict[str, Any]) -> str:
    return " ".join(
        part.get("text", "")
        for item in body["output"]
        if item["type"] == "message"
        for part in item["content"]
    )


def tool_names(request: Any) -> set[str]:
    return {tool["name"] for tool in request.body.get("tools") or []}


async def conversation(live: LiveServer) -> list[dict[str, Any]]:
    async with live.client() as http:
        [chat] = (await http.get("/api/chats")).json()["chats"]
    return [dict(item) for item in await ChatSession(live.services.db, chat["id"]).get_items()]


# ----------------------------------------------------------------------------- the offline model


async def test_the_callers_tool_and_switchboards_in_one_response_then_the_result(
    offline: LiveServer,
) -> None:
    first = await stream(
        offline, {"input": "find sushi in Boston and get the weather in Boston", "tools": [WEATHER]}
    )
    final = first.final
    # Switchboard's search ran here; the caller's call ends the response, for it to run.
    assert kinds(final) == [
        ("switchboard:tool_call", "search_businesses_at_yelp"),
        ("function_call", "get_weather"),
    ]
    call = final["output"][-1]
    assert json.loads(call["arguments"]) == {"location": "Boston"}
    assert final["status"] == "completed" and final["tools"] == [{**WEATHER, "strict": None}]
    # What the chat keeps has the call, and no output for it yet: the caller's is to come.
    items = await conversation(offline)
    assert [i for i in items if i.get("call_id") == call["call_id"]] == [
        {
            "type": "function_call",
            "call_id": call["call_id"],
            "name": "get_weather",
            "arguments": call["arguments"],
            **{
                k: v
                for k, v in items[-1].items()
                if k not in {"type", "call_id", "name", "arguments"}
            },
        }
    ]
    assert all(i.get("output") != PENDING for i in items)

    second = await post(
        offline,
        {
            "previous_response_id": final["id"],
            "input": [
                {
                    "type": "function_call_output",
                    "call_id": call["call_id"],
                    "output": "55 and rainy",
                }
            ],
            "tools": [WEATHER],
        },
    )
    assert kinds(second) == [("message", None)]
    answer = text_of(second)
    assert "sushi" in answer and "55 and rainy" in answer
    outputs = [i for i in await conversation(offline) if i.get("call_id") == call["call_id"]]
    assert [i["type"] for i in outputs] == ["function_call", "function_call_output"]
    assert outputs[1]["output"] == "55 and rainy"


async def test_the_callers_calls_must_be_answered_and_outputs_must_answer_calls(
    offline: LiveServer,
) -> None:
    asked = await post(offline, {"input": "What's the weather in Paris?", "tools": [WEATHER]})
    [call] = asked["output"]
    missing = await post(
        offline, {"previous_response_id": asked["id"], "input": "never mind"}, status=400
    )
    assert missing["error"]["code"] == "missing_function_call_output"
    assert (
        "get_weather" in missing["error"]["message"]
        and call["call_id"] in missing["error"]["message"]
    )
    unknown = await post(
        offline,
        {
            "previous_response_id": asked["id"],
            "input": [{"type": "function_call_output", "call_id": "call_nope", "output": "x"}],
        },
        status=400,
    )
    assert (unknown["error"]["code"], unknown["error"]["param"]) == (
        "unknown_call_id",
        "input[0].call_id",
    )
    twice = await post(
        offline,
        {
            "previous_response_id": asked["id"],
            "input": [
                {"type": "function_call_output", "call_id": call["call_id"], "output": "a"},
                {"type": "function_call_output", "call_id": call["call_id"], "output": "b"},
            ],
        },
        status=400,
    )
    assert "second output" in twice["error"]["message"]
    # Answered, with a new message after it: the turn goes on from both.
    done = await post(
        offline,
        {
            "previous_response_id": asked["id"],
            "input": [
                {"type": "function_call_output", "call_id": call["call_id"], "output": "18 C"},
                {"role": "user", "content": "thanks"},
            ],
        },
    )
    assert done["status"] == "completed"


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("none", [("message", None)]),
        # A tool, any: the hand-off to the catch-all search counts, as for a real model.
        ("required", [("switchboard:tool_call", "search_google"), ("message", None)]),
        ({"type": "function", "name": "get_weather"}, [("function_call", "get_weather")]),
        (
            {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [{"type": "switchboard:tool", "name": "search_google"}],
            },
            [("switchboard:tool_call", "search_google"), ("message", None)],
        ),
    ],
    ids=["none", "required", "forced", "allowed"],
)
async def test_tool_choice_steers_the_offline_model(
    offline: LiveServer, choice: Any, expected: list[tuple[str, str | None]]
) -> None:
    # A request that is neither about the weather nor a search: only tool_choice decides.
    body = await post(
        offline, {"input": "tell me about Lisbon", "tools": [WEATHER], "tool_choice": choice}
    )
    assert kinds(body) == expected
    assert body["tool_choice"] == choice


# ----------------------------------------------------------------------------- the scripted model


async def test_the_model_is_offered_the_callers_tools_and_reads_their_results(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_search", {}),
        # One step: one of Switchboard's tools and the caller's, in parallel.
        reply(
            Call("search_google", {"query": "Lisbon"}, call_id="c_search"),
            Call("get_weather", {"location": "Lisbon"}, call_id="c_weather"),
        ),
        Say("Lisbon: sunny, 21 C, and here is what the web says."),
    )
    async with scripted() as live:
        first = await post(live, {"input": "Lisbon weather and news", "tools": [WEATHER]})
        second = await post(
            live,
            {
                "previous_response_id": first["id"],
                "input": [
                    {
                        "type": "function_call_output",
                        "call_id": "c_weather",
                        "output": "sunny, 21 C",
                    }
                ],
            },
        )
    assert kinds(first) == [
        ("switchboard:tool_call", "search_google"),
        ("function_call", "get_weather"),
    ]
    assert first["output"][1]["call_id"] == "c_weather"
    orchestrator, search, after = fake_model.turn_requests()
    assert "get_weather" in tool_names(orchestrator) and "get_weather" in tool_names(search)
    assert "runs itself: get_weather" in orchestrator.body["instructions"]
    # The model read the caller's result, once, right after its call; never the placeholder.
    sent = after.body["input"]
    answers = [i for i in sent if i.get("call_id") == "c_weather"]
    assert [i["type"] for i in answers] == ["function_call", "function_call_output"]
    assert answers[1]["output"] == "sunny, 21 C" and PENDING not in json.dumps(sent)
    assert second["output"][0]["content"][0]["text"].startswith("Lisbon: sunny")


async def test_allowed_tools_hide_the_callers_tools_not_named(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(Say("ok"), Say("ok"))
    async with scripted() as live:
        await post(
            live,
            {
                "input": "x",
                "tools": [WEATHER, {**WEATHER, "name": "get_time"}],
                "tool_choice": {
                    "type": "allowed_tools",
                    "tools": [{"type": "function", "name": "get_time"}],
                },
            },
        )
        await post(live, {"input": "x", "tools": [WEATHER], "tool_choice": "none"})
    allowed, none = fake_model.turn_requests()
    assert tool_names(allowed) == {"get_time"}  # no connector agent is left either
    assert tool_names(none) == set()


async def test_a_refusal_is_a_refusal_part_and_the_response_completes(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(Refuse("I can't help with that."), Refuse("I can't help with that."))
    async with scripted() as live:
        streamed = await stream(live, {"input": "something I should not do"})
        whole = await post(live, {"input": "something I should not do"})
    for body in (streamed.final, whole):
        assert body["status"] == "completed" and body["error"] is None
        [message] = body["output"]
        assert message["content"] == [{"type": "refusal", "refusal": "I can't help with that."}]
    assert "response.refusal.done" in streamed.types


async def test_a_model_out_of_tokens_ends_the_response_incomplete(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    cut = reply(Say("The answer is long and it was cut"), incomplete="max_output_tokens")
    fake_model.script(cut, cut)
    async with scripted() as live:
        streamed = await stream(live, {"input": "tell me everything", "max_output_tokens": 16})
        whole = await post(live, {"input": "tell me everything", "max_output_tokens": 16})
        async with live.client() as http:
            stored = (await http.get(f"/v1/responses/{whole['id']}")).json()
    assert streamed.types[-1] == "response.incomplete"
    for body in (streamed.final, whole, stored):
        assert body["status"] == "incomplete" and body["error"] is None
        assert body["incomplete_details"] == {"reason": "max_output_tokens"}
        assert body["output"][-1]["type"] == "message"
        assert body["output"][-1]["status"] == "incomplete"  # the last item: the cut answer
        assert body["max_output_tokens"] == 16
    assert text_of(streamed.final) == "The answer is long and it was cut"
    assert [r.body["max_output_tokens"] for r in fake_model.turn_requests()] == [16, 16]


async def test_two_messages_of_one_model_response_stream_one_after_the_other(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(reply(Say("First part."), Say("Second part.")))
    async with scripted() as live:
        events = await stream(live, {"input": "two things"})
    # check_stream (in stream) saw item 1 added only once item 0 was done.
    assert [text_of({"output": [item]}) for item in events.final["output"]] == [
        "First part.",
        "Second part.",
    ]
    added = [i for i, t in enumerate(events.types) if t == "response.output_item.added"]
    done = [i for i, t in enumerate(events.types) if t == "response.output_item.done"]
    assert done[0] < added[1]


# ----------------------------------------------------------------------------- storage, compaction


async def test_store_false_keeps_the_response_out_of_reach(offline: LiveServer) -> None:
    body = await post(offline, {"input": "hello", "store": False})
    assert body["store"] is False
    async with offline.client() as http:
        assert (await http.get(f"/v1/responses/{body['id']}")).status_code == 404
    chained = await post(offline, {"input": "and?", "previous_response_id": body["id"]}, status=404)
    assert chained["error"]["code"] == "previous_response_not_found"


async def test_a_compacted_conversation_starts_a_new_chain(offline: LiveServer) -> None:
    first = await post(offline, {"input": "Remember the code word: basalt. Reply with OK."})
    second = await post(
        offline, {"input": "find sushi in Boston", "previous_response_id": first["id"]}
    )
    async with httpx.AsyncClient(base_url=offline.http, timeout=30) as http:
        compacted = await http.post(
            "/v1/responses/compact",
            json={"model": "switchboard", "previous_response_id": second["id"]},
        )
        tampered = await http.post(
            "/v1/responses",
            json={
                "model": "switchboard",
                "input": [
                    {"type": "compaction", "encrypted_content": "gAAAAAnotreal"},
                    {"role": "user", "content": "hi"},
                ],
            },
        )
    assert compacted.status_code == 200, compacted.text
    window = compacted.json()["output"]
    resumed = await post(
        offline, {"input": [*window, {"role": "user", "content": "What is the code word?"}]}
    )
    assert text_of(resumed) == "The code word is basalt."
    assert resumed["previous_response_id"] is None
    assert tampered.status_code == 400
    assert tampered.json()["error"]["code"] == "invalid_encrypted_content"
    assert tampered.json()["error"]["param"] == "input[0].encrypted_content"


# ----------------------------------------------------------------------------- the Agents SDK


async def run_agent(agent: Agent[Any], streamed: bool, input: Any, **options: Any) -> Any:
    config = RunConfig(tracing_disabled=True)
    if not streamed:
        return await Runner.run(agent, input, run_config=config, **options)
    result = Runner.run_streamed(agent, input, run_config=config, **options)
    async for _ in result.stream_events():
        pass
    return result


@pytest.mark.parametrize("history", ["input_list", "previous_response_id"])
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
async def test_the_agents_sdk_runs_its_own_tool_beside_switchboards(
    offline: LiveServer, streamed: bool, history: str
) -> None:
    ran: list[str] = []

    @function_tool
    def get_weather(location: str) -> str:
        """Get the current weather for a location"""
        ran.append(location)
        return f"18 C and sunny in {location}"

    model = OpenAIResponsesModel("switchboard", client_for(offline))
    agent = Agent(name="Assistant", instructions="Help.", tools=[get_weather], model=model)
    # A Switchboard tool (Yelp) and the agent's own in one prompt. The SDK would raise
    # ModelBehaviorError on any tool call it did not define.
    first = await run_agent(agent, streamed, "find sushi in Boston and get the weather in Boston")
    # Switchboard's search ran on the server; the SDK ran its own tool, once.
    assert ran == ["Boston"]
    assert "sushi" in first.final_output and "18 C and sunny in Boston" in first.final_output

    # The second turn runs another of Switchboard's tools (the bank's), the conversation
    # carried as the SDK's own input list (Switchboard's items sent back as they came) or
    # chained on the server.
    follow_up = "what is my checking balance?"
    if history == "input_list":
        second = await run_agent(
            agent, streamed, [*first.to_input_list(), {"role": "user", "content": follow_up}]
        )
    else:
        second = await run_agent(
            agent, streamed, follow_up, previous_response_id=first.last_response_id
        )
    assert ran == ["Boston"]
    assert "$56,842.74" in second.final_output
    # The second turn's conversation on the server holds the first, Switchboard's search
    # and the agent's own call with their outputs, then the bank's call.
    async with offline.client() as http:
        chats = (await http.get("/api/chats")).json()["chats"]
        latest = [
            chat
            for chat in chats
            if (await http.get(f"/api/chats/{chat['id']}")).json()["turns"][-1]["prompt"]
            == follow_up
        ]
    [chat] = latest
    items = [dict(i) for i in await ChatSession(offline.services.db, chat["id"]).get_items()]
    ran_there = [(i["type"], i.get("name")) for i in items if i.get("type") == "function_call"]
    assert ran_there == [
        ("function_call", "search_businesses_at_yelp"),
        ("function_call", "get_weather"),
        ("function_call", "transfer_to_plaid"),
        ("function_call", "get_accounts_at_plaid"),
    ]
    outputs = {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}
    assert [i for i in items if i.get("name") == "get_weather"][0]["call_id"] in outputs
    assert "18 C and sunny in Boston" in outputs.values()
