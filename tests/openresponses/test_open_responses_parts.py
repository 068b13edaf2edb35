"""The pure parts of ``/v1/responses``: request → turn input, the agent graph a response
runs, and SDK events → spec events (validated like the live stream)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from agents import Agent, FunctionToolResult, ModelBehaviorError, RunContextWrapper
from agents.items import (
    HandoffCallItem,
    HandoffOutputItem,
    MessageOutputItem,
    ToolCallItem,
    ToolCallOutputItem,
)
from agents.models._response_terminal import response_terminal_failure_error
from agents.stream_events import RawResponsesStreamEvent, RunItemStreamEvent
from cryptography.fernet import Fernet
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputRefusal,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

from app.openresponses.agents import caller_tools, response_agent, tool_policy
from app.openresponses.compaction import condense, expander, seal
from app.openresponses.errors import OpenResponsesError
from app.openresponses.files import PENDING as UPLOAD
from app.openresponses.files import PendingUpload
from app.openresponses.request import (
    UNFINISHED,
    Decision,
    approval_decisions,
    check_decisions,
    parse_request,
    turn_input,
)
from app.openresponses.routes import LOST, _stream
from app.openresponses.service import StartedResponse, paused_context
from app.openresponses.stream import DecidedCall, ResponseBuilder, caller_calls
from app.services import build_fernet
from app.settings import load_settings
from connectors.adapters import to_function_call_output
from connectors.caller_tools import (
    PENDING,
    caller_tool,
    drop_pending,
    is_caller_tool,
    stop_at_caller,
    unanswered_calls,
)
from connectors.orchestrator import build_orchestrator
from connectors.registry import load_connectors
from connectors.responses import TextResponse
from storage.approvals import NOT_RUN
from tests.openresponses.spec import Stream, check_stream
from tests.support.files import png
from websocket.sdk_events import incomplete_reason

CAT_PNG = png(2, 2)
CAT = "data:image/png;base64," + base64.b64encode(CAT_PNG).decode()

AGENT = Agent(name="Yelp")
USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "requests": 1}


def request(**fields: Any) -> Any:
    return parse_request({"model": "switchboard", "input": "hi", **fields})


# ----------------------------------------------------------------------------- input


def test_input_items_become_model_items_and_the_last_user_text_the_prompt() -> None:
    given = turn_input(
        request(
            input=[
                {"role": "developer", "content": "Be brief."},
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "What is in"},
                        {"type": "input_image", "image_url": CAT},
                    ],
                },
                {"role": "assistant", "content": [{"type": "output_text", "text": "A cat."}]},
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "search_google",
                    "arguments": '{"q": "cats"}',
                },
                {"type": "function_call_output", "call_id": "c1", "output": "[1] Cats"},
                {"role": "user", "content": "and now?"},
            ]
        ),
        max_prompt_chars=100,
    )
    assert given.prompt == "and now?"
    assert given.items == [
        {"type": "message", "role": "developer", "content": "Be brief."},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is in"},
                # Decoded, to be stored as an attachment before the turn starts.
                {
                    "type": "input_image",
                    UPLOAD: PendingUpload(
                        "input[1].content[1]", "image_url", "image", CAT_PNG, image=True
                    ),
                },
            ],
        },
        {"type": "message", "role": "assistant", "content": "A cat."},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "search_google",
            "arguments": '{"q": "cats"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": "[1] Cats"},
        {"type": "message", "role": "user", "content": "and now?"},
    ]


@pytest.mark.parametrize(
    ("part", "param", "words"),
    [
        (
            {"type": "input_image", "image_url": "https://img.example/cat.png"},
            "input[0].content[0].image_url",
            "remote image URLs are not fetched",
        ),
        (
            {"type": "input_image", "image_url": "data:image/png;base64,@@@"},
            "input[0].content[0].image_url",
            "is not valid base64",
        ),
        (
            {"type": "input_image", "file_id": "file-123"},
            "input[0].content[0].image_url",
            "file_id is not supported",
        ),
        (
            {"type": "input_file", "file_url": "http://169.254.169.254/latest", "filename": "x"},
            "input[0].content[0].file_url",
            "file_url and file_id are not supported",
        ),
        (
            {"type": "input_file", "filename": "x.pdf"},
            "input[0].content[0].file_data",
            "needs file_data",
        ),
    ],
    ids=["remote-image", "bad-base64", "image-file-id", "file-url", "no-file-data"],
)
def test_images_and_files_must_come_inline(part: dict[str, Any], param: str, words: str) -> None:
    with pytest.raises(OpenResponsesError) as raised:
        turn_input(
            request(
                input=[{"role": "user", "content": [part, {"type": "input_text", "text": "hi"}]}]
            ),
            max_prompt_chars=100,
        )
    assert raised.value.param == param and raised.value.status == 400
    assert words in raised.value.message


def test_images_are_for_user_messages_only() -> None:
    with pytest.raises(OpenResponsesError) as raised:
        turn_input(
            request(
                input=[
                    {"role": "system", "content": [{"type": "input_image", "image_url": "x"}]},
                    {"role": "user", "content": "hi"},
                ]
            ),
            max_prompt_chars=100,
        )
    assert raised.value.param == "input[0].content"


# ----------------------------------------------------------------------------- agents


@pytest.fixture(scope="module")
def orchestrator() -> Agent[Any]:
    settings = load_settings()
    return build_orchestrator(settings, load_connectors(settings))


def graph(agent: Agent[Any]) -> dict[str, Any]:
    """Agent name → (tool names, hand-off names, tool_choice), over the reachable graph."""
    seen: dict[str, Any] = {}
    todo = [agent]
    while todo:
        current = todo.pop()
        if current.name in seen:
            continue
        handoffs = [h for h in current.handoffs if isinstance(h, Agent)]
        seen[current.name] = (
            sorted(t.name for t in current.tools),
            sorted(h.name for h in handoffs),
            current.model_settings.tool_choice,
        )
        todo.extend(handoffs)
    return seen


def test_tool_choice_none_leaves_the_orchestrator_alone(orchestrator: Agent[Any]) -> None:
    agent = response_agent(
        orchestrator, None, tool_policy(request(tool_choice="none"), ["search_google"])
    )
    assert graph(agent) == {"Switchboard": ([], [], None)}
    assert orchestrator.handoffs  # the shared orchestrator is untouched


def test_a_forced_tool_keeps_one_path_to_it(orchestrator: Agent[Any]) -> None:
    req = request(tool_choice={"type": "function", "name": "send_google_email"})
    policy = tool_policy(req, ["send_google_email", "search_google"])
    assert graph(response_agent(orchestrator, None, policy)) == {
        "Switchboard": ([], ["GMail"], "transfer_to_gmail"),
        "GMail": (["send_google_email"], [], "send_google_email"),
    }


def test_allowed_tools_drop_every_other_tool_and_agent(orchestrator: Agent[Any]) -> None:
    req = request(
        tool_choice={
            "type": "allowed_tools",
            "mode": "required",
            "tools": [
                {"type": "function", "name": "search_google"},
                {"type": "function", "name": "google_email_inbox"},
            ],
        }
    )
    names = ["search_google", "google_email_inbox", "send_google_email"]
    assert graph(response_agent(orchestrator, None, tool_policy(req, names))) == {
        "Switchboard": ([], ["GMail", "Search"], "required"),
        "GMail": (["google_email_inbox"], ["Search"], "required"),
        "Search": (["search_google"], ["GMail"], "required"),
    }


def test_tools_and_tool_choice_must_agree() -> None:
    kept = [{"type": "switchboard:tool", "name": "a"}]
    with pytest.raises(OpenResponsesError, match="leaves out"):
        tool_policy(request(tools=kept, tool_choice={"type": "function", "name": "b"}), ["a", "b"])
    with pytest.raises(OpenResponsesError, match="no tool named 'c'") as raised:
        tool_policy(
            request(
                tools=kept,
                tool_choice={"type": "allowed_tools", "tools": [{"type": "function", "name": "c"}]},
            ),
            ["a", "b"],
        )
    assert raised.value.param == "tool_choice.tools[0].name"
    with pytest.raises(OpenResponsesError, match="Switchboard has no tool named 'z'") as raised:
        tool_policy(request(tools=[{"type": "switchboard:tool", "name": "z"}]), ["a"])
    assert raised.value.param == "tools[0].name"
    # A function tool of the caller's may not take the name of one of Switchboard's.
    with pytest.raises(OpenResponsesError, match="one of Switchboard's own tools") as raised:
        tool_policy(request(tools=[WEATHER, {**WEATHER, "name": "a"}]), ["a"])
    assert raised.value.param == "tools[1].name"
    with pytest.raises(OpenResponsesError, match="two tools are named"):
        request(tools=[WEATHER, WEATHER])


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


def test_the_callers_tools_join_every_agent_and_end_the_run(orchestrator: Agent[Any]) -> None:
    req = request(tools=[WEATHER])
    policy = tool_policy(req, ["search_google", "send_google_email"])
    agent = response_agent(orchestrator, None, policy, caller_tools(req, policy.callers))
    seen = graph(agent)
    assert seen["Switchboard"][0] == ["get_weather"]
    assert all("get_weather" in tools for tools, _, _ in seen.values())
    assert len(seen) == len(orchestrator.handoffs) + 1  # every agent stays
    assert agent.tool_use_behavior is stop_at_caller
    # Forced, a caller's tool is the orchestrator's only move.
    req = request(tools=[WEATHER], tool_choice={"type": "function", "name": "get_weather"})
    policy = tool_policy(req, ["search_google"])
    forced = response_agent(orchestrator, None, policy, caller_tools(req, policy.callers))
    assert graph(forced) == {"Switchboard": (["get_weather"], [], "get_weather")}
    # Restricted to it, no connector agent is left.
    req = request(
        tools=[WEATHER],
        tool_choice={
            "type": "allowed_tools",
            "tools": [{"type": "function", "name": "get_weather"}],
        },
    )
    policy = tool_policy(req, ["search_google"])
    only = response_agent(orchestrator, None, policy, caller_tools(req, policy.callers))
    assert graph(only) == {"Switchboard": (["get_weather"], [], None)}


def test_a_callers_tool_call_ends_the_run_and_leaves_no_placeholder() -> None:
    tool = caller_tool("get_weather", None, None, False)
    other = caller_tool("other", None, None, False)
    context = RunContextWrapper(context=None)
    assert stop_at_caller(context, []).is_final_output is False
    done = stop_at_caller(context, [FunctionToolResult(tool=other, output=PENDING, run_item=None)])
    assert done.is_final_output is True
    items = [
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": PENDING},
        {"type": "function_call", "call_id": "c2", "name": "search", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": "found"},
    ]
    kept = drop_pending(items)
    assert kept == (items[0], items[2], items[3])
    assert unanswered_calls(kept) == {"c1": "get_weather"}
    assert is_caller_tool(tool) and tool.params_json_schema["type"] == "object"


async def test_caller_instructions_are_added_to_each_agents_own(orchestrator: Agent[Any]) -> None:
    agent = response_agent(
        orchestrator, "Answer in French.", tool_policy(request(), ["search_google"])
    )
    context = RunContextWrapper(context=None)
    for current in (agent, agent.handoffs[0]):
        text = await current.get_system_prompt(context)
        assert text is not None and text.endswith("Answer in French.")
        assert "Switchboard" in text or "Gmail" in text or "GMail" in text
    original = await orchestrator.get_system_prompt(context)
    assert original is not None and "Answer in French." not in original


# ----------------------------------------------------------------------------- events


def builder(gated: frozenset[str] = frozenset()) -> ResponseBuilder:
    return ResponseBuilder(
        id="resp_test", created_at=1_700_000_000, model="switchboard", echo={}, gated=gated
    )


def delta(text: str, item_id: str = "m1") -> RawResponsesStreamEvent:
    return RawResponsesStreamEvent(
        data=ResponseTextDeltaEvent(
            type="response.output_text.delta",
            item_id=item_id,
            output_index=0,
            content_index=0,
            delta=text,
            logprobs=[],
            sequence_number=0,
        )
    )


def message(text: str, item_id: str = "m1") -> RunItemStreamEvent:
    raw = ResponseOutputMessage(
        id=item_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )
    return RunItemStreamEvent(
        name="message_output_created", item=MessageOutputItem(agent=AGENT, raw_item=raw)
    )


def called(name: str, call_id: str) -> RunItemStreamEvent:
    raw = ResponseFunctionToolCall(
        type="function_call", name=name, arguments='{"q":1}', call_id=call_id, id=f"fc_{call_id}"
    )
    return RunItemStreamEvent(name="tool_called", item=ToolCallItem(agent=AGENT, raw_item=raw))


def handed_off(call_id: str) -> list[RunItemStreamEvent]:
    """A hand-off as the SDK streams it: its own item types, never a tool call."""
    target = Agent(name="Yelp")
    raw = ResponseFunctionToolCall(
        type="function_call", name="transfer_to_yelp", arguments="{}", call_id=call_id, id="h"
    )
    done = {"type": "function_call_output", "call_id": call_id, "output": "{}"}
    return [
        RunItemStreamEvent(
            name="handoff_requested", item=HandoffCallItem(agent=AGENT, raw_item=raw)
        ),
        RunItemStreamEvent(
            name="handoff_occured",
            item=HandoffOutputItem(
                agent=AGENT, source_agent=AGENT, target_agent=target, raw_item=done
            ),
        ),
    ]


def output(call_id: str, value: Any, raw_output: Any) -> RunItemStreamEvent:
    raw = {"type": "function_call_output", "call_id": call_id, "output": raw_output}
    return RunItemStreamEvent(
        name="tool_output", item=ToolCallOutputItem(agent=AGENT, raw_item=raw, output=value)
    )


def run(
    events: list[Any],
    status: str = "completed",
    built: ResponseBuilder | None = None,
    **finish: Any,
) -> Stream:
    built = built or builder()
    out = built.start()
    for event in events:
        out += built.feed(event)
    out += built.finish(status, usage=USAGE, completed_at=1_700_000_001, **finish)
    stream = Stream(out)
    check_stream(stream)
    return stream


def test_messages_with_and_without_deltas_and_without_item_ids() -> None:
    stream = run(
        [
            delta("Hel"),
            delta("lo"),
            message("Hello"),
            message("No deltas", "m2"),
            delta("A", "__fake_id__"),
            message("A", "other"),
        ]
    )
    texts = [item["content"][0]["text"] for item in stream.final["output"]]
    assert texts == ["Hello", "No deltas", "A"]
    assert stream.final["usage"]["total_tokens"] == 15


def test_switchboards_calls_are_vendor_items_with_what_the_model_read() -> None:
    structured = TextResponse("Yelp", "from the adapter").to_dict()
    stream = run(
        [
            *handed_off("h1"),
            called("search", "c1"),
            output("c1", "ignored", "what the model read"),
            called("search", "c2"),
            output("c2", structured, [{"type": "input_text"}]),
            output("c9", "an orphan", "an orphan"),
            message("Done"),
        ]
    )
    items = stream.final["output"]
    assert [(i["type"], i.get("call_id")) for i in items] == [
        ("switchboard:tool_call", "c1"),
        ("switchboard:tool_call", "c2"),
        ("message", None),
    ]
    assert items[0]["arguments"] == '{"q":1}' and items[0]["status"] == "completed"
    assert items[0]["output"] == "what the model read"
    # A structured output: the adapter's text.
    assert items[1]["output"] == to_function_call_output("c2", structured)["output"]
    assert "from the adapter" in items[1]["output"]
    # Added when called (no output yet), done when it returned.
    added = [e["item"] for e in stream.events if e["type"] == "response.output_item.added"]
    assert added[0]["status"] == "in_progress" and added[0]["output"] is None


def test_items_stream_one_at_a_time() -> None:
    # Two calls of one step, the second returning first; then two messages of one model
    # response, the second streaming before the SDK reports the first whole.
    stream = run(
        [
            called("search", "c1"),
            called("search", "c2"),
            output("c2", "x", "second"),
            output("c1", "x", "first"),
            delta("One"),
            delta("Two", "m2"),
            message("One"),
            message("Two", "m2"),
        ]
    )
    assert [(i["type"], i.get("output") or i.get("content")) for i in stream.final["output"]] == [
        ("switchboard:tool_call", "first"),
        ("switchboard:tool_call", "second"),
        ("message", [{"type": "output_text", "text": "One", "annotations": [], "logprobs": []}]),
        ("message", [{"type": "output_text", "text": "Two", "annotations": [], "logprobs": []}]),
    ]  # check_stream (in run) checked that each item was added once the one before was done


def test_the_callers_calls_end_the_response_as_function_calls() -> None:
    built = ResponseBuilder(
        id="resp_test",
        created_at=1,
        model="m",
        echo={},
        callers=frozenset({"get_weather"}),
    )
    stream = run(
        [
            called("get_weather", "w1"),
            called("search", "c1"),
            output("w1", "x", "Pending: …"),  # the placeholder: never shown
            output("c1", "x", "found"),
        ],
        built=built,
    )
    items = stream.final["output"]
    assert [(i["type"], i["call_id"]) for i in items] == [
        ("switchboard:tool_call", "c1"),
        ("function_call", "w1"),
    ]
    assert items[1] == {
        "type": "function_call",
        "id": items[1]["id"],
        "call_id": "w1",
        "name": "get_weather",
        "arguments": '{"q":1}',
        "status": "completed",
    }
    assert caller_calls(stream.final) == {"w1": "get_weather"}
    assert "response.function_call_arguments.done" in stream.types


def test_a_refusal_is_a_refusal_part_of_a_completed_response() -> None:
    raw = ResponseOutputMessage(
        id="m1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputRefusal(type="refusal", refusal="I can't help with that.")],
    )
    refused = RunItemStreamEvent(
        name="message_output_created", item=MessageOutputItem(agent=AGENT, raw_item=raw)
    )
    stream = run([refused])
    [item] = stream.final["output"]
    assert item["content"] == [{"type": "refusal", "refusal": "I can't help with that."}]
    assert stream.final["status"] == "completed"
    assert "response.refusal.done" in stream.types


def test_a_failed_turn_closes_its_message_as_incomplete() -> None:
    stream = run(
        [delta("half an ans")],
        "failed",
        error={"code": "server_error", "message": "The model failed."},
    )
    assert stream.types[-1] == "response.failed"
    final = stream.final
    assert final["error"] == {"code": "server_error", "message": "The model failed."}
    assert final["output"][0]["status"] == "incomplete"
    assert final["completed_at"] is None


def test_an_incomplete_response_says_why_and_other_ends_are_refused() -> None:
    stream = run([delta("cut sh")], "incomplete", incomplete_reason="max_output_tokens")
    assert stream.types[-1] == "response.incomplete"
    assert stream.final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert stream.final["output"][0]["status"] == "incomplete"
    with pytest.raises(ValueError, match="not 'cancelled'"):
        builder().finish("cancelled", usage=USAGE, completed_at=0)


async def test_a_turn_that_dies_without_finishing_still_ends_the_stream() -> None:
    built = builder()
    events: asyncio.Queue[Any] = asyncio.Queue()
    for event in built.start():
        events.put_nowait(event)
    # A turn that never finishes its response: it ends when the test lets it, once the
    # stream has kept the connection alive while it ran.
    may_end = asyncio.Event()
    dying = asyncio.create_task(may_end.wait())
    started = StartedResponse(
        "resp_test", events, asyncio.get_running_loop().create_future(), dying, built
    )
    chunks: list[str] = []
    async with asyncio.timeout(60):  # a stream with no keep-alive would wait for ever
        async for chunk in _stream(started, keepalive=0.02):
            chunks.append(chunk)
            if chunk.startswith(": keep-alive"):
                may_end.set()
    text = "".join(chunks)
    assert ": keep-alive" in text  # while it ran
    blocks = [b for b in text.split("\n\n") if b.strip() and not b.startswith(":")]
    assert blocks[-1] == "data: [DONE]"
    assert blocks[-2].startswith("event: error\n") and LOST in blocks[-2]
    assert '"sequence_number": 2' in blocks[-2]
    assert await started.outcome() is None


# ----------------------------------------------------------------------------- approvals

SEND = frozenset({"send"})
ASKED = {
    "approval_id": "ap_1",
    "call_id": "c1",
    "name": "send",
    "arguments": {"q": 1},
    "expires_at": "2030-01-01T00:00:00.000Z",
    "description": "Sending",
    "current_agent": "Yelp",
    "type": "approval_required",
    "seq": 9,
}


def test_a_gated_call_is_shown_once_it_ran_with_its_output() -> None:
    stream = run(
        [
            called("send", "c1"),
            called("search", "c2"),
            output("c2", "x", "found"),
            output("c1", "x", "sent"),
        ],
        built=builder(SEND),
    )
    assert [(i["type"], i.get("call_id"), i["output"]) for i in stream.final["output"]] == [
        ("switchboard:tool_call", "c2", "found"),
        ("switchboard:tool_call", "c1", "sent"),
    ]


def test_a_pause_ends_completed_with_approval_requests_and_no_call() -> None:
    stream = run(
        [called("search", "c0"), output("c0", "x", "found"), called("send", "c1")],
        built=builder(SEND),
        approvals=[ASKED],
    )
    final = stream.final
    assert final["status"] == "completed"
    assert [i["type"] for i in final["output"]] == [
        "switchboard:tool_call",
        "switchboard:approval_request",
        "message",
    ]
    request = final["output"][-2]
    assert request == {
        "id": request["id"],
        "type": "switchboard:approval_request",
        "status": "completed",
        "approval_id": "ap_1",
        "call_id": "c1",
        "name": "send",
        "arguments": '{"q":1}',
        "effect": None,
        "expires_at": "2030-01-01T00:00:00.000Z",
        "content": [],
    }
    # Without an effect, the message names the tool.
    said = final["output"][-1]["content"][0]["text"]
    assert said.startswith("This needs your approval before it runs: run send (approval_id ap_1).")
    assert f'previous_response_id "{final["id"]}"' in said
    assert stream.types[-9:] == [
        "response.output_item.added",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    with pytest.raises(ValueError, match="ends completed"):
        builder().finish("failed", usage=USAGE, completed_at=0, approvals=[ASKED])


def test_a_pause_on_two_calls_says_what_each_will_do() -> None:
    effect = {"summary": "send an email to bob@example.com", "fields": [], "plan": {}}
    second = {**ASKED, "approval_id": "ap_2", "call_id": "c2", "effect": effect}
    stream = run(
        [called("send", "c1"), called("send", "c2")],
        built=builder(SEND),
        approvals=[ASKED, second],
    )
    message = stream.final["output"][-1]
    assert [i["type"] for i in stream.final["output"]] == [
        "switchboard:approval_request",
        "switchboard:approval_request",
        "message",
    ]
    assert message["content"][0]["text"].startswith(
        "These need your approval before they run: run send (approval_id ap_1); "
        "send an email to bob@example.com (approval_id ap_2). Nothing has run yet."
    )


def test_a_gated_call_cut_short_is_shown_without_output() -> None:
    stream = run(
        [called("send", "c1")],
        "failed",
        built=builder(SEND),
        error={"code": "server_error", "message": "stopped"},
    )
    assert [
        (i["type"], i["call_id"], i["status"], i["output"]) for i in stream.final["output"]
    ] == [("switchboard:tool_call", "c1", "incomplete", None)]


def test_a_resumed_response_shows_approved_calls_and_hides_declined_ones() -> None:
    built = builder(SEND)
    built.resuming(
        [
            DecidedCall("c1", "send", {"to": ["a@x"]}, True),
            DecidedCall("c2", "send", {"to": ["b@x"]}, False),
        ]
    )
    stream = run(
        [output("c2", "x", "Not run: declined"), output("c1", "x", "sent"), message("Sent one.")],
        built=built,
    )
    items = stream.final["output"]
    assert [(i["type"], i.get("call_id")) for i in items] == [
        ("switchboard:tool_call", "c1"),
        ("message", None),
    ]
    assert items[0]["arguments"] == '{"to":["a@x"]}' and items[0]["output"] == "sent"


def test_approval_responses_are_the_whole_input_of_a_chained_request() -> None:
    item = {
        "type": "switchboard:approval_response",
        "approval_id": "ap_1",
        "approve": False,
        "reason": "  no  ",
    }
    decisions = approval_decisions(request(input=[item], previous_response_id="resp_1"))
    assert decisions == [Decision("ap_1", False, "no", "input[0]")]
    assert approval_decisions(request(input="hi")) == []
    for fields, param in [
        ({"input": [item]}, "previous_response_id"),
        (
            {"input": [item, {"role": "user", "content": "x"}], "previous_response_id": "r"},
            "input[1]",
        ),
        ({"input": [item, item], "previous_response_id": "r"}, "input[1].approval_id"),
        ({"input": [item], "previous_response_id": "r", "tool_choice": "required"}, "tool_choice"),
    ]:
        with pytest.raises(OpenResponsesError) as raised:
            approval_decisions(request(**fields))
        assert raised.value.param == param, fields
    with pytest.raises(OpenResponsesError) as raised:
        parse_request({"model": "m", "input": [{**item, "approved": True}]})
    assert (raised.value.param, raised.value.code) == ("input[0].approved", "unknown_parameter")


def test_decisions_must_answer_exactly_the_responses_requests() -> None:
    yes = Decision("ap_1", True, None, "input[0]")
    check_decisions([yes], ["ap_1"], "resp_1")
    with pytest.raises(OpenResponsesError, match="no switchboard:approval_response for 'ap_2'"):
        check_decisions([yes], ["ap_1", "ap_2"], "resp_1")
    with pytest.raises(OpenResponsesError, match="it asked for no approval") as raised:
        check_decisions([yes], [], "resp_1")
    assert raised.value.code == "unknown_approval"


def test_a_replayed_approval_request_is_a_call_that_did_not_run() -> None:
    given = turn_input(
        request(
            input=[
                {"role": "user", "content": "email Ada"},
                {
                    "type": "switchboard:approval_request",
                    "id": "apr_1",
                    "status": "completed",
                    "approval_id": "ap_1",
                    "call_id": "c1",
                    "name": "send",
                    "arguments": "{}",
                    "expires_at": "2030-01-01T00:00:00.000Z",
                },
                {"role": "user", "content": "never mind"},
            ]
        ),
        max_prompt_chars=100,
    )
    assert given.items[1:3] == [
        {"type": "function_call", "call_id": "c1", "name": "send", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": NOT_RUN},
    ]
    with pytest.raises(OpenResponsesError, match="second output"):
        turn_input(
            request(
                input=[
                    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "c1", "output": "a"},
                    {"type": "function_call_output", "call_id": "c1", "output": "b"},
                    {"role": "user", "content": "hi"},
                ]
            ),
            max_prompt_chars=100,
        )


def test_paused_context_keeps_the_turn_up_to_the_pause() -> None:
    items = [
        {"type": "message", "role": "user", "content": "email Ada"},
        {"type": "function_call", "call_id": "c1", "name": "send", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sent for real"},
        {"type": "message", "role": "assistant", "content": "Sent."},
    ]
    assert paused_context(items, {"c1"}) == [
        items[0],
        items[1],
        {"type": "function_call_output", "call_id": "c1", "output": NOT_RUN},
    ]
    # Only the input left (a resumed turn that failed keeps no more).
    assert paused_context(items[:1], {"c1"}) == items[:1]


# ----------------------------------------------------------------------------- the caller's calls


def test_outputs_for_the_previous_responses_calls_come_first() -> None:
    given = turn_input(
        request(
            input=[
                {"role": "user", "content": "and Rome?"},
                {"type": "function_call_output", "call_id": "w1", "output": "18 C"},
            ]
        ),
        max_prompt_chars=100,
        pending={"w1": "get_weather"},
    )
    assert given.prompt == "and Rome?"
    assert given.items == [
        {"type": "function_call_output", "call_id": "w1", "output": "18 C"},
        {"type": "message", "role": "user", "content": "and Rome?"},
    ]
    only = turn_input(
        request(input=[{"type": "function_call_output", "call_id": "w1", "output": "18 C"}]),
        max_prompt_chars=100,
        pending={"w1": "get_weather"},
    )
    assert only.prompt == "(results of get_weather)"


def test_switchboards_items_sent_back_are_calls_with_their_outputs() -> None:
    item = {
        "type": "switchboard:tool_call",
        "id": "sbc_c1",
        "status": "completed",
        "call_id": "c1",
        "name": "search_google",
        "arguments": "{}",
        "output": "[1] found",
    }
    given = turn_input(
        request(
            input=[
                {"role": "user", "content": "q"},
                item,
                {**item, "call_id": "c2", "output": None},
            ]
        ),
        max_prompt_chars=100,
    )
    assert given.items[1:] == [
        {"type": "function_call", "call_id": "c1", "name": "search_google", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "[1] found"},
        {"type": "function_call", "call_id": "c2", "name": "search_google", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": UNFINISHED},
    ]


# ----------------------------------------------------------------------------- compaction


def test_compaction_condenses_and_seals_for_one_user() -> None:
    items = [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is this?"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            ],
        },
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "search", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x" * 2000},
        {"type": "function_call_output", "call_id": "orphan", "output": "dropped"},
        {"type": "message", "role": "assistant", "content": "It is a cat."},
    ]
    condensed = condense(items)
    assert condensed[0] == {
        "type": "message",
        "role": "user",
        "content": "what is this?\n[an image]",
    }
    assert [i["type"] for i in condensed] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert len(condensed[2]["output"]) == 600 and condensed[2]["output"].endswith(" […]")
    fernet = build_fernet(Fernet.generate_key().decode())
    sealed = seal(fernet, "ada", condensed)
    assert expander(fernet, "ada")(sealed, "input[0]") == condensed
    for user_id, content in (("bob", sealed), ("ada", sealed[:-4] + "AAAA")):
        with pytest.raises(OpenResponsesError) as raised:
            expander(fernet, user_id)(content, "input[0]")
        assert raised.value.code == "invalid_encrypted_content"
        assert raised.value.param == "input[0].encrypted_content"


def test_a_model_out_of_tokens_is_told_from_other_failures() -> None:
    incomplete = Response.model_validate(
        {
            "id": "r",
            "created_at": 0,
            "model": "m",
            "object": "response",
            "output": [],
            "tool_choice": "auto",
            "tools": [],
            "parallel_tool_calls": True,
            "status": "incomplete",
            "incomplete_details": {"reason": "content_filter"},
        }
    )
    assert incomplete_reason(
        response_terminal_failure_error("response.incomplete", incomplete)
    ) == ("content_filter")
    assert incomplete_reason(response_terminal_failure_error("response.failed", None)) is None
    chat = ModelBehaviorError("Chat Completions response terminated with finish_reason='length'")
    assert incomplete_reason(chat) == "max_output_tokens"
    assert incomplete_reason(ValueError("response.incomplete")) is None
