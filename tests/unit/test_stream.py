"""websocket.stream: real Agents SDK events in, protocol events out (no sockets)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import (
    HandoffCallItem,
    HandoffOutputItem,
    MessageOutputItem,
    ReasoningItem,
    ToolCallItem,
    ToolCallOutputItem,
)
from agents.stream_events import (
    AgentUpdatedStreamEvent,
    RawResponsesStreamEvent,
    RunItemStreamEvent,
)
from agents.testing import ScriptedModel, function_call
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseFunctionToolCallOutputItem,
    ResponseFunctionWebSearch,
    ResponseOutputMessage,
    ResponseOutputRefusal,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseRefusalDeltaEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)
from openai.types.responses.response_function_web_search import ActionSearch
from openai.types.responses.response_output_item import McpCall
from pydantic import ValidationError

from connectors.responses import ErrorResponse, ToolResponse
from websocket.protocol import encode, envelope, validate_server_event
from websocket.stream import StreamTranslator, usage_of
from wire.events import Event, LlmResponseDeltaEvent

ORCH = Agent(name="Switchboard")
YELP = Agent(name="Yelp")
GMAIL = Agent(name="GMail")
DESCRIPTIONS = {"search_businesses_at_yelp": "Searching Yelp", "send_google_email": "Sending email"}
DISPLAY_NAMES = {"Yelp": "Yelp Reviews", "GMail": "Gmail"}
TS = "2025-01-31T12:00:00.000Z"


# --------------------------------------------------------------------------- SDK event builders


def new_translator() -> StreamTranslator:
    return StreamTranslator("Switchboard", DESCRIPTIONS, DISPLAY_NAMES)


def updated(agent: Agent[Any]) -> AgentUpdatedStreamEvent:
    return AgentUpdatedStreamEvent(new_agent=agent)


def delta(text: str, item_id: str = "msg_1") -> RawResponsesStreamEvent:
    return RawResponsesStreamEvent(
        data=ResponseTextDeltaEvent(
            type="response.output_text.delta",
            item_id=item_id,
            output_index=0,
            content_index=0,
            delta=text,
            logprobs=[],
            sequence_number=1,
        )
    )


def message(
    agent: Agent[Any], *parts: str, item_id: str = "msg_1", refusal: str | None = None
) -> RunItemStreamEvent:
    content: list[Any] = [
        ResponseOutputText(type="output_text", text=p, annotations=[]) for p in parts
    ]
    if refusal is not None:
        content.append(ResponseOutputRefusal(type="refusal", refusal=refusal))
    raw = ResponseOutputMessage(
        id=item_id, type="message", role="assistant", status="completed", content=content
    )
    return RunItemStreamEvent(
        name="message_output_created", item=MessageOutputItem(agent=agent, raw_item=raw)
    )


def fcall(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", name=name, arguments=arguments, call_id=call_id, id=f"fc_{call_id}"
    )


def called(
    agent: Agent[Any], name: str, call_id: str, arguments: str = '{"term":"sushi"}'
) -> RunItemStreamEvent:
    return RunItemStreamEvent(
        name="tool_called", item=ToolCallItem(agent=agent, raw_item=fcall(name, arguments, call_id))
    )


def output(
    agent: Agent[Any], call_id: str, value: Any, *, pydantic_raw: bool = False
) -> RunItemStreamEvent:
    raw: Any
    if pydantic_raw:
        raw = ResponseFunctionToolCallOutputItem(
            id=f"out_{call_id}",
            type="function_call_output",
            call_id=call_id,
            output=str(value),
            status="completed",
        )
    else:
        raw = {"type": "function_call_output", "call_id": call_id, "output": str(value)}
    return RunItemStreamEvent(
        name="tool_output", item=ToolCallOutputItem(agent=agent, raw_item=raw, output=value)
    )


def handoff(source: Agent[Any], target: Agent[Any]) -> list[Any]:
    """What the SDK streams for a handoff: requested, occurred, then the agent update."""
    call = fcall(f"transfer_to_{target.name.lower()}", "{}", f"h_{target.name}")
    return [
        RunItemStreamEvent(
            name="handoff_requested", item=HandoffCallItem(agent=source, raw_item=call)
        ),
        RunItemStreamEvent(
            name="handoff_occured",
            item=HandoffOutputItem(
                agent=source,
                source_agent=source,
                target_agent=target,
                raw_item={
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": '{"assistant": "' + target.name + '"}',
                },
            ),
        ),
        updated(target),
    ]


class Out(NamedTuple):
    """An event model as plain data, to compare whole events in one assert."""

    type: str
    payload: dict[str, Any]
    persisted: bool


def plain(events: Iterable[Event]) -> list[Out]:
    return [Out(e.type, e.payload(), e.persisted) for e in events]


def run(translator: StreamTranslator, events: Iterable[Any]) -> list[Out]:
    out: list[Out] = []
    for event in events:
        out.extend(plain(translator.translate(event)))
    return out


def types(out: list[Out]) -> list[str]:
    return [e.type for e in out]


def to_wire(out: list[Out], first_seq: int = 2) -> list[dict[str, Any]]:
    """Envelope like the turn runner (seq 1 is the user_prompt) and validate every event."""
    seq = first_seq
    wire = []
    for e in out:
        event = envelope(e.type, "chat-1", "turn-1", seq if e.persisted else None, e.payload, TS)
        seq += e.persisted
        validate_server_event(event)
        wire.append(event)
    return wire


YELP_RESULT = ToolResponse(
    "yelp_search_results", "Yelp", "Searching Yelp for sushi", [{"name": "Oishii"}]
).to_dict()


# --------------------------------------------------------------------------- agent tracking


def test_no_agent_updated_for_orchestrator_at_turn_start() -> None:
    t = new_translator()
    assert t.translate(updated(ORCH)) == []
    assert t.current_agent == "Switchboard"


def test_agent_updated_when_turn_starts_with_another_agent() -> None:
    t = new_translator()
    assert run(t, [updated(YELP)]) == [
        Out(
            "agent_updated",
            {"new_agent": "Yelp", "name": "Yelp Reviews", "current_agent": "Yelp"},
            True,
        )
    ]
    assert t.current_agent == "Yelp"


def test_handoff_then_agent_updated_and_current_agent_follows() -> None:
    t = new_translator()
    out = run(
        t,
        [
            updated(ORCH),
            delta("Let me look", "m0"),
            message(ORCH, "Let me look", item_id="m0"),
            *handoff(ORCH, YELP),
            called(YELP, "search_businesses_at_yelp", "c1"),
            output(YELP, "c1", YELP_RESULT),
            *handoff(YELP, ORCH),
            delta("Done"),
            message(ORCH, "Done"),
        ],
    )
    assert types(out) == [
        "llm_response_delta",
        "llm_response",
        "handoff",
        "agent_updated",
        "tool_call",
        "tool_output",
        "handoff",
        "agent_updated",
        "llm_response_delta",
        "llm_response",
    ]
    assert [e.payload.get("current_agent") for e in out] == [
        "Switchboard",
        "Switchboard",
        None,
        "Yelp",
        "Yelp",
        "Yelp",
        None,
        "Switchboard",
        "Switchboard",
        "Switchboard",
    ]
    assert out[2].payload == {"from_agent": "Switchboard", "to_agent": "Yelp"}
    # Back to the orchestrator mid-turn is a change, so it is reported (with its own name).
    assert out[7].payload == {
        "new_agent": "Switchboard",
        "name": "Switchboard",
        "current_agent": "Switchboard",
    }
    to_wire(out)


def test_handoff_requested_is_not_a_tool_call() -> None:
    t = new_translator()
    requested = handoff(ORCH, YELP)[0]
    assert t.translate(requested) == []


# --------------------------------------------------------------------------- text


def test_deltas_concatenate_to_llm_response_and_current_text_resets() -> None:
    t = new_translator()
    out = run(t, [delta("Hel"), delta("lo, "), delta("wörld ✓")])
    assert t.current_text == "Hello, wörld ✓"
    out += plain(t.translate(message(ORCH, "Hello, ", "wörld ✓")))
    assert t.current_text == ""
    deltas = [e.payload["delta"] for e in out if e.type == "llm_response_delta"]
    assert "".join(deltas) == out[-1].payload["text"] == "Hello, wörld ✓"
    assert [e.persisted for e in out] == [False, False, False, True]
    to_wire(out)


def test_message_without_deltas() -> None:
    t = new_translator()
    assert run(t, [message(ORCH, "Hi")]) == [
        Out("llm_response", {"text": "Hi", "current_agent": "Switchboard"}, True)
    ]


def test_two_messages_keep_their_own_text() -> None:
    t = new_translator()
    run(t, [delta("one", "m1"), delta("two", "m2")])
    assert t.current_text == "onetwo"
    assert t.translate(message(ORCH, "one", item_id="m1"))[0].payload()["text"] == "one"
    assert t.current_text == "two"
    assert t.translate(message(ORCH, "two", item_id="m2"))[0].payload()["text"] == "two"
    assert t.current_text == ""


def test_provider_without_matching_item_ids() -> None:
    # Chat Completions shims may stream under one id and finish under another.
    t = new_translator()
    run(t, [delta("abc", "__fake_id__")])
    assert t.translate(message(ORCH, "abc", item_id="msg_real"))[0].payload()["text"] == "abc"
    assert t.current_text == ""


def test_item_text_wins_when_deltas_differ() -> None:
    t = new_translator()
    run(t, [delta("draft")])
    assert t.translate(message(ORCH, "final"))[0].payload()["text"] == "final"


def test_a_refusal_is_the_message_marked_as_a_refusal() -> None:
    t = new_translator()
    refusal = RawResponsesStreamEvent(
        data=ResponseRefusalDeltaEvent(
            type="response.refusal.delta",
            item_id="m1",
            output_index=0,
            content_index=0,
            delta="no",
            sequence_number=1,
        )
    )
    assert t.translate(refusal) == []  # refusal deltas are not text deltas
    delta_event, done = t.translate(message(ORCH, refusal="no"))
    # One delta with the refusal, so the message's deltas still join to its text.
    assert delta_event.payload() == {"delta": "no", "current_agent": "Switchboard"}
    assert done.payload() == {"text": "no", "current_agent": "Switchboard", "refusal": True}


def test_text_beside_a_refusal_wins_and_is_not_marked() -> None:
    t = new_translator()
    run(t, [delta("partly")])
    [done] = t.translate(message(ORCH, "partly", refusal="no"))
    assert done.payload() == {"text": "partly", "current_agent": "Switchboard"}


def test_a_cut_off_message_is_the_text_streamed_so_far() -> None:
    t = new_translator()
    run(t, [delta("The answer is "), delta("cut")])
    cut = t.cut_off("max_output_tokens")
    assert cut.payload() == {
        "text": "The answer is cut",
        "current_agent": "Switchboard",
        "incomplete_reason": "max_output_tokens",
    }
    assert t.current_text == ""


def test_empty_delta_is_not_sent() -> None:
    assert new_translator().translate(delta("")) == []


# --------------------------------------------------------------------------- tool calls


def test_tool_call_payload() -> None:
    t = new_translator()
    out = run(
        t,
        [
            called(
                ORCH,
                "search_businesses_at_yelp",
                "c1",
                '{"term":"sushi","location":"Boston, MA","limit":3}',
            ),
            called(ORCH, "lookup_weather", "c2", "{}"),
        ],
    )
    assert out[0] == Out(
        "tool_call",
        {
            "call_id": "c1",
            "name": "search_businesses_at_yelp",
            "description": "Searching Yelp",
            "arguments": {"term": "sushi", "location": "Boston, MA", "limit": 3},
            "current_agent": "Switchboard",
        },
        True,
    )
    assert out[1].payload["description"] == "Running lookup weather"
    to_wire(out)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("", {}),
        ("   ", {}),
        ('{"a": ', {"_raw": '{"a": '}),
        ("[1, 2]", {"_raw": "[1, 2]"}),
        ('"text"', {"_raw": '"text"'}),
        ('{"x": NaN}', {"_raw": '{"x": NaN}'}),  # NaN would make the frame invalid JSON
    ],
)
def test_tool_call_arguments(arguments: str, expected: dict[str, Any]) -> None:
    out = plain(new_translator().translate(called(ORCH, "tool", "c1", arguments)))
    assert out[0].payload["arguments"] == expected
    encode(envelope("tool_call", "c", "t", 2, out[0].payload, TS))


def test_arguments_over_the_cap_are_shown_by_their_start_and_length() -> None:
    translator = StreamTranslator("Switchboard", {}, {}, max_argument_chars=100)
    arguments = json.dumps({"text": "x" * 5_000})
    [event] = plain(translator.translate(called(ORCH, "tool", "c1", arguments)))
    assert event.payload["arguments"] == {"_raw": arguments[:1_000] + "…", "_chars": 5_012}
    [within] = plain(translator.translate(called(ORCH, "tool", "c2", '{"text": "x"}')))
    assert within.payload["arguments"] == {"text": "x"}


def test_handoffs_are_told_by_the_sdk_item_types_not_tool_names() -> None:
    t = new_translator()
    # The SDK streams a hand-off as HandoffCallItem / HandoffOutputItem: no tool_call.
    assert types(run(t, handoff(ORCH, YELP))) == ["handoff", "agent_updated"]
    # A tool of ours that merely has a hand-off-like name is a tool like any other.
    out = run(
        t,
        [
            called(YELP, "transfer_to_savings", "c1", "{}"),
            output(YELP, "c1", YELP_RESULT),
        ],
    )
    assert types(out) == ["tool_call", "tool_output"]


def test_tool_call_reported_once() -> None:
    t = new_translator()
    out = run(t, [called(ORCH, "tool", "c1"), called(ORCH, "tool", "c1")])
    assert types(out) == ["tool_call"]


def test_tool_call_from_dict_raw_item() -> None:
    raw = {
        "type": "function_call",
        "call_id": "c9",
        "name": "search_businesses_at_yelp",
        "arguments": '{"term": "ramen"}',
    }
    event = RunItemStreamEvent(name="tool_called", item=ToolCallItem(agent=YELP, raw_item=raw))
    out = plain(new_translator().translate(event))
    assert out[0].payload["call_id"] == "c9"
    assert out[0].payload["arguments"] == {"term": "ramen"}


def test_hosted_and_mcp_tool_calls_do_not_crash() -> None:
    web = ResponseFunctionWebSearch(
        id="ws_1",
        status="completed",
        type="web_search_call",
        action=ActionSearch(type="search", query="sushi boston"),
    )
    mcp = McpCall(
        id="mcp_1",
        type="mcp_call",
        name="list_issues",
        server_label="github",
        arguments='{"repo": "x/y"}',
    )
    t = new_translator()
    out = run(
        t,
        [
            RunItemStreamEvent(name="tool_called", item=ToolCallItem(agent=ORCH, raw_item=web)),
            RunItemStreamEvent(name="tool_called", item=ToolCallItem(agent=ORCH, raw_item=mcp)),
        ],
    )
    assert [(e.payload["call_id"], e.payload["name"]) for e in out] == [
        ("ws_1", "web_search_call"),
        ("mcp_1", "list_issues"),
    ]
    assert out[0].payload["arguments"]["query"] == "sushi boston"
    assert out[1].payload["arguments"] == {"repo": "x/y"}
    to_wire(out)


# --------------------------------------------------------------------------- tool outputs


def _call_then_output(value: Any, **kwargs: Any) -> list[Out]:
    t = new_translator()
    run(t, [*handoff(ORCH, YELP), called(YELP, "search_businesses_at_yelp", "c1")])
    out = plain(t.translate(output(YELP, "c1", value, **kwargs)))
    to_wire(out)
    return out


def test_tool_response_output_is_sent_as_is() -> None:
    out = _call_then_output(YELP_RESULT)
    assert out == [
        Out("tool_output", {"call_id": "c1", "output": YELP_RESULT, "current_agent": "Yelp"}, True)
    ]


def test_call_id_from_pydantic_raw_item() -> None:
    out = _call_then_output(YELP_RESULT, pydantic_raw=True)
    assert out[0].payload["call_id"] == "c1"


def test_debug_info_is_kept_for_the_store() -> None:
    value = ToolResponse(
        "yelp_search_results", "Yelp", "Searching", [], debug_info={"latency_ms": 5}
    ).to_dict(include_debug=True)
    assert _call_then_output(value)[0].payload["output"]["debug_info"] == {"latency_ms": 5}
    # A ToolResponse object (not yet a dict) keeps it too.
    obj = ToolResponse("yelp_search_results", "Yelp", "Searching", [], debug_info={"k": 1})
    assert _call_then_output(obj)[0].payload["output"]["debug_info"] == {"k": 1}


@pytest.mark.parametrize(
    "value",
    [
        ToolResponse("geo", "Yelp", "Locating", {"lat": 1}, display_response=False).to_dict(),
        ErrorResponse("Yelp", "hidden failure").to_dict() | {"display_response": False},
    ],
)
def test_hidden_output_is_neither_sent_nor_persisted(value: dict[str, Any]) -> None:
    assert _call_then_output(value) == []


@pytest.mark.parametrize(
    ("value", "response_type", "response"),
    [
        ("Found 3 places", "text", "Found 3 places"),
        ("", "text", ""),
        (42, "text", "42"),
        (2.5, "text", "2.5"),
        (True, "text", "true"),
        (None, "text", "null"),
        ({"a": 1}, "json", {"a": 1}),
        ([1, "two"], "json", [1, "two"]),
        ({"when": object()}, "text", None),  # not JSON: its str() is all there is
        (
            '{"response_type": "yelp_reviews", "agent_name": "Yelp", "friendly_name": "Reviews", '
            '"response": []}',
            "yelp_reviews",
            [],
        ),  # a stringified ToolResponse
    ],
)
def test_non_tool_response_outputs_are_wrapped(
    value: Any, response_type: str, response: Any
) -> None:
    out = _call_then_output(value)
    assert types(out) == ["tool_output"]
    wrapped = out[0].payload["output"]
    assert wrapped["response_type"] == response_type
    assert wrapped["agent_name"] == "Yelp"
    assert wrapped["display_response"] is True
    if response is not None:
        assert wrapped["response"] == response


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (ErrorResponse("Yelp", "Yelp is down").to_dict(), "Yelp is down"),
        ("Error: API rate limit exceeded", "API rate limit exceeded"),
        (
            "An error occurred while running the tool. Please try again.",
            "An error occurred while running the tool. Please try again.",
        ),
        # Exception text can hold secrets (URLs, keys): only the type reaches the user.
        (
            ValueError("bad input\nTraceback (most recent call last):\n  File x"),
            "The Yelp tool failed (ValueError).",
        ),
        (RuntimeError(), "The Yelp tool failed (RuntimeError)."),
        ("Error: " + "x" * 500, "x" * 199 + "…"),
    ],
)
def test_error_outputs_give_tool_output_then_error(value: Any, message: str) -> None:
    out = _call_then_output(value)
    assert types(out) == ["tool_output", "error"]
    assert out[0].payload["output"]["response_type"] == "error"
    assert out[1] == Out(
        "error", {"code": "tool_error", "message": message, "retryable": False}, True
    )


def test_no_orphan_or_duplicate_tool_output() -> None:
    t = new_translator()
    assert t.translate(output(ORCH, "never-called", YELP_RESULT)) == []
    run(t, [called(ORCH, "search_businesses_at_yelp", "c1")])
    assert types(t.translate(output(ORCH, "c1", YELP_RESULT))) == ["tool_output"]
    assert t.translate(output(ORCH, "c1", YELP_RESULT)) == []


# --------------------------------------------------------------------------- robustness


class _Weird:
    type = "something_else"


@pytest.mark.parametrize(
    "event",
    [
        object(),
        None,
        "text",
        _Weird(),
        RawResponsesStreamEvent(
            data=ResponseTextDoneEvent(
                type="response.output_text.done",
                item_id="m",
                output_index=0,
                content_index=0,
                text="x",
                logprobs=[],
                sequence_number=2,
            )
        ),
        RunItemStreamEvent(
            name="reasoning_item_created",
            item=ReasoningItem(
                agent=ORCH, raw_item=ResponseReasoningItem(id="r", type="reasoning", summary=[])
            ),
        ),
        RunItemStreamEvent(name="mcp_list_tools", item=None),  # type: ignore[arg-type]
        RunItemStreamEvent(name="tool_called", item=None),  # type: ignore[arg-type]
        RunItemStreamEvent(
            name="tool_called", item=ToolCallItem(agent=ORCH, raw_item={"type": "function_call"})
        ),
        RunItemStreamEvent(name="tool_called", item=ToolCallItem(agent=ORCH, raw_item=None)),  # type: ignore[arg-type]
        RunItemStreamEvent(
            name="tool_output", item=ToolCallOutputItem(agent=ORCH, raw_item=None, output="x")
        ),  # type: ignore[arg-type]
        AgentUpdatedStreamEvent(new_agent=None),  # type: ignore[arg-type]
    ],
)
def test_unexpected_events_give_nothing(event: Any) -> None:
    assert new_translator().translate(event) == []


def test_events_are_frozen() -> None:
    (event,) = new_translator().translate(delta("hi"))
    assert isinstance(event, LlmResponseDeltaEvent)
    with pytest.raises(ValidationError, match="frozen"):
        event.delta = "changed"  # type: ignore[misc]
    assert event.payload() == {"delta": "hi", "current_agent": "Switchboard"}


def test_usage_of() -> None:
    usage = Usage(requests=3, input_tokens=120, output_tokens=30, total_tokens=150)
    assert usage_of(usage).model_dump() == {
        "input_tokens": 120,
        "output_tokens": 30,
        "total_tokens": 150,
        "requests": 3,
    }
    assert usage_of(None).model_dump() == {
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "requests": 0,
    }


# --------------------------------------------------------------------------- end to end

# PROTOCOL §3 "Order within a turn", as a regular expression over event types.
TURN_ORDER = re.compile(
    r"user_prompt"
    r"( (handoff agent_updated|tool_call( tool_output)?|(llm_response_delta )*llm_response|error))*"
    r" end_of_stream( suggested_prompts)?"
)


def check_order(out: list[Out]) -> list[dict[str, Any]]:
    """§3 order rules on one turn's events; returns them enveloped and validated."""
    sequence = " ".join(["user_prompt", *types(out), "end_of_stream"])
    assert TURN_ORDER.fullmatch(sequence), sequence
    seen_calls: set[str] = set()
    outputs: set[str] = set()
    text = ""
    for e in out:
        if e.type == "tool_call":
            seen_calls.add(e.payload["call_id"])
        elif e.type == "tool_output":
            assert e.payload["call_id"] in seen_calls  # follows its tool_call
            assert e.payload["call_id"] not in outputs  # at most once
            outputs.add(e.payload["call_id"])
        elif e.type == "llm_response_delta":
            text += e.payload["delta"]
        elif e.type == "llm_response":
            assert text == e.payload["text"]
            text = ""
    wire = to_wire(out)
    assert [w["seq"] for w in wire if w["seq"] is not None] == list(
        range(2, 2 + sum(e.persisted for e in out))
    )
    return wire


