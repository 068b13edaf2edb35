"""RAP remote tools and approvals: what a toolset declares decides what asks, and a call
that asks is never sent to the tool server before the person approves it."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from tests.fakes.rap_tool import Result
from tests.rap.test_rap_turns import EDIT, of_type, script_call
from tests.support.clients import open_client


async def test_a_declared_write_is_sent_only_after_approval_with_the_shown_arguments(
    rap_stack: Callable[..., Any],
) -> None:
    async with rap_stack() as stack:
        stack.tool.on("edit_file", Result("Replaced app/greet.py."))
        script_call(stack.model, "edit_file", EDIT, "I changed greet().")
        async with open_client(stack.live.ws_url(uuid.uuid4().hex)) as client:
            await client.send({"type": "prompt", "text": "ask Notes to change greet"})
            asked = (await client.until("approval_required"))[-1]
            await client.send({"type": "ping"})
            await client.until("pong")
            assert stack.tool.invocations == []  # paused: the tool server heard nothing
            await client.decide(asked["approval_id"])
            events = await client.until("end_of_stream")

    assert asked["name"] == "edit_file" and asked["arguments"] == EDIT
    assert asked["current_agent"] == "Notes"
    [invocation] = stack.tool.invocations
    assert invocation["operation"] == "edit_file" and invocation["arguments"] == EDIT
    assert of_type(events, "tool_output")[0]["output"]["response"] == "Replaced app/greet.py."
    assert events[-1]["status"] == "completed"


async def test_an_operation_that_declares_nothing_asks_and_a_rejection_sends_nothing(
    rap_stack: Callable[..., Any],
) -> None:
    async with rap_stack() as stack:
        stack.tool.on("watch_repo", Result("Watching acme/api.", subscription=True))
        script_call(stack.model, "watch_repo", {"repo": "acme/api"}, "I won't watch it.")
        async with open_client(stack.live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("ask Notes to watch acme/api", approve=False)

    [asked] = of_type(events, "approval_required")
    assert asked["name"] == "watch_repo"
    assert [e["decision"] for e in of_type(events, "approval_resolved")] == ["rejected"]
    assert stack.tool.invocations == [] and of_type(events, "tool_output") == []
    [request] = stack.model.turn_requests()[-1:]
    refusal = next(
        item
        for item in request.body["input"]
        if item.get("type") == "function_call_output" and item["call_id"] == "call_watch_repo"
    )
    assert refusal["output"].startswith("Not run: the user declined this call")


async def test_a_declared_read_never_asks(rap_stack: Callable[..., Any]) -> None:
    async with rap_stack() as stack:
        stack.tool.on("lookup", Result("Deploys happen on Tuesdays."))
        script_call(stack.model, "lookup", {"query": "deploys"}, "Tuesdays.")
        async with open_client(stack.live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("ask Notes when we deploy", approve=False)

    assert of_type(events, "approval_required") == []
    assert len(stack.tool.invocations) == 1
    assert events[-2]["status"] == "completed"
