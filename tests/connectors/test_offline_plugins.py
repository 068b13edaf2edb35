"""The offline demo model demos any connector (issue 17): plug-ins are routed without being
named, the right tool is picked, its arguments are read from the prompt, a hidden lookup is
chained into the tool that needs it, a write waits for approval, and the answer says what
was found or done. Through the real Agents SDK runner, and once over the real socket with
the plug-in installed as a real distribution (an entry point)."""

from __future__ import annotations

import importlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agents import RunConfig, Runner
from agents.result import RunResultStreaming

from app.llm.offline import OfflineModelProvider, offline_suggestions
from app.llm.offline_knowledge import OfflineKnowledge
from app.settings import Settings, load_settings
from connectors.context import ChatContext, DemoStore
from connectors.names import ENTRY_POINT_GROUP
from connectors.orchestrator import build_orchestrator
from connectors.registry import load_connectors
from tests.support.clients import open_client
from tests.support.offline_plugins import recipes, tracker
from tests.support.servers import serve

SETTINGS = Settings()
CONNECTORS = [*load_connectors(SETTINGS), tracker, recipes]


@dataclass
class Turn:
    result: RunResultStreaming
    store: DemoStore
    agents: list[str] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    approvals: list[str] = field(default_factory=list)

    @property
    def answer(self) -> str:
        return str(self.result.final_output)


async def run_turn(prompt: str, *, approve: bool = True) -> Turn:
    store = DemoStore()
    context = ChatContext("user-1", "chat-1", "turn-1", SETTINGS, store.for_user("user-1"))
    orchestrator = build_orchestrator(SETTINGS, CONNECTORS)
    config = RunConfig(
        model_provider=OfflineModelProvider(connectors=CONNECTORS), tracing_disabled=True
    )
    result = Runner.run_streamed(orchestrator, input=prompt, context=context, run_config=config)
    turn = Turn(result, store)
    await _record(turn, result)
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            turn.approvals.append(item.name)
            if approve:
                state.approve(item)
            else:
                state.reject(item, rejection_message="Not run: the user declined this call.")
        result = turn.result = Runner.run_streamed(orchestrator, state, run_config=config)
        await _record(turn, result)
    return turn


async def _record(turn: Turn, result: RunResultStreaming) -> None:
    async for event in result.stream_events():
        if event.type == "agent_updated_stream_event":
            if turn.agents[-1:] != [event.new_agent.name]:  # a resumed run restates its agent
                turn.agents.append(event.new_agent.name)
        elif event.type != "run_item_stream_event":
            continue
        elif event.name == "tool_called":
            raw = event.item.raw_item
            turn.calls.append((raw.name, json.loads(raw.arguments)))
        elif event.name == "tool_output":
            turn.outputs.append(event.item.output)


# ----------------------------------------------------------------------------- with hints


async def test_a_plugin_read_is_routed_and_its_project_looked_up_first() -> None:
    turn = await run_turn("what's broken in the Apollo project?")

    assert turn.agents == ["Switchboard", "Tracker"]  # never named: routed by what it does
    assert turn.calls == [
        ("find_project", {"name": "Apollo"}),
        ("list_issues", {"project_id": "PRJ-7", "state": "open"}),
    ]
    lookup, issues = turn.outputs
    assert lookup["display_response"] is False
    assert [issue["title"] for issue in issues["response"]] == [
        "Login fails on Safari",
        "Slow dashboard",
    ]
    assert turn.answer.startswith(
        "I found 2 issues: **Login fails on Safari** and **Slow dashboard**."
    )
    assert "PRJ-7" not in turn.answer  # the hidden lookup is not narrated


async def test_an_enum_named_in_the_prompt_is_passed() -> None:
    turn = await run_turn("list the closed issues in Apollo")
    assert turn.calls[-1] == ("list_issues", {"project_id": "PRJ-7", "state": "closed"})
    assert "Typo on the pricing page" in turn.answer


async def test_a_plugin_write_chains_the_lookup_and_waits_for_approval() -> None:
    turn = await run_turn("file a bug in Gemini titled 'Crash on start'")

    assert turn.agents == ["Switchboard", "Tracker"]
    assert turn.calls == [
        ("find_project", {"name": "Gemini"}),
        ("create_issue", {"project_id": "PRJ-9", "title": "Crash on start", "body": None}),
    ]
    assert turn.approvals == ["create_issue"]  # side_effect=True: the person decides
    created = turn.outputs[-1]["response"]
    assert created == {
        "id": "ISS-11",
        "project_id": "PRJ-9",
        "title": "Crash on start",
        "state": "open",
    }
    assert turn.store.for_user("user-1").namespace("tracker")["PRJ-9"][-1] == created
    assert turn.answer == (
        "I created the issue: id ISS-11, project id PRJ-9, title Crash on start, state open. "
        "Want me to file another one?"
    )


