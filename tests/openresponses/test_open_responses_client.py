"""``/v1/responses`` with the official ``openai`` client: text, streaming, instructions,
Switchboard's tool calls as ``switchboard:tool_call`` items, multi-turn with
``previous_response_id``, tool_choice.

Every streamed event is validated against the spec (``tests/openresponses/spec.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from connectors.adapters import to_function_call_output
from storage.session import ChatSession
from tests.fakes.model_server import Call, FakeModelServer, Say
from tests.openresponses.spec import check_resource, check_stream, parse_sse
from tests.support.clients import client_for
from tests.support.servers import LiveServer

MULTI = "find sushi in Boston and email the list to bob@example.com"


async def only_chat(live: LiveServer) -> dict[str, Any]:
    async with live.client() as http:
        [chat] = (await http.get("/api/chats")).json()["chats"]
        detail = (await http.get(f"/api/chats/{chat['id']}")).json()
        events = (await http.get(f"/api/chats/{chat['id']}/events")).json()["events"]
    return {**detail, "events": events}


async def stream_raw(live: LiveServer, body: dict[str, Any]) -> str:
    async with (
        httpx.AsyncClient(base_url=live.http, timeout=30) as http,
        http.stream("POST", "/v1/responses", json={**body, "stream": True}) as answer,
    ):
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        return "".join([chunk async for chunk in answer.aiter_text()])


def model_input(request: Any) -> str:
    return json.dumps(request.body["input"])


def tool_names(request: Any) -> set[str]:
    return {tool["name"] for tool in request.body.get("tools") or []}


# ----------------------------------------------------------------------------- basics


async def test_a_text_response_is_a_turn_of_a_new_chat(offline: LiveServer) -> None:
    raw = await client_for(offline).responses.with_raw_response.create(
        model="switchboard", input="hello"
    )
    body = raw.http_response.json()
    response = check_resource(body)
    assert response.status == "completed" and body["completed_at"] >= body["created_at"]
    assert response.model == "switchboard"
    [message] = response.output
    assert message.type == "message" and message.role == "assistant"
    assert response.output_text.startswith("Hi! I'm Switchboard")
    usage = response.usage
    assert usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens

    chat = await only_chat(offline)
    [turn] = chat["turns"]
    assert turn["prompt"] == "hello" and turn["status"] == "completed"
    assert turn["final_text"] == response.output_text
    assert [e["type"] for e in chat["events"]] == ["user_prompt", "llm_response", "end_of_stream"]
    assert (
        await client_for(offline).responses.retrieve(response.id)
    ).output_text == response.output_text


# The openai client builds an unknown item (switchboard:approval_request) as the closest
# type it knows, keeping every field; its stream helper's snapshot then warns about it.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
async def test_streamed_events_follow_the_spec_and_match_the_client_helper(
    offline: LiveServer,
) -> None:
    # The multi-agent prompt: Yelp, then an email, which waits for approval (§3a).
    stream = parse_sse(await stream_raw(offline, {"model": "switchboard", "input": MULTI}))
    check_stream(stream)
    final = stream.final
    assert final["status"] == "completed"
    assert [(item["type"], item.get("name")) for item in final["output"]] == [
        ("switchboard:tool_call", "search_businesses_at_yelp"),
        ("switchboard:approval_request", "send_google_email"),
        ("message", None),
    ]
    approve = [
        {
            "type": "switchboard:approval_response",
            "approve": True,
            "approval_id": final["output"][-2]["approval_id"],
        }
    ]
    resumed = parse_sse(
        await stream_raw(
            offline, {"model": "switchboard", "previous_response_id": final["id"], "input": approve}
        )
    )
    check_stream(resumed)
    assert [(item["type"], item.get("name")) for item in resumed.final["output"]] == [
        ("switchboard:tool_call", "send_google_email"),
        ("message", None),
    ]
    assert "response.output_text.delta" in resumed.types

    # The openai client's own stream accumulator agrees with what was sent, both times.
    client = client_for(offline)
    async with client.responses.stream(model="switchboard", input=MULTI) as helper:
        seen = [event.type async for event in helper]
        paused = await helper.get_final_response()
    assert seen == stream.types
    assert [item.type for item in paused.output] == [item["type"] for item in final["output"]]
    asked = paused.output[-2].model_extra or {}
    assert paused.output_text.startswith("This needs your approval before it runs")
    assert asked["approval_id"] in paused.output_text
    async with client.responses.stream(
        model="switchboard",
        previous_response_id=paused.id,
        input=[{**approve[0], "approval_id": asked["approval_id"]}],  # type: ignore[list-item]
    ) as helper:
        seen = [event.type async for event in helper]
        rebuilt = await helper.get_final_response()
    assert seen == resumed.types
    assert rebuilt.output_text == resumed.final["output"][-1]["content"][0]["text"]
    assert [item.type for item in rebuilt.output] == [
        item["type"] for item in resumed.final["output"]
    ]


async def test_switchboards_tool_calls_are_vendor_items_with_what_the_model_read(
    offline: LiveServer,
) -> None:
    raw = await client_for(offline).responses.with_raw_response.create(
        model="switchboard", input="search the web for asyncio"
    )
    body = raw.http_response.json()
    check_resource(body)
    call, answer = body["output"]
    # It ran here: a vendor item, never a function_call (which would ask the client to
    # run it), and the response lists no function tool of Switchboard's.
    assert call["type"] == "switchboard:tool_call" and call["name"] == "search_google"
    assert call["status"] == "completed" and json.loads(call["arguments"])
    assert answer["type"] == "message" and body["tools"] == []

    events = (await only_chat(offline))["events"]
    [tool_call] = [e for e in events if e["type"] == "tool_call"]
    [tool_output] = [e for e in events if e["type"] == "tool_output"]
    assert json.loads(call["arguments"]) == tool_call["arguments"]
    assert call["call_id"] == tool_call["call_id"]
    # The adapter of issue 2 gives exactly the function_call_output the model read,
    # with the content_chunks as numbered citations and no debug_info.
    assert (
        call["output"] == to_function_call_output(call["call_id"], tool_output["output"])["output"]
    )
    assert "(cite as [n])" in call["output"] and "[1] " in call["output"]


# ----------------------------------------------------------------------------- the model's view


async def test_instructions_reach_every_agent_for_this_response_only(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_yelp", {}),
        Call("search_businesses_at_yelp", {"term": "sushi", "location": "Boston, MA"}),
        Say("Voici trois restaurants de sushis."),
        Say("De rien."),
    )
    async with scripted() as live:
        client = client_for(live)
        first = await client.responses.create(
            model="switchboard",
            instructions="Always answer in French.",
            input=[
                {"role": "system", "content": "The user is vegetarian."},
                {"role": "user", "content": "find sushi in Boston"},
            ],
        )
        second = await client.responses.create(
            model="switchboard", input="thanks", previous_response_id=first.id
        )
    requests = fake_model.turn_requests()
    assert len(requests) == 4
    for request in requests[:3]:  # the orchestrator, then Yelp twice: every agent
        assert "Always answer in French." in request.body["instructions"]
    assert "The user is vegetarian." in model_input(requests[0])
    assert first.instructions == "Always answer in French."
    assert first.output_text == "Voici trois restaurants de sushis."
    # Not carried over by previous_response_id (as in the spec); the conversation is.
    assert "Always answer in French." not in requests[3].body["instructions"]
    assert second.instructions is None and second.previous_response_id == first.id
    assert "Voici trois restaurants de sushis." in model_input(requests[3])


async def test_previous_response_id_continues_and_branches_a_conversation(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Say("Nice to meet you, Ada."), Say("Your name is Ada."), Say("Hi!"), Say("Still Ada.")
    )
    async with scripted() as live:
        client = client_for(live)
        first = await client.responses.create(model="switchboard", input="My name is Ada.")
        second = await client.responses.create(
            model="switchboard", input="What is my name?", previous_response_id=first.id
        )
        branch = await client.responses.create(
            model="switchboard", input="Say hi.", previous_response_id=first.id
        )
        third = await client.responses.create(
            model="switchboard", input="And now?", previous_response_id=second.id
        )
        async with live.client() as http:
            chats = (await http.get("/api/chats")).json()["chats"]
            turns = {
                chat["id"]: [
                    t["prompt"]
                    for t in (await http.get(f"/api/chats/{chat['id']}")).json()["turns"]
                ]
                for chat in chats
            }

    r_second, r_branch, r_third = (model_input(r) for r in fake_model.turn_requests()[1:])
    assert "My name is Ada." in r_second and "Nice to meet you, Ada." in r_second
    # The branch sees the first exchange, not the second one.
    assert "Nice to meet you, Ada." in r_branch and "What is my name?" not in r_branch
    assert "What is my name?" in r_third and "Your name is Ada." in r_third
    assert "Say hi." not in r_third
    assert third.output_text == "Still Ada." and branch.output_text == "Hi!"
    assert sorted(turns.values()) == [
        ["My name is Ada.", "What is my name?", "And now?"],
        ["Say hi."],
    ]


async def test_a_stateless_client_round_trips_the_output_as_input(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_yelp", {}),
        Call(
            "search_businesses_at_yelp",
            {"term": "ramen", "location": "Boston, MA"},
            call_id="call_ramen",
        ),
        Say("Two ramen places."),
        Say("The first one."),
    )
    async with scripted() as live:
        client = client_for(live)
        first = await client.responses.with_raw_response.create(
            model="switchboard", input="ramen in Boston?"
        )
        output = first.http_response.json()["output"]
        replay = [
            {"role": "user", "content": "ramen in Boston?"},
            *output,  # the switchboard:tool_call item, then the answer, as they came
            {"role": "user", "content": "which is best?"},
        ]
        second = await client.responses.create(model="switchboard", input=replay)
    assert [item["type"] for item in output] == ["switchboard:tool_call", "message"]
    sent = fake_model.turn_requests()[-1].body["input"]
    calls = [item for item in sent if item.get("type") == "function_call"]
    outputs = [item for item in sent if item.get("type") == "function_call_output"]
    assert [c["call_id"] for c in calls] == [o["call_id"] for o in outputs] == ["call_ramen"]
    assert calls[0]["name"] == "search_businesses_at_yelp"
    assert outputs[0]["output"] == output[0]["output"]
    assert second.output_text == "The first one." and second.previous_response_id is None


async def test_tool_choice_steers_the_agents(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    async with scripted() as live:
        client = client_for(live)
        fake_model.script(Say("No tools today."))
        none = await client.responses.create(
            model="switchboard", input="find sushi", tool_choice="none"
        )
        fake_model.script(Say("fine"))
        await client.responses.create(model="switchboard", input="x", tool_choice="required")
        fake_model.script(
            Call("transfer_to_yelp", {}),
            Call("search_businesses_at_yelp", {"term": "tacos", "location": "Austin, TX"}),
            Say("Tacos found."),
        )
        forced = await client.responses.create(
            model="switchboard",
            input="tacos?",
            tool_choice={"type": "switchboard:tool", "name": "search_businesses_at_yelp"},  # type: ignore[arg-type, misc]
        )
        fake_model.script(Say("ok"))
        allowed = await client.responses.create(
            model="switchboard",
            input="x",
            tool_choice={
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [{"type": "switchboard:tool", "name": "send_google_email"}],  # type: ignore[list-item]
            },
        )
        fake_model.script(Say("ok"))
        listed = await client.responses.create(
            model="switchboard",
            input="x",
            tools=[{"type": "switchboard:tool", "name": "search_google"}],  # type: ignore[list-item]
        )
    r_none, r_required, r_forced_1, r_forced_2, r_forced_3, r_allowed, r_listed = (
        fake_model.turn_requests()
    )
    assert tool_names(r_none) == set() and [i.type for i in none.output] == ["message"]
    assert r_required.body["tool_choice"] == "required"
    assert r_forced_1.body["tool_choice"] == {"type": "function", "name": "transfer_to_yelp"}
    assert tool_names(r_forced_1) == {"transfer_to_yelp"}
    assert r_forced_2.body["tool_choice"] == {
        "type": "function",
        "name": "search_businesses_at_yelp",
    }
    assert tool_names(r_forced_2) == {"search_businesses_at_yelp"}
    assert r_forced_3.body.get("tool_choice") in (None, "auto")  # used once, then free
    assert [i.type for i in forced.output] == ["switchboard:tool_call", "message"]
    assert tool_names(r_allowed) == {"transfer_to_gmail"}
    assert allowed.tools == []  # Switchboard's own tools are no function tools
    assert tool_names(r_listed) == {"transfer_to_search"}
    assert listed.tools == []


async def test_a_response_is_a_chat_turn_that_sockets_watch_and_can_stop(
    make_settings: Callable[..., Any],
) -> None:
    from tests.support.clients import open_client
    from tests.support.servers import serve

    prompt = "find sushi in Boston"  # a tool, then a slowly streamed answer to stop
    async with serve(make_settings(suggest_model="offline", offline_delta_delay=0.05)) as live:
        async with (
            httpx.AsyncClient(base_url=live.http, timeout=30) as http,
            http.stream(
                "POST",
                "/v1/responses",
                json={"model": "switchboard", "input": prompt, "stream": True},
            ) as answer,
        ):
            text = ""
            chunks = answer.aiter_text()
            while "response.output_text.delta" not in text:
                text += await anext(chunks)
            [chat] = (await http.get("/api/chats")).json()["chats"]
            async with open_client(live.ws_url(chat["id"], after_seq=0)) as watcher:
                seen = await watcher.until("tool_output")
                await watcher.send({"type": "cancel"})
                end = await watcher.until("end_of_stream")
            text += "".join([chunk async for chunk in chunks])
    stream = parse_sse(text)
    check_stream(stream)
    assert seen[0]["type"] == "user_prompt" and seen[0]["text"] == prompt
    assert end[-1]["status"] == "cancelled"
    final = stream.final
    assert stream.types[-1] == "response.failed"
    assert "stopped" in final["error"]["message"]
    assert (
        final["output"][-1]["type"] == "message" and final["output"][-1]["status"] == "incomplete"
    )


# ----------------------------------------------------------------------------- a conversation

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    },
}


# The stream helper warns about the unknown items it keeps (see above).
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
async def test_the_openai_client_holds_a_conversation_with_every_kind_of_tool(
    offline: LiveServer,
) -> None:
    from tests.openresponses.test_open_responses_approvals import sent_mail

    client = client_for(offline)

    # 1. Streamed: Switchboard searches Yelp, and the client's own tool is called; the
    # client runs it (its standard tool loop) and sends the result back.
    async with client.responses.stream(
        model="switchboard",
        input="find sushi in Boston and get the weather in Boston",
        tools=[WEATHER],
    ) as stream:
        asking = await stream.get_final_response()
    assert [(i.type, getattr(i, "name", None)) for i in asking.output] == [
        ("switchboard:tool_call", "search_businesses_at_yelp"),
        ("function_call", "get_weather"),
    ]
    call = asking.output[-1]
    assert call.type == "function_call" and json.loads(call.arguments) == {"location": "Boston"}
    answered = await client.responses.create(
        model="switchboard",
        previous_response_id=asking.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "55 and rainy"}],
        tools=[WEATHER],
    )
    assert [i.type for i in answered.output] == ["message"]
    assert "sushi" in answered.output_text and "55 and rainy" in answered.output_text

    # 2. An email needs approval; rejected, nothing is sent and the answer says why.
    def approval_of(response: Any) -> dict[str, Any]:
        [asked] = [i.model_extra or {} for i in response.output if i.type.endswith("request")]
        return asked

    emailing = await client.responses.create(
        model="switchboard",
        previous_response_id=answered.id,
        input="email that list to bob@example.com",
    )
    asked = approval_of(emailing)
    assert asked["name"] == "send_google_email"
    declined = await client.responses.create(
        model="switchboard",
        previous_response_id=emailing.id,
        input=[
            {
                "type": "switchboard:approval_response",  # type: ignore[list-item, misc]
                "approval_id": asked["approval_id"],
                "approve": False,
                "reason": "not Bob, Alice",
            }
        ],
    )
    assert [i.type for i in declined.output] == ["message"]
    assert "not Bob, Alice" in declined.output_text and sent_mail(offline) == []

    # 3. Asked again and approved, streamed: the email is sent once, and the answer follows.
    again = await client.responses.create(
        model="switchboard",
        previous_response_id=declined.id,
        input="email that list to bob@example.com",
    )
    asked = approval_of(again)
    async with client.responses.stream(
        model="switchboard",
        previous_response_id=again.id,
        input=[
            {
                "type": "switchboard:approval_response",  # type: ignore[list-item, misc]
                "approval_id": asked["approval_id"],
                "approve": True,
            }
        ],
    ) as stream:
        deltas = [
            event.delta async for event in stream if event.type == "response.output_text.delta"
        ]
        sent = await stream.get_final_response()
    assert [i.type for i in sent.output] == ["switchboard:tool_call", "message"]
    assert (sent.output[0].model_extra or {})["name"] == "send_google_email"
    assert "".join(deltas) == sent.output_text and "bob@example.com" in sent.output_text
    [mail] = sent_mail(offline)
    assert mail["to"] == "bob@example.com"

    # One conversation on the server: every turn in one chat, in order (the tool's result
    # goes on as a turn of its own).
    chat = await only_chat(offline)
    assert [(t["prompt"], t["status"]) for t in chat["turns"]] == [
        ("find sushi in Boston and get the weather in Boston", "completed"),
        ("(results of get_weather)", "completed"),
        ("email that list to bob@example.com", "completed"),
        ("email that list to bob@example.com", "completed"),
    ]
    assert [a["status"] for a in chat["approvals"]] == ["rejected", "approved"]


# The openai documentation's tool loop: the client keeps the conversation itself, adding
# each response's output objects (as the client parsed them) and its tools' results to the
# input list, without previous_response_id. Switchboard's calls go back as the client
# rebuilt them, in either view of them (docs/open-responses.md, "Switchboard's calls as
# mcp_call items"), and the model reads them again.
@pytest.mark.parametrize(
    ("headers", "kind"),
    [({}, "switchboard:tool_call"), ({"Switchboard-Tool-Items": "mcp"}, "mcp_call")],
    ids=["default", "mcp"],
)
async def test_the_openai_clients_own_history_loop_runs_every_kind_of_tool(
    offline: LiveServer, headers: dict[str, str], kind: str
) -> None:
    from tests.openresponses.test_open_responses_approvals import sent_mail

    client = client_for(offline).with_options(default_headers=headers)
    history: list[Any] = [
        {"role": "user", "content": "find sushi in Boston and get the weather in Boston"}
    ]
    first = await client.responses.create(model="switchboard", input=history, tools=[WEATHER])
    assert [i.type for i in first.output] == [kind, "function_call"]
    yelp = first.output[0].to_dict()
    history += first.output
    for item in first.output:
        if item.type == "function_call":  # the client's own tool: it runs it
            assert json.loads(item.arguments) == {"location": "Boston"}
            history.append(
                {"type": "function_call_output", "call_id": item.call_id, "output": "55 and rainy"}
            )
    second = await client.responses.create(model="switchboard", input=history, tools=[WEATHER])
    assert [i.type for i in second.output] == ["message"]
    assert "sushi" in second.output_text and "55 and rainy" in second.output_text
    history += [*second.output, {"role": "user", "content": "what is my checking balance?"}]
    third = await client.responses.create(model="switchboard", input=history, tools=[WEATHER])
    assert [i.type for i in third.output] == [kind, "message"]
    assert "$56,842.74" in third.output_text

    # Each request was a new chat; the last one's model read Yelp's call and result as
    # they were, sent back by the client in its own history.
    async with offline.client() as http:
        chats = (await http.get("/api/chats")).json()["chats"]
    items = [
        [dict(i) for i in await ChatSession(offline.services.db, chat["id"]).get_items()]
        for chat in chats
    ]
    [last] = [
        c for c in items if any(i.get("content") == "what is my checking balance?" for i in c)
    ]
    replayed = [i for i in last if i.get("call_id") == yelp["call_id"]]
    assert [(i["type"], i.get("name"), i.get("output")) for i in replayed] == [
        ("function_call", "search_businesses_at_yelp", None),
        ("function_call_output", None, yelp["output"]),
    ]

    # An approval in the same loop: the request ends the response, and the answer chains
    # on it (previous_response_id), as approvals always do; the email is sent once.
    history += [*third.output, {"role": "user", "content": "email that list to bob@example.com"}]
    asking = await client.responses.create(model="switchboard", input=history, tools=[WEATHER])
    [asked] = [i.to_dict() for i in asking.output if i.type == "switchboard:approval_request"]
    assert asked["name"] == "send_google_email" and sent_mail(offline) == []
    approved = await client.responses.create(
        model="switchboard",
        previous_response_id=asking.id,
        input=[
            {
                "type": "switchboard:approval_response",  # type: ignore[list-item, misc]
                "approval_id": asked["approval_id"],
                "approve": True,
            }
        ],
    )
    assert [i.type for i in approved.output] == [kind, "message"]
    assert approved.output[0].to_dict()["name"] == "send_google_email"
    [mail] = sent_mail(offline)
    assert mail["to"] == "bob@example.com"
