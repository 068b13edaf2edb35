"""The chat always says what became of an approved action (issue 33, item 3).

An approve followed at once by a stop used to end the turn ``approval_resolved(approved)``
→ ``end_of_stream(cancelled)`` with nothing between, whether the email had gone or not.
Now a call that has started runs to its end and its ``tool_output`` is shown before the
end; one the stop came before says it never started. The races are made exact with an
event the tool waits on, and by deciding and stopping with no await between.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import pytest
from agents import Agent, RunContextWrapper
from agents.testing import ScriptedModel, assistant_message, function_call

from app.settings import Settings
from connectors.approvals import ApprovalPolicy, apply_policy
from connectors.context import ChatContext
from connectors.responses import ToolResponse
from connectors.tooling import connector_tool
from tests.support.clients import open_client
from tests.support.models import scripted
from tests.support.servers import LiveServer, serve
from tests.ws.test_turns import assert_turn_order

POSTED: list[str] = []
STARTED = asyncio.Event()
RELEASE = asyncio.Event()


@connector_tool(agent_name="Notes", side_effect=True)
async def post_note(ctx: RunContextWrapper[ChatContext], text: str) -> ToolResponse:
    """Post a note.

    Args:
        text: The note.
    """
    STARTED.set()
    await RELEASE.wait()  # the call is under way: e.g. the mail server is answering
    POSTED.append(text)
    return ToolResponse("note_posted", "Notes", "Posted", {"text": text})


@pytest.fixture
async def live(make_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    POSTED.clear()
    STARTED.clear()
    RELEASE.clear()
    model = ScriptedModel(
        [
            [function_call("post_note", {"text": "hello"}, call_id="p1")],
            [assistant_message("Posted.")],
        ]
    )
    agent = Agent(name="Notes", tools=[post_note])
    apply_policy([agent], ApprovalPolicy())
    async with serve(
        make_settings(suggest_model="offline"), hooks=(scripted(model, agent.tools),)
    ) as server:
        yield server


async def test_a_stop_after_the_approved_call_started_shows_its_output(
    live: LiveServer,
) -> None:
    chat_id = uuid.uuid4().hex
    async with open_client(live.ws_url(chat_id)) as client:
        await client.send({"type": "prompt", "text": "post hello"})
        before = await client.until("approval_required")
        await client.decide(before[-1]["approval_id"])
        await asyncio.wait_for(STARTED.wait(), 20)
        await client.send({"type": "cancel"})
        await client.send({"type": "ping"})  # answered once the cancel was handled
        during = await client.until("pong")
        RELEASE.set()
        after = await client.until("end_of_stream")
    events = before + during + after
    assert_turn_order([e for e in events if e["type"] != "pong"])
    kinds = [e["type"] for e in during + after if e["type"] != "pong"]
    assert kinds == ["approval_resolved", "tool_output", "end_of_stream"]
    output = next(e for e in after if e["type"] == "tool_output")
    assert output["call_id"] == "p1" and output["output"]["response"] == {"text": "hello"}
    assert after[-1]["status"] == "cancelled"
    assert POSTED == ["hello"]  # ran once, and the chat says so
    async with live.client() as http:
        stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
    assert [e["type"] for e in stored if e["type"] == "tool_output"] == ["tool_output"]


async def test_a_stop_before_the_approved_call_started_says_nothing_was_done(
    live: LiveServer,
) -> None:
    chat_id = uuid.uuid4().hex
    async with open_client(live.ws_url(chat_id)) as client:
        await client.send({"type": "prompt", "text": "post hello"})
        asked = (await client.until("approval_required"))[-1]
        turns = live.services.turns
        # Decide, then stop in the same step of the loop: the resumed turn's task exists
        # but has not run, so its run never starts the call.
        await turns.decide("local", chat_id, asked["approval_id"], True, None, "test")
        assert turns.cancel(chat_id)
        after = await client.until("end_of_stream")
    kinds = [e["type"] for e in after]
    assert kinds == ["approval_resolved", "error", "end_of_stream"]
    error = after[1]
    assert error["code"] == "tool_error" and "stopped before it started" in error["message"]
    assert "nothing was done" in error["message"]
    assert after[-1]["status"] == "cancelled"
    assert POSTED == [] and not STARTED.is_set()
