"""Checks of what ``/v1/responses`` sends against the Open Responses spec (seed 002).

Schemas: the official ``openai`` package's pydantic types (``openai.types.responses``):
each streamed event is validated by the event class its ``type`` names (the members of
``ResponseStreamEvent``; validating against the whole union would report every member's
errors), Response objects by ``Response``. On top of that, what the types cannot say:
the required fields of the spec's ResponseResource (openresponses/openresponses,
schema/components/schemas/ResponseResource.json), SSE framing (``event:`` = ``type``,
``data: [DONE]`` last), sequence numbers, and the response and item state machines.

Provider items (``vendor:type``, "Extensions" in seed 002) are not in the ``openai``
types: they are checked for the fields every output item has, Switchboard's own
(``switchboard:tool_call``, ``switchboard:approval_request``) for their exact shapes, and
left out of the type check. Items stream one at a time: one is added only once the one
before it is done.
"""

from __future__ import annotations

import json
import re
import typing
from dataclasses import dataclass
from typing import Any

from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel

# ResponseResource.json "required".
RESOURCE_FIELDS = (
    "id",
    "object",
    "created_at",
    "completed_at",
    "status",
    "incomplete_details",
    "model",
    "previous_response_id",
    "instructions",
    "output",
    "error",
    "tools",
    "tool_choice",
    "truncation",
    "parallel_tool_calls",
    "text",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "top_logprobs",
    "temperature",
    "reasoning",
    "user",
    "usage",
    "max_output_tokens",
    "max_tool_calls",
    "store",
    "background",
    "service_tier",
    "metadata",
    "safety_identifier",
    "prompt_cache_key",
)
LIFECYCLE = ("response.created", "response.queued", "response.in_progress")
TERMINAL = ("response.completed", "response.failed", "response.incomplete")
VENDOR_TYPE = re.compile(r"[a-z0-9_-]+:[a-z0-9_]+")
# "content" (always []): so that clients that read unknown items as messages find one.
TOOL_CALL_FIELDS = {"id", "type", "status", "call_id", "name", "arguments", "output", "content"}
APPROVAL_REQUEST_FIELDS = {
    "id",
    "type",
    "status",
    "approval_id",
    "call_id",
    "name",
    "arguments",
    "expires_at",
    "content",
    "effect",
}


def _event_classes() -> dict[str, type[BaseModel]]:
    union = ResponseStreamEvent
    if typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    classes: dict[str, type[BaseModel]] = {}
    for member in typing.get_args(union):
        for name in typing.get_args(member.model_fields["type"].annotation):
            classes[name] = member
    return classes


EVENT_CLASSES = _event_classes()


def is_vendor_item(item: dict[str, Any]) -> bool:
    return ":" in str(item.get("type"))


def check_vendor_item(item: dict[str, Any]) -> None:
    """A provider item: vendor-prefixed type, the item state machine's statuses; an
    approval request with exactly its documented fields."""
    assert VENDOR_TYPE.fullmatch(item["type"]), f"not a vendor-prefixed type: {item['type']}"
    assert item["status"] in ("in_progress", "completed", "incomplete")
    assert isinstance(item["id"], str) and item["id"]
    assert item["content"] == []
    if item["type"] == "switchboard:approval_request":
        assert set(item) == APPROVAL_REQUEST_FIELDS, sorted(item)
        assert item["id"].startswith("apr_") and item["approval_id"].startswith("ap_")
        assert isinstance(json.loads(item["arguments"]), dict)  # a JSON string, as MCP's
    elif item["type"] == "switchboard:tool_call":
        # One of Switchboard's own calls: what the model called, and what it read back.
        assert set(item) == TOOL_CALL_FIELDS, sorted(item)
        assert item["id"].startswith("sbc_") and item["call_id"] and item["name"]
        assert isinstance(json.loads(item["arguments"]), dict)
        if item["status"] == "completed":
            assert isinstance(item["output"], str)
        else:
            assert item["output"] is None
    else:
        raise AssertionError(f"Switchboard sends no item of type {item['type']}")


