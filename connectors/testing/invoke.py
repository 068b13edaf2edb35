"""Every tool of a connector's agent, and one call of one of them, as the Agents SDK makes it.

A tool is the agent's own ``FunctionTool`` or one listed by an MCP server of the agent
(``agent.mcp_servers``): ``kit_tools`` connects those servers, lists their tools through
the SDK (``MCPUtil``) and closes them again. ``invoke`` calls a tool through its
``on_invoke_tool``, the SDK's own invocation, under the kit's hard time limit and with
blocking calls on the event loop made errors (``connectors.testing.blocking``), and keeps
what the tool logged, which blocking calls it made and, for an MCP tool, whether the server
answered ``isError``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from agents import Agent, FunctionTool, RunContextWrapper
from agents.mcp import MCPServer, MCPToolCustomDataContext, MCPUtil
from agents.tool import default_tool_error_function
from agents.tool_context import ToolContext

from connectors.approvals import side_effect_of
from connectors.context import ChatContext
from connectors.registry import Connector
from connectors.settings import ConnectorSettings
from connectors.testing.blocking import BlockingError, blocking_calls, blocking_checked

__all__ = [
    "BLOCKING_FIX",
    "KitTool",
    "McpAnswer",
    "Outcome",
    "call_tool",
    "invoke",
    "kit_tools",
    "tools_of",
]

TOOL_LOGGER = "switchboard.connectors.tools"  # where connector_tool logs a crash or a bad result
BLOCKING_FIX = (
    "Nothing else in the server runs while it blocks, and no timeout can cut it short. Await "
    "an async equivalent (asyncio.sleep, the context's httpx client, asyncio.to_thread for "
    "files), or make the tool a plain `def` declared @connector_tool(..., blocking=True), "
    "which runs it in a worker thread."
)


@dataclass(frozen=True)
class McpAnswer:
    """What an MCP server answered to one call (seen through the SDK's custom-data hook)."""

    is_error: bool
    structured_content: Mapping[str, Any] | None


@dataclass(frozen=True)
class KitTool:
    """One tool the model can call, and where it comes from."""

    tool: FunctionTool
    server: str | None = None  # the MCP server that lists it; None: the agent's own tool
    annotations: Any = None  # the MCP tool's ToolAnnotations, if it has any

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def label(self) -> str:
        """How failure messages name it: ``search`` or ``search (MCP server 'notes')``."""
        return self.name if self.server is None else f"{self.name} (MCP server {self.server!r})"

    def side_effect(self) -> bool | None:
        """What it declared: True (changes something), False (only reads), None (nothing)."""
        if self.server is None:
            return side_effect_of(self.tool)
        read_only = _hint(self.annotations, "read_only_hint", "readOnlyHint")
        destructive = _hint(self.annotations, "destructive_hint", "destructiveHint")
        if isinstance(read_only, bool):
            return not read_only
        return destructive if isinstance(destructive, bool) else None

    def source(self) -> str | None:
        """``path:line`` of the Python function behind an agent's own tool."""
        if self.server is not None:
            return None
        try:
            function = inspect.unwrap(getattr(self.tool, "__wrapped__"))  # noqa: B009
            path = inspect.getsourcefile(function)
            line = inspect.getsourcelines(function)[1]
        except (AttributeError, OSError, TypeError):
            return None
        return f"{path}:{line}" if path else None


def _hint(annotations: Any, name: str, wire_name: str) -> Any:
    # mcp 2 names the fields in snake case (aliased to the wire's camel case); mcp 1 did not.
    value = getattr(annotations, name, None)
    return value if value is not None else getattr(annotations, wire_name, None)


@dataclass
class Outcome:
    """One call: what went in, what came out."""

    tool: KitTool
    arguments: dict[str, Any]
    output: object = None
    timed_out: bool = False
    # How long it held the event loop past the time limit: synchronous work that no
    # timeout could cut short (the limit's timer only fires once the loop turns again).
    overran: float | None = None
    logged: list[str] = field(default_factory=list)  # the tool's error log lines
    blocking: list[str] = field(default_factory=list)  # blocking calls it made on the loop
    mcp: McpAnswer | None = None  # for an MCP tool: None when the server gave no answer


class _McpAnswers:
    """Records each MCP answer through the server's ``custom_data_extractor`` (the SDK's
    public hook, called with the result's ``isError``), then defers to the author's own."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, str], McpAnswer] = {}

    def attach(self, server: MCPServer, stack: AsyncExitStack) -> None:
        previous = server.custom_data_extractor

        async def extract(context: MCPToolCustomDataContext) -> Mapping[str, Any] | None:
            self.last[(context.server_name, context.tool_display_name)] = McpAnswer(
                bool(context.is_error), context.structured_content
            )
            if previous is None:
                return None
            value = previous(context)
            return await value if inspect.isawaitable(value) else value

        server.custom_data_extractor = extract

        def restore() -> None:
            server.custom_data_extractor = previous

        stack.callback(restore)


@dataclass
class KitTools:
    """The tools of one agent, with its MCP servers connected while this is open."""

    agent: Agent[ChatContext]
    tools: dict[str, KitTool]
    answers: _McpAnswers


@asynccontextmanager
async def kit_tools(
    connector: Connector, context: ChatContext, connect_timeout: float
) -> AsyncIterator[KitTools]:
    """The agent's tools (its own and its MCP servers'), built for ``context.settings``."""
    agent = connector.build_agent(context.settings)
    tools = {tool.name: KitTool(tool) for tool in agent.tools if isinstance(tool, FunctionTool)}
    answers = _McpAnswers()
    async with AsyncExitStack() as stack:
        run_context = RunContextWrapper(context)
        for server in agent.mcp_servers:
            await _connect(server, connect_timeout)
            stack.push_async_callback(server.cleanup)
            answers.attach(server, stack)
            for tool in await _listed(server, agent, run_context, connect_timeout):
                tools.setdefault(tool.name, tool)
        yield KitTools(agent, tools, answers)


async def _connect(server: MCPServer, time_limit: float) -> None:
    try:
        async with asyncio.timeout(time_limit):
            await server.connect()  # type: ignore[no-untyped-call]  # unannotated in the SDK
    except TimeoutError:
        raise AssertionError(
            f"MCP server {server.name!r} did not connect within {time_limit} s "
            "(the kit's connect_timeout_seconds)"
        ) from None
    except Exception as exc:
        raise AssertionError(
            f"MCP server {server.name!r} could not connect: {type(exc).__name__}: {exc}"
        ) from exc


async def _listed(
    server: MCPServer,
    agent: Agent[ChatContext],
    run_context: RunContextWrapper[ChatContext],
    time_limit: float,
) -> list[KitTool]:
    """The server's tools as the SDK gives them to the model (``MCPUtil``, with the agent's
    ``mcp_config``), each with its MCP annotations."""
    try:
        async with asyncio.timeout(time_limit):
            listed = await server.list_tools(run_context, agent)
    except TimeoutError:
        raise AssertionError(
            f"MCP server {server.name!r} did not list its tools within {time_limit} s"
        ) from None
    strict = bool(agent.mcp_config.get("convert_schemas_to_strict", False))
    failure = agent.mcp_config.get("failure_error_function", default_tool_error_function)
    return [
        KitTool(
            MCPUtil.to_function_tool(
                mcp_tool, server, strict, agent, failure_error_function=failure
            ),
            server.name,
            mcp_tool.annotations,
        )
        for mcp_tool in listed
    ]


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self.blocking: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line += f" [{type(error).__name__}: {error}]"
            # connector_tool logs what a tool raised: a blocking call, among others.
            self.blocking += blocking_calls(error)
        self.lines.append(line)


async def invoke(
    tools: KitTools,
    tool: KitTool,
    context: ChatContext,
    arguments: dict[str, Any],
    time_limit: float,
) -> Outcome:
    """Call ``tool`` exactly as the SDK does (JSON arguments in), for at most ``time_limit``
    seconds, with blocking calls on the event loop made errors."""
    outcome = Outcome(tool, arguments)
    payload = json.dumps(arguments)
    tool_context = ToolContext(
        context, tool_name=tool.name, tool_call_id="call_contract", tool_arguments=payload
    )
    mcp_key = (tool.server or "", tool.name)
    tools.answers.last.pop(mcp_key, None)
    lines = _Lines()
    logger = logging.getLogger(TOOL_LOGGER)
    logger.addHandler(lines)
    started = time.monotonic()
    try:
        with blocking_checked():
            async with asyncio.timeout(time_limit):
                outcome.output = await tool.tool.on_invoke_tool(tool_context, payload)
    except TimeoutError:
        outcome.timed_out = True
    except BlockingError as error:  # raised past the tool's own error handling
        lines.blocking += blocking_calls(error)
    finally:
        logger.removeHandler(lines)
    took = time.monotonic() - started
    if took > time_limit and not outcome.timed_out:
        # Answered, but late: the loop was held, so the limit's timer could not fire.
        outcome.timed_out, outcome.overran = True, took
    outcome.logged = lines.lines
    outcome.blocking = lines.blocking
    if tool.server is not None:
        outcome.mcp = tools.answers.last.get(mcp_key)
    return outcome


# ----------------------------------------------------------------------------- one-off calls


def tools_of(
    connector: Connector, settings: ConnectorSettings | None = None
) -> dict[str, FunctionTool]:
    """The agent's own function tools (not its MCP servers'), by name."""
    agent = connector.build_agent(settings or ConnectorSettings())
    return {tool.name: tool for tool in agent.tools if isinstance(tool, FunctionTool)}


async def call_tool(
    connector: Connector, name: str, context: ChatContext, arguments: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Invoke one of the agent's own tools exactly as the Agents SDK does; a blocking call
    it makes on the event loop raises ``BlockingError`` (``blocking_checked``)."""
    from connectors.testing.arguments import simple_arguments

    tool = tools_of(connector, context.settings)[name]
    given = arguments if arguments is not None else simple_arguments(tool.params_json_schema)
    payload = json.dumps(given)
    lines = _Lines()
    logger = logging.getLogger(TOOL_LOGGER)
    logger.addHandler(lines)
    try:
        with blocking_checked():
            output = await tool.on_invoke_tool(
                ToolContext(
                    context, tool_name=name, tool_call_id="call_contract", tool_arguments=payload
                ),
                payload,
            )
    finally:
        logger.removeHandler(lines)
    assert not lines.blocking, (
        f"{name} blocked the event loop: {'; '.join(lines.blocking)}. {BLOCKING_FIX}"
    )
    assert isinstance(output, dict), (
        f"{name} returned {type(output).__name__}, not a dict: {output!r:.300}"
    )
    return output
