"""An approval runs exactly what it showed (issue 33, item 1): what the call would do is
looked up again when the person approves; if it changed meanwhile the person is asked
again, and nothing runs on the old approval.

A real server and socket, the real SDK runner with a scripted model, and a connector tool
whose effect depends on state the test changes (as a reconnected account would change the
address mail goes out from).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from agents import Agent, RunContextWrapper
from agents.testing import ScriptedModel, assistant_message, function_call

from app.settings import Settings
from connectors.approvals import ApprovalPolicy, apply_policy
from connectors.context import ChatContext
from connectors.effects import Effect, effect_of
from connectors.responses import ToolResponse
from connectors.tooling import ToolError, connector_tool
from tests.support.clients import open_client
from tests.support.models import scripted
from tests.support.servers import LiveServer, serve
from websocket.protocol import validate_server_event

ACCOUNT: dict[str, str] = {}
POSTED: list[tuple[str, str]] = []


async def resolve_post(ctx: RunContextWrapper[ChatContext], text: str) -> Effect:
    account = ACCOUNT.get("as")
    if account is None:
        raise ToolError("the notes account is not reachable")
    return Effect(f"post a note as {account}", (("As", account),), {"as": account})


@connector_tool(agent_name="Notes", side_effect=True, effect=resolve_post)
async def post_note(ctx: RunContextWrapper[ChatContext], text: str) -> ToolResponse:
    """Post a note.

    Args:
        text: The note.
    """
    account = effect_of(ctx).plan["as"]
    POSTED.append((account, text))
    return ToolResponse("note_posted", "Notes", "Posted", {"as": account, "text": text})


@pytest.fixture
async def live(make_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    ACCOUNT.clear()
    ACCOUNT["as"] = "ann@example.com"
    POSTED.clear()
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


def fields(event: dict[str, Any]) -> dict[str, str]:
    return {f["label"]: f["value"] for f in event["effect"]["fields"]}


async def test_a_changed_effect_is_asked_again_and_the_old_approval_runs_nothing(
    live: LiveServer,
) -> None:
    async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
        await client.send({"type": "prompt", "text": "post hello"})
        first = (await client.until("approval_required"))[-1]
        assert fields(first) == {"As": "ann@example.com"}

        ACCOUNT["as"] = "bob@example.com"  # e.g. another account connected meanwhile
        await client.decide(first["approval_id"])
        # Published before the refusal of the decision that found the change.
        resolved, again, error = await client.until("error")
        assert (error["code"], error["approval_id"], error["retryable"]) == (
            "invalid_request",
            first["approval_id"],
            False,
        )
        assert "changed" in error["message"] and "nothing was run" in error["message"]
        for event in (resolved, again):
            validate_server_event(event)
        assert (resolved["type"], resolved["decision"], resolved["decided_via"]) == (
            "approval_resolved",
            "superseded",
            "changed",
        )
        assert resolved["approval_id"] == first["approval_id"]
        assert again["type"] == "approval_required" and again["call_id"] == first["call_id"]
        assert again["approval_id"] != first["approval_id"]
        assert fields(again) == {"As": "bob@example.com"}
        assert POSTED == []
        # The old approval stays decided; the new one runs what it shows.
        await client.decide(first["approval_id"])
        refused = (await client.until("error"))[-1]
        assert "already superseded" in refused["message"]
        await client.decide(again["approval_id"])
        after = await client.until("end_of_stream")
    [output] = [e for e in after if e["type"] == "tool_output"]
    assert output["output"]["response"] == {"as": "bob@example.com", "text": "hello"}
    assert after[-1]["status"] == "completed"
    assert POSTED == [("bob@example.com", "hello")]


async def test_an_effect_that_cannot_be_checked_now_keeps_the_approval_pending(
    live: LiveServer,
) -> None:
    async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
        await client.send({"type": "prompt", "text": "post hello"})
        asked = (await client.until("approval_required"))[-1]
        del ACCOUNT["as"]
        await client.decide(asked["approval_id"])
        error = (await client.until("error"))[-1]
        assert (error["code"], error["retryable"]) == ("server_error", True)
        assert "the notes account is not reachable" in error["message"]
        assert POSTED == []
        # Once it can be checked (and is unchanged), the same approval runs.
        ACCOUNT["as"] = "ann@example.com"
        await client.decide(asked["approval_id"])
        after = await client.until("end_of_stream")
    assert [e["decision"] for e in after if e["type"] == "approval_resolved"] == ["approved"]
    assert POSTED == [("ann@example.com", "hello")]
