"""MCP servers in real turns over the socket: a real notes server (stdio or streamable HTTP)
behind a real Switchboard, driven by the offline demo model or by a scripted SDK model."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.testing import ScriptedModel, assistant_message, function_call

from connectors.untrusted import fence
from tests.mcp.notes_server import STATS
from tests.support.clients import open_client
from tests.support.logs import capture_logs
from tests.support.mcp import Notes, notes_server
from tests.support.servers import LiveServer
from tests.support.waiting import wait_until
from tests.ws.test_turns import assert_turn_order


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def script(*steps: tuple[str, dict[str, Any]], answer: str = "Done.") -> ScriptedModel:
    """Hand off to Notes, call each tool in turn, then answer."""
    calls = [[function_call("transfer_to_notes", {}, call_id="handoff")]]
    calls += [[function_call(name, args, call_id=f"call_{name}")] for name, args in steps]
    return ScriptedModel([*calls, [assistant_message(answer)]])


def read_by_model(model: ScriptedModel, call_id: str) -> str:
    """The output of ``call_id`` as the model read it on its last call."""
    items = model.calls[-1].input
    [output] = [
        item
        for item in items
        if isinstance(item, dict)
        and item.get("type") == "function_call_output"
        and item.get("call_id") == call_id
    ]
    return str(output["output"])


async def run_turn(live: LiveServer, prompt: str, **kwargs: Any) -> list[dict[str, Any]]:
    async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
        events = await client.turn(prompt, **kwargs)
    assert_turn_order(events)
    return events


async def test_a_demo_turn_with_the_offline_model(notes: Notes, app: Callable[..., Any]) -> None:
    async with app({"notes": notes.entry}) as live:
        events = await run_turn(live, "ask Notes to look up deploys")
        async with live.client() as http:
            listed = (await http.get("/api/connectors")).json()["connectors"]

    [call] = of_type(events, "tool_call")
    assert call["name"] == "look_up" and call["current_agent"] == "Notes"
    assert call["description"] == "Running look up on Notes"
    [shown] = of_type(events, "tool_output")
    output = shown["output"]
    assert output["response_type"] == "mcp_result" and output["agent_name"] == "Notes"
    assert output["display_as"][0]["type"] == "markdown"
    assert "Deploys happen on Tuesdays." in output["display_as"][0]["content"]
    assert "debug_info" not in output
    assert of_type(events, "error") == [] and of_type(events, "approval_required") == []
    assert events[-2]["type"] == "end_of_stream" and events[-2]["status"] == "completed"

    entry = next(c for c in listed if c["name"] == "notes")
    assert entry["mode"] == "live" and entry["agent_name"] == "Notes"
    assert entry["server"] == {"state": "connected", "reason": None}
    assert next(c for c in listed if c["name"] == "yelp")["server"] is None  # not remote
    assert "look_up" in [tool["name"] for tool in entry["tools"]]


async def test_a_turn_with_a_scripted_model_reads_structured_content(
    notes: Notes, app: Callable[..., Any]
) -> None:
    model = script(("note_stats", {}), answer="There are 3 notes.")
    async with app({"notes": notes.entry}, model=model) as live:
        events = await run_turn(live, "how many notes are there?")

    [call] = of_type(events, "tool_call")
    assert call["name"] == "note_stats" and call["current_agent"] == "Notes"
    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response"] == STATS
    assert shown["output"]["display_as"][0] == {"type": "json", "content": STATS}
    assert of_type(events, "llm_response")[-1]["text"] == "There are 3 notes."
    # The model read the tool's text, fenced as a third party's data.
    assert read_by_model(model, "call_note_stats") == fence(json.dumps(STATS), "mcp tool")


async def test_an_image_and_a_resource_link_reach_the_card(
    notes: Notes, app: Callable[..., Any]
) -> None:
    model = script(("show_chart", {}))
    async with app({"notes": notes.entry}, model=model) as live:
        events = await run_turn(live, "show me the chart")

    [shown] = of_type(events, "tool_output")
    segments = shown["output"]["display_as"]
    assert [s["type"] for s in segments] == ["markdown", "card", "link"]
    assert segments[1]["content"]["image_url"].startswith("data:image/png;base64,")
    assert segments[2]["content"]["url"] == "https://notes.example.com/report"
    assert "base64" not in read_by_model(model, "call_show_chart")


async def test_an_is_error_result_is_an_error_card_and_the_turn_goes_on(
    notes: Notes, app: Callable[..., Any]
) -> None:
    model = script(("failing_tool", {}), answer="The notes database is locked.")
    async with app({"notes": notes.entry}, model=model) as live:
        events = await run_turn(live, "use the failing tool")

    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response_type"] == "error"
    assert "the notes database is locked" in shown["output"]["error_message"]
    [error] = of_type(events, "error")
    assert error["code"] == "tool_error" and error["retryable"] is False
    assert events[-2]["status"] == "completed"
    assert read_by_model(model, "call_failing_tool").startswith(
        "Error: the MCP tool reported this failure:"
    )


async def test_a_changed_tool_list_reaches_the_agent(notes: Notes, app: Callable[..., Any]) -> None:
    model = script(("add_tool", {}))
    async with app({"notes": notes.entry}, model=model) as live:
        await run_turn(live, "add the archive tool")
        connector = next(c for c in live.services.connectors if c.name == "notes")
        await wait_until(
            lambda: "archive_notes" in connector.tool_descriptions,
            what="the new tool to be listed",
        )
        model.extend(
            [
                [function_call("transfer_to_notes", {}, call_id="handoff2")],
                [function_call("archive_notes", {"title": "old"}, call_id="call_archive")],
                [assistant_message("Archived.")],
            ]
        )
        events = await run_turn(live, "archive the old note")

    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response"] == "Archived 'old'."


async def test_a_tool_that_appears_later_under_a_taken_name_is_left_out(
    notes: Notes, app: Callable[..., Any]
) -> None:
    # search_google is the built-in web search's tool: its progress text and its approval
    # rule must stay the built-in's, and the model must not get two tools of one name.
    model = script(("add_tool", {"name": "search_google"}))
    skipped = "MCP server 'notes': tool 'search_google' skipped: 'search_google' is already a tool"
    with capture_logs(logging.ERROR) as logs:
        async with app({"notes": notes.entry}, model=model) as live:
            await run_turn(live, "add the tool")
            await wait_until(
                lambda: any(r.getMessage().startswith(skipped) for r in logs.errors()),
                what="the clashing tool to be left out",
            )
            served = {c.name: c for c in live.services.connectors}
            model.extend(
                [
                    [function_call("transfer_to_notes", {}, call_id="handoff2")],
                    [assistant_message("Nothing to do.")],
                ]
            )
            await run_turn(live, "what can Notes do now?")

    notes_tools = {tool.name for tool in model.calls[-1].tools}  # what the model was given
    assert "look_up" in notes_tools and "search_google" not in notes_tools
    assert "search_google" not in served["notes"].tool_descriptions
    assert served["search"].tool_descriptions["search_google"] == "Searching the web"
    [line] = {r.getMessage() for r in logs.errors() if r.getMessage().startswith(skipped)}
    assert line.endswith("of connector 'search' of the built-in connectors")


async def test_the_server_gets_its_env_and_none_of_switchboards(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    model = script(("whoami", {}))
    async with (
        notes_server("stdio", tmp_path) as notes,
        app({"notes": notes.entry}, model=model) as live,
    ):
        events = await run_turn(live, "who are you?")

    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response"] == {"secret_set": True, "switchboard_variables": []}