async def test_a_declined_plugin_write_is_not_run_and_the_answer_says_so() -> None:
    turn = await run_turn("file a bug in Gemini titled 'Crash on start'", approve=False)
    assert turn.approvals == ["create_issue"]
    assert turn.store.for_user("user-1").namespace("tracker").get("PRJ-9") is None
    assert turn.answer.startswith("OK, I didn't create the issue: you declined it")


async def test_an_unknown_project_stops_before_the_write() -> None:
    turn = await run_turn("file a bug in Zeus titled 'Crash on start'")
    assert [name for name, _ in turn.calls] == ["find_project"]
    assert turn.approvals == []
    assert "no project is called 'Zeus'" in turn.answer
    assert "I couldn't find the project id to create the issue." in turn.answer


def test_suggestions_come_from_the_plugin_hints() -> None:
    knowledge = OfflineKnowledge.of(CONNECTORS)
    assert offline_suggestions("list issues", ["tracker_issues"], knowledge) == [
        "File a bug in Apollo",
        "Show the closed issues",
    ]
    only_tracker = OfflineKnowledge.of([tracker])
    assert offline_suggestions("hi", [], only_tracker) == ["List the open issues in Apollo"]


# ----------------------------------------------------------------------------- no hints


async def test_a_plugin_without_hints_is_routed_by_its_description() -> None:
    turn = await run_turn("find recipes with mushrooms that take under 20 minutes")

    assert turn.agents == ["Switchboard", "Recipes"]
    assert turn.calls == [("search_recipes", {"query": "mushrooms", "max_minutes": 20})]
    assert [r["name"] for r in turn.outputs[0]["response"]] == ["Mushroom toast"]
    assert turn.answer.startswith("I found 1 recipe: **Mushroom toast**.")


async def test_a_plugin_without_hints_chains_a_lookup_by_argument_name() -> None:
    turn = await run_turn("show me the recipe for lentil soup")

    assert [name for name, _ in turn.calls] == ["search_recipes", "get_recipe"]
    assert turn.calls[1][1] == {"recipe_id": "R-3"}  # read back from the search's output
    assert turn.outputs[-1]["response"]["name"] == "Lentil soup"
    assert turn.answer.startswith("Here's what I found: id R-3, name Lentil soup")


async def test_builtins_keep_their_routes_beside_plugins() -> None:
    turn = await run_turn("find sushi in Boston")
    assert turn.agents == ["Switchboard", "Yelp"]
    assert [name for name, _ in turn.calls] == ["search_businesses_at_yelp"]


# ----------------------------------------------------------------------------- the socket


@pytest.fixture
def installed_tracker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The tracker as an installed distribution: a .dist-info with its entry point."""
    info = tmp_path / "switchboard_tracker-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: switchboard-tracker\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\ntracker = tests.support.offline_plugins:tracker\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield


async def test_a_plugin_write_over_the_socket(
    installed_tracker: None, database_url: str, tmp_path: Path
) -> None:
    settings = load_settings(database_url=database_url, data_dir=tmp_path / "data")
    async with serve(settings) as live:
        assert "tracker" in [connector.name for connector in live.services.connectors]
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("file a bug in Gemini titled 'Crash on start'")

    assert events[-2]["type"] == "end_of_stream" and events[-2]["status"] == "completed"
    assert [e["new_agent"] for e in events if e["type"] == "agent_updated"] == ["Tracker"]
    called = [(e["name"], e["arguments"]) for e in events if e["type"] == "tool_call"]
    assert called == [
        ("find_project", {"name": "Gemini"}),
        ("create_issue", {"project_id": "PRJ-9", "title": "Crash on start", "body": None}),
    ]
    (asked,) = [e for e in events if e["type"] == "approval_required"]
    assert (asked["name"], asked["description"]) == ("create_issue", "Filing an issue")
    resolved = [e["decision"] for e in events if e["type"] == "approval_resolved"]
    assert resolved == ["approved"]
    answer = next(e["text"] for e in events if e["type"] == "llm_response")
    assert "I created the issue" in answer and "Crash on start" in answer
    assert events[-1]["type"] == "suggested_prompts"
