"""The contract kit over agents whose tools come from an MCP server: a real one built with
the `mcp` package's MCPServer (tests/connectors/mcp_contract_server.py), run over stdio
through the Agents SDK's MCPServerStdio."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from agents import Agent
from agents.mcp import MCPServerStdio

from connectors.context import ChatContext
from connectors.registry import Connector
from connectors.settings import ConnectorSettings
from connectors.testing import ConnectorContract

SERVER = Path(__file__).with_name("mcp_contract_server.py")


def mcp_connector(variant: str) -> Connector:
    def build_agent(settings: ConnectorSettings) -> Agent[ChatContext]:
        server = MCPServerStdio(
            {"command": sys.executable, "args": [str(SERVER), variant]},
            name=f"{variant}-notes",
            client_session_timeout_seconds=30,
        )
        return Agent[ChatContext](
            name="Notes", handoff_description="Finds and adds notes.", mcp_servers=[server]
        )

    return Connector(
        name="notes",
        agent_name="Notes",
        display_name="Notes",
        build_agent=build_agent,
        response_types=("error",),
    )


class TestMcpNotesContract(ConnectorContract):
    """A well-made MCP server passes every test of the kit."""

    connector: ClassVar[Connector] = mcp_connector("good")
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {"find_notes": {"words": "milk"}}


class FlawedNotesContract(ConnectorContract):
    connector: ClassVar[Connector] = mcp_connector("flawed")
    generated_examples: ClassVar[int] = 2
    tool_timeout_seconds: ClassVar[float] = 2.0


async def failure(test: Any) -> str:
    with pytest.raises(AssertionError) as raised:
        await test()
    return str(raised.value)


async def test_the_kit_sees_the_mcp_tools() -> None:
    from connectors.testing.harness import harness

    kit = TestMcpNotesContract()
    async with harness(kit.demo_settings()) as h, kit.tools(h.context()) as found:
        assert {name: tool.server for name, tool in found.tools.items()} == {
            "find_notes": "good-notes",
            "add_note": "good-notes",
        }
        assert [found.tools[name].side_effect() for name in ("find_notes", "add_note")] == [
            False,
            True,
        ]


async def test_an_undocumented_mcp_tool_fails_saying_what_to_add() -> None:
    message = await failure(FlawedNotesContract().test_every_tool_is_documented)
    assert "undocumented (MCP server 'flawed-notes') has no description" in message
    assert "@server.tool(description=...)" in message
    assert "parameter 'text' of undocumented (MCP server 'flawed-notes')" in message
    assert "Annotated[<type>, Field(description=...)]" in message
    assert "ToolAnnotations(readOnlyHint=True)" in message
    # The documented tools are not named.
    assert "explodes (MCP" not in message and "hangs (MCP" not in message


async def test_a_failing_and_a_hanging_mcp_tool_fail_with_their_values() -> None:
    message = await failure(FlawedNotesContract().test_every_tool_returns_a_valid_tool_response)
    assert "explodes (MCP server 'flawed-notes') called with {\"text\": " in message
    assert "answered an isError result" in message
    assert '"Error executing tool explodes"' in message  # what the server said
    assert "hangs (MCP server 'flawed-notes') called with {} did not answer within 2.0 s" in (
        message
    )
