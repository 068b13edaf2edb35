"""The official AG-UI client from npm (``@ag-ui/client``'s ``HttpAgent``, pinned in
tests/node/package-lock.json) holds a thread with Switchboard: a turn with a tool card
stops at an interrupt, the person approves or declines, the turn goes on (node script:
tests/node/agui_client.mjs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.agui import MULTI, chat_detail, sent_mail
from tests.support.node import NODE_DIR, node_ready, run_node
from tests.support.servers import LiveServer


@pytest.fixture
def node() -> str:
    return node_ready()


def results(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["toolCallId"]: e for e in run["events"] if e["type"] == "TOOL_CALL_RESULT"}


async def test_http_agent_streams_a_tool_card_and_an_approval(
    tokened: LiveServer, node: str
) -> None:
    ada = tokened.tokens["ada"]
    report = await run_node(
        node,
        NODE_DIR / "agui_client.mjs",
        {"AGUI_URL": f"{tokened.http}/ag-ui", "AGUI_TOKEN": ada},
    )

    approve = report["approve"]
    first, second = approve["first"], approve["second"]
    assert first["error"] is None and second["error"] is None
    assert first["types"][0] == "RUN_STARTED" and first["types"][-1] == "RUN_FINISHED"
    calls = {e["toolCallName"]: e["toolCallId"] for e in first["events"] if "toolCallName" in e}
    assert list(calls) == ["search_businesses_at_yelp", "send_google_email"]
    # The tool card, as the client received it.
    card = json.loads(results(first)[calls["search_businesses_at_yelp"]]["content"])
    assert card["response_type"] == "yelp_search_results" and card["response"]
    # The interrupt, as the client holds it, for exactly the email call.
    [interrupt] = approve["interrupts"]
    assert interrupt["reason"] == "tool_call"
    assert interrupt["toolCallId"] == calls["send_google_email"]
    assert first["events"][-1]["outcome"]["type"] == "interrupt"
    # Approved: the email's result comes in the second run, then the answer.
    sent = json.loads(results(second)[calls["send_google_email"]]["content"])
    assert sent["response_type"] == "send_google_email"
    assert second["events"][-1]["outcome"] == {"type": "success"}
    assert approve["pendingAfter"] == []
    # The client's own conversation: the prompt, both calls with their results, the answer.
    roles = [m["role"] for m in approve["messages"]]
    assert roles[0] == "user" and roles[-1] == "assistant"
    tool_answers = {m["toolCallId"] for m in approve["messages"] if m["role"] == "tool"}
    assert tool_answers == set(calls.values())
    assert "bob@example.com" in approve["messages"][-1]["content"]

    reject = report["reject"]
    assert reject["second"]["error"] is None
    assert calls["send_google_email"] not in results(reject["second"])
    assert reject["second"]["events"][-1]["outcome"] == {"type": "success"}

    # A client unaware of the open interrupt gets RUN_ERROR, and the interrupt stays.
    refused = report["refused"]
    assert refused["types"] == ["RUN_ERROR"]
    [error] = refused["events"]
    assert error["code"] == "interrupts_pending"
    [still_open] = refused["open"]
    assert still_open["id"] in error["message"]

    # What the server kept: one email (the approved one), each thread a chat of Ada's.
    [mail] = sent_mail(tokened, tokened.tokens["ada:id"])
    assert mail["to"] == "bob@example.com"
    chat = await chat_detail(tokened, report["threads"]["approve"], ada)
    assert [(t["prompt"], t["status"]) for t in chat["turns"]] == [(MULTI, "completed")]
    [decision] = chat["approvals"]
    assert decision["status"] == "approved" and decision["decided_via"] == "ag-ui"
    paused = await chat_detail(tokened, report["threads"]["paused"], ada)
    assert [t["status"] for t in paused["turns"]] == ["running"]
    assert [a["status"] for a in paused["approvals"]] == ["pending"]
