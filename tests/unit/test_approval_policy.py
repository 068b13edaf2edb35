"""Which calls wait for approval: declarations, the deployment's policy, start-up checks."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunContextWrapper, function_tool

from app.settings import SettingsError, load_settings
from app.streaming import approval_sweep_interval, check_approval_settings
from connectors.approvals import (
    ApprovalPolicy,
    agent_tools,
    apply_policy,
    approval_required,
    side_effect_of,
)
from connectors.context import ChatContext
from connectors.orchestrator import build_orchestrator
from connectors.rap.config import RapToolDefinition
from connectors.registry import load_connectors
from connectors.responses import ToolResponse
from connectors.tooling import connector_tool

SIDE_EFFECT_TOOLS = {"send_google_email", "reply_to_google_email"}


def specialists(orchestrator: Agent[Any]) -> list[Agent[Any]]:
    return [agent for agent in orchestrator.handoffs if isinstance(agent, Agent)]


def gated(**settings: Any) -> dict[str, bool]:
    config = load_settings(**settings)
    orchestrator = build_orchestrator(config, load_connectors(config))
    return {tool.name: approval_required(tool) for tool in agent_tools(specialists(orchestrator))}


@pytest.mark.parametrize(
    ("mode", "overrides", "side_effect", "asks"),
    [
        ("side_effects", {}, True, True),
        ("side_effects", {}, False, False),
        ("side_effects", {}, None, True),  # unknown means ask
        ("always", {}, False, True),
        ("always", {}, None, True),
        ("off", {}, True, False),
        ("off", {}, None, False),
        ("off", {"t": "ask"}, False, True),
        ("side_effects", {"t": "auto"}, True, False),
        ("always", {"t": "auto"}, False, False),
        ("side_effects", {"other": "ask"}, False, False),
    ],
)
def test_policy_table(
    mode: Any, overrides: dict[str, Any], side_effect: bool | None, asks: bool
) -> None:
    assert ApprovalPolicy(mode, overrides).needs_approval("t", side_effect) is asks


def test_builtin_tools_declare_their_side_effects() -> None:
    config = load_settings()
    orchestrator = build_orchestrator(config, load_connectors(config))
    declared = {tool.name: side_effect_of(tool) for tool in agent_tools(specialists(orchestrator))}
    assert {name for name, value in declared.items() if value is True} == SIDE_EFFECT_TOOLS
    assert None not in declared.values(), "every built-in tool says whether it writes"


def test_default_policy_gates_exactly_the_sending_tools() -> None:
    assert {name for name, asks in gated().items() if asks} == SIDE_EFFECT_TOOLS


def test_modes_and_overrides_reach_the_sdk_flag() -> None:
    assert all(gated(approvals="always").values())
    assert not any(gated(approvals="off").values())
    mixed = gated(approval_overrides="send_google_email=auto,search_google=ask")
    assert mixed["send_google_email"] is False and mixed["search_google"] is True
    assert mixed["reply_to_google_email"] is True


def test_policies_of_two_apps_in_one_process_do_not_leak() -> None:
    # The tool objects of a connector module are shared; each app gets its own copies.
    assert not any(gated(approvals="off").values())
    assert {name for name, asks in gated().items() if asks} == SIDE_EFFECT_TOOLS


async def _noop(ctx: RunContextWrapper[ChatContext]) -> ToolResponse:
    """Do nothing."""
    return ToolResponse("x", "X", "X", {})


def test_undeclared_plugin_and_remote_tools_ask() -> None:
    plain = function_tool(_noop, name_override="plain_tool")
    declared_none = connector_tool(_noop, agent_name="X", name="undeclared_tool")
    reads = connector_tool(_noop, agent_name="X", name="reading_tool", side_effect=False)
    writes = connector_tool(_noop, agent_name="X", name="writing_tool", side_effect=True)
    agent = Agent[ChatContext](name="X", tools=[plain, declared_none, reads, writes])
    apply_policy([agent], ApprovalPolicy())
    asks = {tool.name: approval_required(tool) for tool in agent.tools}
    assert asks == {
        "plain_tool": True,
        "undeclared_tool": True,
        "reading_tool": False,
        "writing_tool": True,
    }
    # The originals are untouched: another app may apply another policy to them.
    assert reads.needs_approval is False and writes.needs_approval is False
    assert all(isinstance(tool, FunctionTool) for tool in agent.tools)


@pytest.mark.parametrize(
    ("toolset_entry", "expected"),
    [
        ({"name": "read_notes"}, None),
        ({"name": "read_notes", "side_effect": False}, False),
        ({"name": "delete_note", "sideEffect": True}, True),
    ],
)
def test_rap_tools_declare_side_effects_in_their_toolset(
    toolset_entry: dict[str, Any], expected: bool | None
) -> None:
    assert RapToolDefinition.model_validate(toolset_entry).side_effect is expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "send_google_email=maybe",
            "SWITCHBOARD_APPROVAL_OVERRIDES (send_google_email): Input should be 'ask' or 'auto'",
        ),
        ("send_google_email", "expected tool_name=ask or tool_name=auto pairs"),
        ("=ask", "expected tool_name=ask or tool_name=auto pairs"),
    ],
)
def test_malformed_overrides_are_refused_with_the_variable_named(value: str, message: str) -> None:
    with pytest.raises(SettingsError, match="SWITCHBOARD_APPROVAL_OVERRIDES") as info:
        load_settings(approval_overrides=value)
    assert message in str(info.value)


def test_overrides_are_case_and_space_tolerant() -> None:
    settings = load_settings(approval_overrides=" send_google_email = AUTO , search_google=ask")
    assert dict(settings.approval_overrides) == {
        "send_google_email": "auto",
        "search_google": "ask",
    }
    with pytest.raises(SettingsError, match="SWITCHBOARD_APPROVALS"):
        load_settings(approvals="sometimes")


def test_an_override_naming_no_tool_stops_the_start_with_the_typo() -> None:
    config = load_settings(approval_overrides="send_gogle_email=auto,frobnicate=ask")
    orchestrator = build_orchestrator(config, load_connectors(config))
    with pytest.raises(SettingsError) as info:
        check_approval_settings(config, orchestrator)
    message = str(info.value)
    assert message.startswith("SWITCHBOARD_APPROVAL_OVERRIDES: ")
    assert "no tool is named 'send_gogle_email' (did you mean 'send_google_email'?)" in message
    assert "no tool is named 'frobnicate'" in message


def test_approvals_off_and_ungated_writers_are_logged_loudly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = load_settings(approvals="off")
    with caplog.at_level(logging.WARNING):
        check_approval_settings(config, build_orchestrator(config, load_connectors(config)))
    assert "APPROVALS ARE OFF" in caplog.text
    ungated = [r for r in caplog.records if r.getMessage().startswith("tools with side")]
    assert sorted(ungated[0].tools) == sorted(SIDE_EFFECT_TOOLS)  # type: ignore[attr-defined]
    caplog.clear()
    config = load_settings()
    with caplog.at_level(logging.WARNING):
        check_approval_settings(config, build_orchestrator(config, load_connectors(config)))
    assert caplog.text == ""


@pytest.mark.parametrize(("timeout", "every"), [(86_400, 60), (120, 30), (1, 0.25), (0.01, 0.2)])
def test_the_expiry_sweep_runs_a_few_times_per_timeout(timeout: float, every: float) -> None:
    assert approval_sweep_interval(timeout) == every