@pytest.fixture(autouse=True, scope="module")
def _no_tracing() -> None:
    set_tracing_disabled(True)


@function_tool
def search_businesses_at_yelp(term: str, location: str) -> dict:
    """Search Yelp for businesses."""
    return ToolResponse(
        "yelp_search_results",
        "Yelp",
        f"Searching Yelp for {term}",
        [{"name": "Oishii", "location": location}],
    ).to_dict()


@function_tool
def geocode(place: str) -> dict:
    """Resolve a place (intermediate: not shown)."""
    return ToolResponse(
        "geocode", "Yelp", "Locating", {"lat": 42.36, "lng": -71.06}, display_response=False
    ).to_dict()


@function_tool
def send_google_email(to: str, subject: str) -> dict:
    """Send an email."""
    raise RuntimeError("SMTP exploded with secrets in the trace")


def _multi_part_message(*parts: str) -> ResponseOutputMessage:
    # Two content parts: the scripted stream sends one delta per part.
    return ResponseOutputMessage(
        id="msg_final",
        type="message",
        role="assistant",
        status="completed",
        content=[
            ResponseOutputText(type="output_text", text=p, annotations=[], logprobs=[])
            for p in parts
        ],
    )


async def _run_streamed(model: ScriptedModel, starting: Agent[Any]) -> tuple[list[Out], Any]:
    result = Runner.run_streamed(starting, "Find sushi in Boston and email Bob")
    translator = new_translator()
    out: list[Out] = []
    async for event in result.stream_events():
        out.extend(plain(translator.translate(event)))
    model.assert_complete()
    assert translator.current_text == ""
    return out, result


