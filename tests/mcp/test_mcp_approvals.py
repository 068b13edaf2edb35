"""MCP tool annotations drive approvals: ``readOnlyHint`` runs at once; ``destructiveHint``
or no annotation waits for the person, and a rejected call never reaches the server."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from tests.mcp.test_mcp_turns import of_type, script
from tests.support.clients import open_client
from tests.support.mcp import Notes


async def test_a_read_only_tool_runs_without_approval(
    notes: Notes, app: Callable[..., Any]
) -> None:
    model = script(("look_up", {"query": "deploys"}))
    async with app({"notes": notes.entry}, model=model) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("when do we deploy?", approve=False)

    assert of_type(events, "approval_required") == []
    assert of_type(events, "tool_output")[0]["output"]["response_type"] == "mcp_result"


async def test_a_destructive_tool_runs_only_once_approved(
    notes: Notes, app: Callable[..., Any]
) -> None:
    model = script(("delete_note", {"title": "old"}), answer="Deleted.")
    async with app({"notes": notes.entry}, model=model) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            await client.send({"type": "prompt", "text": "delete the old note"})
            asked = (await client.until("approval_required"))[-1]
            await client.decide(asked["approval_id"])
            events = await client.until("end_of_stream")

    assert asked["name"] == "delete_note" and asked["arguments"] == {"title": "old"}
    assert asked["current_agent"] == "Notes"
    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response"] == "Deleted the note 'old'."
    assert events[-1]["status"] == "completed"


async def test_a_tool_without_annotations_asks_and_a_rejection_runs_nothing(
    notes: Notes, app: Callable[..., Any]
) -> None:
    model = script(("add_note", {"title": "t", "body": "b"}), answer="Not added.")
    async with app({"notes": notes.entry}, model=model) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("add a note", approve=False)

    [asked] = of_type(events, "approval_required")
    assert asked["name"] == "add_note"
    assert [e["decision"] for e in of_type(events, "approval_resolved")] == ["rejected"]
    assert of_type(events, "tool_output") == []
    refusal = next(
        item
        for item in model.calls[-1].input
        if isinstance(item, dict)
        and item.get("type") == "function_call_output"
        and item.get("call_id") == "call_add_note"
    )
    assert str(refusal["output"]).startswith("Not run: the user declined this call")
