"""Records: the wire form of events and the guard on payload keys."""

from __future__ import annotations

import copy

import pytest

from storage.records import EventRecord, NewEvent, TurnUpdate

OUTPUT = {
    "response_type": "yelp_search_results",
    "agent_name": "Yelp",
    "friendly_name": "Yelp results",
    "display_response": True,
    "response": [{"name": "Chez Panisse"}],
    "debug_info": {"raw": "secret-ish upstream payload"},
}


def tool_output_event() -> EventRecord:
    return EventRecord(
        chat_id="c1",
        seq=7,
        turn_id="t1",
        type="tool_output",
        payload={"call_id": "call_1", "output": copy.deepcopy(OUTPUT), "current_agent": "Yelp"},
        ts="2025-01-31T12:00:00.000Z",
    )


def test_to_wire_is_the_socket_envelope_plus_payload() -> None:
    wire = tool_output_event().to_wire()
    assert list(wire)[:5] == ["type", "chat_id", "turn_id", "seq", "ts"]
    assert wire["type"] == "tool_output"
    assert wire["seq"] == 7
    assert wire["call_id"] == "call_1"
    assert wire["current_agent"] == "Yelp"


def test_to_wire_hides_debug_info_without_mutating_the_record() -> None:
    event = tool_output_event()
    wire = event.to_wire()
    assert "debug_info" not in wire["output"]
    assert wire["output"]["response"] == OUTPUT["response"]
    # The stored payload still has it, so the debug view can show it.
    assert event.payload["output"]["debug_info"] == OUTPUT["debug_info"]
    assert event.to_wire(include_debug=True)["output"]["debug_info"] == OUTPUT["debug_info"]


def test_to_wire_without_output_is_untouched() -> None:
    event = EventRecord(
        "c1", 1, "t1", "user_prompt", {"text": "hi", "client_message_id": None}, "x"
    )
    assert event.to_wire() == {
        "type": "user_prompt",
        "chat_id": "c1",
        "turn_id": "t1",
        "seq": 1,
        "ts": "x",
        "text": "hi",
        "client_message_id": None,
    }


def test_new_event_refuses_payload_that_shadows_the_envelope() -> None:
    with pytest.raises(ValueError, match=r"envelope keys \['seq'\]"):
        NewEvent(type="llm_response", turn_id="t", payload={"seq": 3, "text": "x"}, ts="x")


def test_turn_update_defaults_change_nothing() -> None:
    update = TurnUpdate(turn_id="t")
    assert (update.partial_text, update.status, update.final_text, update.usage) == (None,) * 4