def check_resource(body: dict[str, Any]) -> Response:
    missing = [name for name in RESOURCE_FIELDS if name not in body]
    assert not missing, f"Response object lacks {missing}"
    assert body["object"] == "response" and body["id"].startswith("resp_")
    for item in body["output"]:
        assert {"id", "type", "status"} <= set(item), f"output item lacks id/type/status: {item}"
        if is_vendor_item(item):
            check_vendor_item(item)
    core = [item for item in body["output"] if not is_vendor_item(item)]
    return Response.model_validate({**body, "output": core})


def _check_event(event: dict[str, Any]) -> None:
    kind = EVENT_CLASSES.get(event["type"])
    assert kind is not None, f"not a spec event type: {event['type']}"
    item = event.get("item")
    if isinstance(item, dict) and is_vendor_item(item):
        check_vendor_item(item)
        # The envelope is the spec's; the item stands in as a core one for the type check.
        event = {
            **event,
            "item": {
                "type": "message",
                "id": item["id"],
                "role": "assistant",
                "status": item["status"],
                "content": [],
            },
        }
    response = event.get("response")
    if isinstance(response, dict):  # its vendor items are checked by check_resource
        event = {
            **event,
            "response": {
                **response,
                "output": [item for item in response["output"] if not is_vendor_item(item)],
            },
        }
    kind.model_validate(event)


@dataclass
class Stream:
    events: list[dict[str, Any]]

    @property
    def types(self) -> list[str]:
        return [event["type"] for event in self.events]

    @property
    def final(self) -> dict[str, Any]:
        return self.events[-1]["response"]


def parse_sse(text: str) -> Stream:
    """Split an SSE body, checking the framing; returns the events in order."""
    blocks = [block for block in text.split("\n\n") if block.strip()]
    assert blocks[-1] == "data: [DONE]", "the stream must end with data: [DONE]"
    events = []
    for block in blocks[:-1]:
        lines = [line for line in block.split("\n") if not line.startswith(":")]
        if not lines:
            continue  # a keep-alive comment
        assert (
            len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: ")
        ), block
        event = json.loads(lines[1][len("data: ") :])
        assert lines[0][len("event: ") :] == event["type"], "event: must match the type"
        assert "id:" not in block.split("\n")[0]  # servers SHOULD NOT use the SSE id field
        events.append(event)
    return Stream(events)


def check_stream(stream: Stream) -> None:
    """Every event valid for its type, in an order the state machines allow."""
    events = stream.events
    for event in events:
        _check_event(event)
        if "response" in event:
            check_resource(event["response"])
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert stream.types[:2] == ["response.created", "response.in_progress"]
    assert stream.types[-1] in TERMINAL
    assert not any(t in TERMINAL for t in stream.types[:-1])
    ids = {e["response"]["id"] for e in events if "response" in e}
    assert len(ids) == 1, "one response per stream"

    items: dict[int, dict[str, Any]] = {}  # output_index → item state
    for event in events[2:-1]:
        kind = event["type"]
        assert kind not in LIFECYCLE
        if kind == "response.output_item.added":
            index = event["output_index"]
            assert index == len(items), "items are added in output order"
            assert index == 0 or items[index - 1]["done"], "an item is added after the last is done"
            assert event["item"]["status"] == "in_progress"
            items[index] = {"item": event["item"], "done": False, "text": "", "args": ""}
            continue
        state = items[event["output_index"]]
        assert not state["done"], f"{kind} after the item was done"
        if "item_id" in event:
            assert event["item_id"] == state["item"]["id"]
        if kind == "response.output_text.delta":
            state["text"] += event["delta"]
        elif kind == "response.output_text.done":
            assert event["text"] == state["text"], "deltas must add up to the done text"
        elif kind == "response.function_call_arguments.delta":
            state["args"] += event["delta"]
        elif kind == "response.function_call_arguments.done":
            assert event["arguments"] == state["args"]
        elif kind == "response.output_item.done":
            assert event["item"]["id"] == state["item"]["id"]
            assert event["item"]["status"] in ("completed", "incomplete")
            state["done"], state["item"] = True, event["item"]
    assert all(state["done"] for state in items.values()), "every item must be done"
    final = stream.final
    assert final["output"] == [items[i]["item"] for i in range(len(items))]
    if any(item["status"] == "incomplete" for item in final["output"]):
        assert final["status"] in ("incomplete", "failed")