async def test_end_to_end_with_the_real_runner() -> None:
    model = ScriptedModel(
        [
            [function_call("transfer_to_yelp", {}, call_id="h1")],
            [
                function_call(
                    "search_businesses_at_yelp",
                    {"term": "sushi", "location": "Boston"},
                    call_id="c1",
                )
            ],
            [function_call("geocode", {"place": "Boston"}, call_id="c2")],
            [function_call("transfer_to_gmail", {}, call_id="h2")],
            [
                function_call(
                    "send_google_email", {"to": "bob@example.com", "subject": "Sushi"}, call_id="c3"
                )
            ],
            [_multi_part_message("I found Oishii, ", "but the email failed.")],
        ]
    )
    gmail = Agent(name="GMail", model=model, tools=[send_google_email])
    yelp = Agent(
        name="Yelp", model=model, tools=[search_businesses_at_yelp, geocode], handoffs=[gmail]
    )
    orchestrator = Agent(name="Switchboard", model=model, handoffs=[yelp])

    out, result = await _run_streamed(model, orchestrator)

    assert types(out) == [
        "handoff",
        "agent_updated",
        "tool_call",
        "tool_output",  # Yelp search, shown
        "tool_call",  # geocode: display_response false, so no tool_output
        "handoff",
        "agent_updated",
        "tool_call",
        "tool_output",
        "error",  # the failing email tool; the turn goes on
        "llm_response_delta",
        "llm_response_delta",
        "llm_response",
    ]
    wire = check_order(out)
    assert [(w["from_agent"], w["to_agent"]) for w in wire if w["type"] == "handoff"] == [
        ("Switchboard", "Yelp"),
        ("Yelp", "GMail"),
    ]
    assert [w["name"] for w in wire if w["type"] == "agent_updated"] == ["Yelp Reviews", "Gmail"]
    calls = [w for w in wire if w["type"] == "tool_call"]
    assert [(c["call_id"], c["name"], c["current_agent"]) for c in calls] == [
        ("c1", "search_businesses_at_yelp", "Yelp"),
        ("c2", "geocode", "Yelp"),
        ("c3", "send_google_email", "GMail"),
    ]
    assert calls[0]["arguments"] == {"term": "sushi", "location": "Boston"}
    assert calls[0]["description"] == "Searching Yelp"
    outputs = [w for w in wire if w["type"] == "tool_output"]
    assert outputs[0]["output"]["response_type"] == "yelp_search_results"
    assert outputs[1]["output"]["response_type"] == "error"
    error = next(w for w in wire if w["type"] == "error")
    assert error["code"] == "tool_error" and "secrets" not in error["message"]
    assert wire[-1]["text"] == "I found Oishii, but the email failed."
    assert wire[-1]["current_agent"] == "GMail"
    assert usage_of(result.context_wrapper.usage).requests == 6


async def test_end_to_end_parallel_tool_calls() -> None:
    # The SDK reports every call of one model response before running them, so parallel
    # calls arrive as call, call, output, output: each output still follows its own call.
    model = ScriptedModel(
        [
            [
                function_call(
                    "search_businesses_at_yelp", {"term": "sushi", "location": "A"}, call_id="p1"
                ),
                function_call(
                    "search_businesses_at_yelp", {"term": "ramen", "location": "B"}, call_id="p2"
                ),
            ],
            [_multi_part_message("Both done.")],
        ]
    )
    orchestrator = Agent(name="Switchboard", model=model, tools=[search_businesses_at_yelp])

    out, _ = await _run_streamed(model, orchestrator)

    assert types(out) == [
        "tool_call",
        "tool_call",
        "tool_output",
        "tool_output",
        "llm_response_delta",
        "llm_response",
    ]
    assert [e.payload["call_id"] for e in out[:4]] == ["p1", "p2", "p1", "p2"]
    assert all(e.payload["current_agent"] == "Switchboard" for e in out if e.type != "handoff")
    to_wire(out)
