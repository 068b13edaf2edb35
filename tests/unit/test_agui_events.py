"""app.agui.events: real Agents SDK events and turn outcomes in, AG-UI events out (no I/O).

The cases a live offline turn does not produce: two messages streamed at once, a model that
does not stream, a provider without message ids, a run that fails or is stopped with a
message open, a hidden result, a resumed turn's calls."""

from __future__ import annotations

from typing import Any

from agents import Agent
from agents.items import MessageOutputItem, ToolCallItem, ToolCallOutputItem
from agents.stream_events import RawResponsesStreamEvent, RunItemStreamEvent
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

from app.agui.events import RunEvents
from connectors.responses import ToolResponse
from tests.support.agui import check_run
from websocket.turn_plan import TurnOutcome

YELP = Agent(name="Yelp")
USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "requests": 1}


def new_run() -> RunEvents:
    return RunEvents("t1", "r1", "Switchboard", {"search": "Searching"}, {"Yelp": "Yelp!"})


def delta(text: str, item_id: str) -> RawResponsesStreamEvent:
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


def message(text: str, item_id: str) -> RunItemStreamEvent:
    raw = ResponseOutputMessage(
        id=item_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )
    return RunItemStreamEvent(
        name="message_output_created", item=MessageOutputItem(agent=YELP, raw_item=raw)
    )


def called(name: str, call_id: str) -> RunItemStreamEvent:
    raw = ResponseFunctionToolCall(
        type="function_call", name=name, arguments='{"q":1}', call_id=call_id, id=f"fc_{call_id}"
    )
    return RunItemStreamEvent(name="tool_called", item=ToolCallItem(agent=YELP, raw_item=raw))


def returned(call_id: str, value: Any) -> RunItemStreamEvent:
    raw = {"type": "function_call_output", "call_id": call_id, "output": str(value)}
    return RunItemStreamEvent(
        name="tool_output", item=ToolCallOutputItem(agent=YELP, raw_item=raw, output=value)
    )


def feed(run: RunEvents, *sdk_events: Any) -> list[dict[str, Any]]:
    return [
        event.model_dump(mode="json", by_alias=True)
        for sdk_event in sdk_events
        for event in run.feed(sdk_event)
    ]


def ended(run: RunEvents, outcome: TurnOutcome) -> list[dict[str, Any]]:
    return [event.model_dump(mode="json", by_alias=True) for event in run.finish(outcome)]


def whole(run: RunEvents, *sdk_events: Any, outcome: TurnOutcome) -> list[dict[str, Any]]:
    start = [event.model_dump(mode="json", by_alias=True) for event in run.start()]
    events = start + feed(run, *sdk_events) + ended(run, outcome)
    check_run(events)
    return events


def test_two_messages_streamed_at_once_stay_two() -> None:
    events = whole(
        new_run(),
        delta("Hel", "a"),
        delta("Bon", "b"),
        delta("lo", "a"),
        message("Hello", "a"),
        delta("jour", "b"),
        message("Bonjour", "b"),
        outcome=TurnOutcome("completed", USAGE, "Bonjour"),
    )
    texts: dict[str, str] = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            texts[event["messageId"]] = texts.get(event["messageId"], "") + event["delta"]
    assert sorted(texts.values()) == ["Bonjour", "Hello"]
    starts = [e for e in events if e["type"] == "TEXT_MESSAGE_START"]
    assert [s["name"] for s in starts] == ["Switchboard", "Switchboard"]


def test_a_model_that_does_not_stream_sends_the_whole_message() -> None:
    events = whole(
        new_run(), message("All at once", "m"), outcome=TurnOutcome("completed", USAGE, "")
    )
    assert [e["type"] for e in events] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[2]["delta"] == "All at once"


def test_a_provider_without_message_ids_closes_the_oldest_open_message() -> None:
    run = new_run()
    events = feed(run, delta("Hi", ""), message("Hi", "__fake_id__"))
    assert [e["type"] for e in events] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]


def test_a_failed_run_closes_its_message_and_ends_with_run_error() -> None:
    error = {"code": "model_error", "message": "The model failed. Try again.", "retryable": True}
    events = whole(
        new_run(), delta("Half", "m"), outcome=TurnOutcome("failed", USAGE, "Half", error)
    )
    assert [e["type"] for e in events][-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    assert events[-1]["code"] == "model_error"
    assert events[-1]["message"] == "The model failed. Try again."
    assert events[-1]["usage"][0]["totalTokens"] == 15
    assert events[-1]["metadata"] == {"switchboard": {"retryable": True}}


def test_a_stopped_run_finishes_cancelled() -> None:
    events = whole(new_run(), delta("Half", "m"), outcome=TurnOutcome("cancelled", USAGE, "Half"))
    assert events[-1]["outcome"] == {"type": "cancelled"}


def test_results_shown_hidden_and_never_twice() -> None:
    card = ToolResponse("list", "Yelp", "Results", [1, 2]).to_dict()
    hidden = ToolResponse("geo", "Yelp", "Where", {"lat": 1}, display_response=False).to_dict()
    run = new_run()
    events = feed(
        run,
        called("search", "c1"),
        returned("c1", card),
        returned("c1", card),  # a duplicate output is not a second result
        called("locate", "c2"),
        returned("c2", hidden),
        returned("c9", card),  # the output of a call never shown
    )
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert [(r["toolCallId"], bool(r["content"])) for r in results] == [("c1", True), ("c2", False)]
    assert '"lat"' not in str(events)
    start = events[0]
    assert start["metadata"] == {
        "switchboard": {"description": "Searching", "agent": "Switchboard"}
    }


def test_a_resumed_run_shows_approved_results_only() -> None:
    run = new_run()
    run.resuming(
        "Yelp",
        approved=["ok"],
        declined=["no"],
        usage_before={"input_tokens": 4, "total_tokens": 6},
    )
    card = ToolResponse("sent", "Yelp", "Sent", "done").to_dict()
    events = whole(
        run,
        returned("ok", card),
        returned("no", "Not run: the user declined this call"),
        outcome=TurnOutcome("completed", USAGE, ""),
    )
    assert [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT"] == ["ok"]
    assert not [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert events[-1]["usage"] == [{"inputTokens": 6, "outputTokens": 5, "totalTokens": 9}]


def test_a_pause_is_an_interrupt_per_call() -> None:
    asked = {
        "approval_id": "ap_1",
        "call_id": "c1",
        "name": "send",
        "description": "Sending",
        "arguments": {"to": "x"},
        "current_agent": "Yelp",
        "expires_at": "2030-01-01T00:00:00.000Z",
    }
    run = new_run()
    # The SDK reported the call before pausing; one it did not is shown before the end.
    events = whole(
        run,
        called("send", "c1"),
        outcome=TurnOutcome(
            "paused",
            USAGE,
            "",
            approvals=(asked, {**asked, "approval_id": "ap_2", "call_id": "c2"}),
        ),
    )
    assert [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"] == ["c1", "c2"]
    interrupts = events[-1]["outcome"]["interrupts"]
    assert [(i["id"], i["toolCallId"], i["reason"]) for i in interrupts] == [
        ("ap_1", "c1", "tool_call"),
        ("ap_2", "c2", "tool_call"),
    ]
    assert interrupts[0]["expiresAt"] == "2030-01-01T00:00:00.000Z"
