"""The size caps on a tool's result and on a tool call's arguments (issue 33, items 4, 5).

The pure cutter first (``connectors.result_size``), then the real server: uvicorn, the
SDK runner and the socket, with the SDK's ``ScriptedModel`` standing in for the model
service and the tools declared as a plug-in declares them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from agents import Agent
from agents.testing import ScriptedModel, assistant_message, function_call

from app.settings import Settings
from connectors.approvals import ApprovalPolicy, apply_policy
from connectors.arguments import oversized
from connectors.responses import ToolResponse
from connectors.result_size import cut_fields, size_within
from connectors.tool_result import ToolResult, cap_result
from connectors.tooling import connector_tool
from tests.support.clients import open_client
from tests.support.models import scripted
from tests.support.servers import serve

AGENT = "Pages"
CAP = 262_144  # SWITCHBOARD_TOOL_RESULT_MAX_CHARS' default
HUGE = 20 * 1024 * 1024


# --- the pure cutter ---


def test_the_measure_stops_once_past_the_limit() -> None:
    assert size_within("abc", 10) == 5
    assert size_within({"a": [1, "xy"]}, 100) == size_within({"a": [1, "xy"]}, 1000)
    assert size_within("x" * 11, 10) is None
    # A million items: over the limit after looking at the list's length alone.
    assert size_within([0] * 1_000_000, 1000) is None
    assert size_within([[0] * 400] * 400, 1000) is None


def test_a_result_within_the_cap_is_left_alone() -> None:
    fields = {"response": "x" * 1000, "display_as": [{"type": "text", "content": "y" * 1000}]}
    assert cut_fields(fields, 4096) is None


def test_a_long_text_is_cut_to_its_first_part_and_marked() -> None:
    text = "".join(f"line {n}\n" for n in range(400_000))
    hints = [{"type": "text", "content": "hi"}]
    cut = cut_fields({"response": text, "display_as": hints}, CAP)
    assert cut is not None
    assert cut.fields["truncated"] is True
    assert text.startswith(cut.fields["response"]) and len(cut.fields["response"]) <= CAP
    assert cut.fields["display_as"] == [{"type": "text", "content": "hi"}]  # small: kept whole
    assert f"({len(text) + (size_within(hints, CAP) or 0):,} characters)" in cut.note
    assert "262,144-character limit" in cut.note


def test_a_huge_structure_keeps_its_shape_and_fits_the_cap() -> None:
    rows = [{"id": n, "name": f"row {n}", "tags": ["a", "b"]} for n in range(200_000)]
    payload = {"rows": rows, "count": len(rows)}
    hints = [
        {"type": "markdown", "content": "m" * HUGE},
        {"type": "link", "content": {"url": "https://example.com/" + "p" * HUGE}},
    ]
    cut = cut_fields({"response": payload, "display_as": hints}, CAP)
    assert cut is not None
    kept = cut.fields["response"]
    # The first rows whole; the last one kept may be cut (an object keeps its first keys).
    assert isinstance(kept, dict) and kept["rows"][:-1] == rows[: len(kept["rows"]) - 1]
    assert 0 < len(kept["rows"]) < len(rows)
    # A text hint is cut; half a link is no use, so it is left out.
    assert [hint["type"] for hint in cut.fields["display_as"]] == ["markdown"]
    assert (
        size_within({k: cut.fields[k] for k in ("response", "display_as")}, CAP + 100) is not None
    )
    assert "over the 262,144-character limit (longer than that)" in cut.note


def test_a_cut_result_validates_and_the_model_is_told() -> None:
    response = ToolResponse("text", AGENT, "Page", "p" * HUGE)
    result = cap_result(response, CAP)
    assert isinstance(result, ToolResult) and result.tool_response.truncated is True
    assert result["truncated"] is True and len(result["response"]) <= CAP
    text = str(result)
    assert text.endswith("Say so if it matters, or ask the tool for less.]")
    assert f"({HUGE:,} characters)" in text
    # Within the cap, nothing changes.
    small = ToolResponse("text", AGENT, "Page", "p")
    assert cap_result(small, CAP) is small


def test_the_argument_error_names_the_limit_not_the_value() -> None:
    arguments = json.dumps({"query": "secret-ish zebra " * 5000})
    problem = oversized("web_search", arguments, 65_536)
    assert problem is not None and problem.startswith("Error: web_search was not called")
    assert f"{len(arguments):,} characters, over the limit of 65,536" in problem
    assert "zebra" not in problem
    assert oversized("web_search", '{"query": "short"}', 65_536) is None


# --- end to end: the real server ---


@connector_tool(agent_name=AGENT, side_effect=False)
async def fetch_huge_page(url: str) -> ToolResponse:
    """Fetch a page that turns out to be 20 MB.

    Args:
        url: The page.
    """
    body = "<p>lorem ipsum</p>\n" * (HUGE // 19)
    return ToolResponse(
        "text", AGENT, "Page", body, display_as=[{"type": "markdown", "content": body}]
    )


async def test_a_20_mb_result_is_capped_on_the_socket_and_in_storage(
    make_settings: Callable[..., Settings],
) -> None:
    model = ScriptedModel(
        [
            [function_call("fetch_huge_page", {"url": "https://example.com/"}, call_id="c1")],
            [assistant_message("The page was cut.")],
        ]
    )
    chat_id = uuid.uuid4().hex
    async with serve(make_settings(), hooks=(scripted(model, [fetch_huge_page]),)) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            events = await client.turn("fetch the page")
        async with live.client() as http:
            stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
    sent = next(e for e in events if e["type"] == "tool_output")["output"]
    kept = next(e for e in stored if e["type"] == "tool_output")["output"]
    for output in (sent, kept):
        assert output["truncated"] is True
        assert output["response"].startswith("<p>lorem ipsum</p>\n")
        assert (
            size_within({k: output[k] for k in ("response", "display_as")}, CAP + 100) is not None
        )
    assert events[-2]["status"] == "completed"
    told = json.dumps(model.calls[1].input)
    assert "[cut: this tool" in told and "262,144-character limit" in told
    assert len(told) < 100_000


async def test_a_call_with_oversized_arguments_is_refused_before_the_tool_runs(
    make_settings: Callable[..., Settings],
) -> None:
    ran: list[str] = []

    @connector_tool(agent_name=AGENT, side_effect=False)
    async def web_lookup(query: str) -> ToolResponse:
        """Look something up.

        Args:
            query: What to look up.
        """
        ran.append(query)
        return ToolResponse("text", AGENT, "Lookup", "found")

    paste = "word " * 20_000  # a 100,000-character paste passed on as the query
    model = ScriptedModel(
        [
            [function_call("web_lookup", {"query": paste}, call_id="c1")],
            [function_call("web_lookup", {"query": "three key words"}, call_id="c2")],
            [assistant_message("Done.")],
        ]
    )
    settings = make_settings(tool_argument_max_chars=65_536)
    async with serve(settings, hooks=(scripted(model, [web_lookup]),)) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("summarise this in 3 bullets")
    assert ran == ["three key words"]  # the long call never reached the tool
    # Nor is it sent or stored whole: its tool_call shows its start and its length.
    shown = next(e for e in events if e["type"] == "tool_call")["arguments"]
    assert len(paste) < shown["_chars"] < len(paste) + 20  # the arguments' JSON
    assert shown["_raw"].startswith('{"query":') and len(shown["_raw"]) < 1_100
    outputs: list[Any] = [e["output"] for e in events if e["type"] == "tool_output"]
    refused = outputs[0]
    assert refused["response_type"] == "error"
    message = refused["error_message"] or refused["response"]
    assert "web_lookup was not called" in message and "65,536" in message
    assert "word word" not in json.dumps(refused)
    assert outputs[1]["response"] == "found"
    second_input = json.dumps(model.calls[1].input)
    assert "over the limit of 65,536" in second_input


async def test_an_oversized_call_that_would_wait_for_approval_is_refused_without_asking(
    make_settings: Callable[..., Settings],
) -> None:
    ran: list[str] = []

    @connector_tool(agent_name=AGENT, side_effect=True)
    async def post_note(text: str) -> ToolResponse:
        """Post a note.

        Args:
            text: The note.
        """
        ran.append(text)
        return ToolResponse("text", AGENT, "Posted", "posted")

    paste = "word " * 20_000
    model = ScriptedModel(
        [
            [function_call("post_note", {"text": paste}, call_id="c1")],
            [assistant_message("It was too long to post.")],
        ]
    )
    agent = Agent(name=AGENT, tools=[post_note])
    apply_policy([agent], ApprovalPolicy())  # as the orchestrator's agents get it
    settings = make_settings(tool_argument_max_chars=65_536)
    async with serve(settings, hooks=(scripted(model, agent.tools),)) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("post this whole text as a note")
    # Nobody is asked to approve a call that would be refused once approved.
    assert [e for e in events if e["type"] == "approval_required"] == []
    assert ran == []
    [refused] = [e["output"] for e in events if e["type"] == "tool_output"]
    assert refused["response_type"] == "error"
    assert "post_note was not called" in (refused["error_message"] or refused["response"])
    assert "over the limit of 65,536" in json.dumps(model.calls[1].input)
    assert events[-2]["status"] == "completed"
