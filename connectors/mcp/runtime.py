"""The MCP side of the app: one ``McpConnection`` per configured server, each a connector.

One ``McpRuntime`` per app (``app.services.start_services``): ``start`` connects every
server (a server that cannot start is logged and keeps being retried; the app starts
anyway), ``connectors`` gives each one's ``Connector`` and ``aclose`` shuts them down.

A server's agent is built once, but its tools follow the server: when the tool list
changes (a ``list_changed`` notification, a reconnection) every agent built for it gets
the new tools, with the approval policy applied again, and the connector's
``tool_descriptions`` (what ``GET /api/connectors`` lists) are updated in place.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from agents import Agent, RunContextWrapper
from mcp.types import Tool

from connectors.approvals import apply_policy
from connectors.context import ChatContext
from connectors.mcp.connection import Backoff, McpConnection
from connectors.mcp.results import RESPONSE_TYPE
from connectors.mcp.tools import Holder, describe_tool, function_tool, tool_name, usable
from connectors.registry import Connector, Health, Namespace
from connectors.settings import ConnectorSettings

logger = logging.getLogger("switchboard.mcp")

INSTRUCTIONS = """\
You are {agent}, the agent of the MCP server "{server}"{about}.

Your tools run on that server. Use them for what the user asks that they cover, with
arguments that follow each tool's schema. A result that starts with "Error" means the
tool failed: say what failed and what to try next. If a tool did not answer in time or
its server stopped, say so; do not pretend it finished."""

UNAVAILABLE = """\
The server is unavailable right now ({reason}), so you have no tools. Tell the user that
{agent} cannot be reached at the moment and to try again shortly; do not make up results."""


@dataclass(frozen=True)
class ServerStatus:
    """What ``McpRuntime.status`` reports for one server (for listings and health)."""

    name: str
    transport: str
    state: str
    reason: str | None
    tools: tuple[str, ...]


class McpRuntime:
    def __init__(self, settings: ConnectorSettings, *, backoff: Backoff | None = None) -> None:
        self.settings = settings
        self.connections = {
            name: McpConnection(config, settings.tool_timeout, backoff=backoff)
            for name, config in settings.mcp_servers.items()
        }
        self._agents: dict[str, list[Agent[ChatContext]]] = {name: [] for name in self.connections}
        self._descriptions: dict[str, dict[str, str]] = {}
        self._built: dict[str, Connector] = {}
        self._namespace: Namespace | None = None
        self._guarded: set[str] = set()

    async def start(self) -> None:
        """Start every connection and wait for each one's first attempt (each bounded by
        its ``connect_timeout``); those that failed go on retrying in the background."""
        for connection in self.connections.values():
            connection.on_tools_changed(partial(self._tools_changed, connection.name))
            connection.start()
        await asyncio.gather(*(c.first_attempt() for c in self.connections.values()))

    async def aclose(self) -> None:
        await asyncio.gather(*(c.aclose() for c in self.connections.values()))

    def status(self) -> list[ServerStatus]:
        return [
            ServerStatus(
                name=c.name,
                transport=c.config.transport,
                state=c.state,
                reason=c.reason,
                tools=tuple(tool.name for tool in c.tools),
            )
            for c in self.connections.values()
        ]

    # ------------------------------------------------------------------ connectors

    def guard(self, namespace: Namespace) -> None:
        """Check tools that appear after start-up (a server that connects late or changes
        its list) against the names the other connectors hold: such a tool is left out."""
        admitted = {id(connector) for connector in namespace.connectors()}
        self._namespace = namespace
        self._guarded = {name for name in self.connections if id(self._built.get(name)) in admitted}
        for name in self._guarded:
            self._tools_changed(name)

    def _holder(self, server: str) -> Holder | None:
        # Before registration admit_remote checks the list as a whole; a refused server
        # claims nothing (it is stopped).
        if self._namespace is None or server not in self._guarded:
            return None
        return partial(self._namespace.claim_tool, server)

    def connectors(self) -> list[tuple[Connector, list[str]]]:
        """A connector per server, with its tool names as known now, for the one namespace
        every connector name lives in (``connectors.registry.Registration.admit_remote``).
        A server that is down has no tools yet; they arrive when it connects."""
        return [
            (self._connector(connection), [tool_name(tool) for tool in connection.tools])
            for connection in self.connections.values()
        ]

    def retain(self, served: Iterable[Connector]) -> None:
        """Stop the connections of servers whose connectors are not among ``served`` (their
        names were taken): nothing would call them."""
        kept = {id(connector) for connector in served}
        for name, connection in self.connections.items():
            if id(self._built.get(name)) not in kept:
                connection.stop()

    def _connector(self, connection: McpConnection) -> Connector:
        agent_name = connection.config.agent_name
        descriptions = self._descriptions.setdefault(connection.name, {})
        descriptions.update(self._describe(connection, connection.tools))

        def build_agent(settings: ConnectorSettings) -> Agent[ChatContext]:
            del settings  # the runtime already holds them
            agent = self.build_agent(connection)
            self._agents[connection.name].append(agent)
            return agent

        connector = Connector(
            name=connection.name,
            agent_name=agent_name,
            display_name=agent_name,
            build_agent=build_agent,
            tool_descriptions=descriptions,
            response_types=(RESPONSE_TYPE, "error"),
            mode="live",
            health=lambda: Health(connection.state, connection.reason),
        )
        self._built[connection.name] = connector
        return connector

    def build_agent(self, connection: McpConnection) -> Agent[ChatContext]:
        config = connection.config
        about = f" ({config.description.strip()})" if config.description else ""
        instructions = INSTRUCTIONS.format(agent=config.agent_name, server=config.name, about=about)

        def current(_ctx: RunContextWrapper[ChatContext], _agent: Agent[Any]) -> str:
            if connection.state == "connected":
                return instructions
            reason = connection.reason or "it is connecting"
            return f"{instructions}\n\n{UNAVAILABLE.format(reason=reason, agent=config.agent_name)}"

        tools = usable(connection, self._holder(config.name))
        return Agent[ChatContext](
            name=config.agent_name,
            handoff_description=self._handoff_description(connection, tools),
            instructions=current,
            tools=[function_tool(connection, config.agent_name, tool) for tool in tools],
        )

    @staticmethod
    def _handoff_description(connection: McpConnection, tools: Iterable[Tool]) -> str:
        config = connection.config
        summary = config.description or ", ".join(tool.name for tool in tools)
        return f"Tools of {config.agent_name} (MCP): {summary or 'none yet'}"[:1000]

    @staticmethod
    def _describe(connection: McpConnection, tools: Iterable[Tool]) -> dict[str, str]:
        agent_name = connection.config.agent_name
        return {tool_name(tool): describe_tool(agent_name, tool) for tool in tools}

    def _tools_changed(self, name: str) -> None:
        """Give every agent built for server ``name`` its current tools, gated again."""
        connection = self.connections[name]
        tools = usable(connection, self._holder(name))
        descriptions = self._descriptions.get(name)
        if descriptions is not None:
            descriptions.clear()
            descriptions.update(self._describe(connection, tools))
        for agent in self._agents[name]:
            agent_name = connection.config.agent_name
            agent.tools = [function_tool(connection, agent_name, tool) for tool in tools]
            apply_policy([agent], self.settings.approval_policy)
            agent.handoff_description = self._handoff_description(connection, tools)
