"""An MCP server's tools as the agent's ``FunctionTool``s.

Each MCP tool is wrapped here rather than handed to the SDK through ``Agent.mcp_servers``,
so that it goes through the same paths as every other connector tool: its result is a
ToolResponse (``connectors.mcp.results``), every call has a timeout reported as a retryable
``tool_timeout``, a crash is a ``tool_error`` card (never a failed turn), and approvals
follow the tool's annotations through ``connectors.approvals``:

- ``readOnlyHint: true`` → no side effect, no approval;
- any other annotations (``destructiveHint``, or a write that says it is not) → a side
  effect, approval;
- no annotations at all → undeclared, which asks too (unknown means ask).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import re
from collections.abc import Callable
from typing import Any

from agents import FunctionTool
from agents.tool_context import ToolContext
from mcp.types import Tool

from connectors.approvals import declare_side_effect
from connectors.arguments import bound_arguments
from connectors.context import ChatContext
from connectors.mcp.connection import McpConnection, ServerLost, ToolRefused, Unavailable
from connectors.mcp.results import SOURCE, result_from_call
from connectors.rap.runtime import schema_problem
from connectors.responses import ErrorResponse
from connectors.result_size import DEFAULT_MAX_CHARS
from connectors.tooling import TIMEOUT_CODE, ToolResult, error_result
from connectors.untrusted import fence

logger = logging.getLogger("switchboard.mcp")

# What model APIs accept as a function name.
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")
MAX_DESCRIPTION = 4000


def tool_name(tool: Tool) -> str:
    """The function name the model calls: the MCP name with anything a model API refuses
    (dots, slashes, spaces) replaced by ``_``, at most 64 characters."""
    return _NOT_IN_NAME.sub("_", tool.name)[:64]


def side_effect(tool: Tool) -> bool | None:
    """What the tool's annotations say about side effects (None: they say nothing)."""
    hints = tool.annotations
    if hints is None or (hints.read_only_hint is None and hints.destructive_hint is None):
        return None
    return hints.read_only_hint is not True


def repeatable(tool: Tool) -> bool:
    """Whether calling ``tool`` again after its server crashed mid-call is harmless: its
    annotations say it only reads, or that repeating it changes nothing."""
    hints = tool.annotations
    return hints is not None and (hints.read_only_hint is True or hints.idempotent_hint is True)


def title(tool: Tool) -> str:
    named = tool.title or (tool.annotations.title if tool.annotations else None)
    return named or tool.name.replace("_", " ")


def describe_tool(agent_name: str, tool: Tool) -> str:
    """The progress text of ``tool_call`` ("Running look up on Notes")."""
    return f"Running {title(tool)} on {agent_name}"


def arguments_schema(tool: Tool) -> dict[str, Any]:
    schema = copy.deepcopy(tool.input_schema) if isinstance(tool.input_schema, dict) else {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


# Tool name → the label of another connector that holds it, or None when it is free.
Holder = Callable[[str], str | None]


def usable(connection: McpConnection, holder: Holder | None = None) -> list[Tool]:
    """The server's current tools; one whose model-facing name repeats another's is left
    out (logged), since the model could not tell them apart, and so is one whose name
    another connector holds (``holder`` names it)."""
    tools: dict[str, Tool] = {}
    for tool in connection.tools:
        name = tool_name(tool)
        held = f"another tool is already called {name!r}" if name in tools else None
        if held is None and holder is not None and (taken := holder(name)) is not None:
            held = f"{name!r} is already a tool of {taken}"
        if held is not None:
            logger.error("MCP server %r: tool %r skipped: %s", connection.name, tool.name, held)
            continue
        tools[name] = tool
    return list(tools.values())


def function_tool(connection: McpConnection, agent_name: str, tool: Tool) -> FunctionTool:
    schema = arguments_schema(tool)

    async def on_invoke(ctx: ToolContext[ChatContext], arguments: str) -> ToolResult:
        try:
            limit = getattr(ctx.context.settings, "tool_result_max_chars", DEFAULT_MAX_CHARS)
            return await invoke(connection, agent_name, tool, schema, arguments, limit)
        except Exception as exc:
            # As connector_tool does: a tool never raises into the SDK (that would fail the
            # turn); the trace stays in the log.
            logger.exception("MCP tool %s failed", tool.name, extra={"mcp_server": connection.name})
            return error_result(
                agent_name,
                f"{tool.name} failed unexpectedly; try again later",
                {"mcp_server": connection.name, "exception": type(exc).__name__},
            )

    function = FunctionTool(
        name=tool_name(tool),
        description=(tool.description or title(tool))[:MAX_DESCRIPTION],
        params_json_schema=schema,
        on_invoke_tool=on_invoke,
        # The server's schema is taken as published, not made "strict".
        strict_json_schema=False,
    )
    return declare_side_effect(bound_arguments(function), side_effect(tool))


async def invoke(
    connection: McpConnection,
    agent_name: str,
    tool: Tool,
    schema: dict[str, Any],
    raw_arguments: str,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> ToolResult:
    debug: dict[str, Any] = {"mcp_server": connection.name, "tool": tool.name}
    try:
        arguments = json.loads(raw_arguments or "{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return error_result(
            agent_name, f"the arguments of {tool.name} must be a JSON object", debug
        )
    try:
        problem = schema_problem(schema, arguments)
    except Exception:  # a schema the validator cannot read: the server checks them itself
        problem = None
    if problem is not None:
        return error_result(
            agent_name,
            f"invalid arguments for {tool.name}: {problem}. Fix them to match the tool's schema.",
            debug,
        )
    limit = connection.config.timeout or connection.call_timeout
    again = repeatable(tool)
    # What a client reads in the error event (websocket.stream): a tool_timeout is
    # retryable, any other tool_error is not, so only a timeout's text says to try again.
    try:
        async with asyncio.timeout(limit):
            result = await connection.call(tool.name, arguments, repeatable=again)
    except TimeoutError:
        logger.warning(
            "MCP tool %s timed out after %gs",
            tool.name,
            limit,
            extra={"mcp_server": connection.name},
        )
        restarting = connection.state != "connected"
        connection.suspect()
        what = (
            f"{agent_name} was still being restarted after {limit:g} seconds, so {tool.name} "
            "was given up; try again in a moment"
            if restarting
            else f"{tool.name} did not answer within {limit:g} seconds, so it was given up; "
            "try again in a moment or ask for less"
        )
        return error_result(
            agent_name, what, {**debug, "error_code": TIMEOUT_CODE, "timeout_seconds": limit}
        )
    except Unavailable as exc:
        return error_result(
            agent_name,
            f"{agent_name} is unavailable ({exc}), so {tool.name} was not run; Switchboard "
            "keeps reconnecting to it in the background",
            {**debug, "state": connection.state},
        )
    except ServerLost as exc:
        what = (
            f"the {agent_name} server stopped while running {tool.name} ({exc}), and again "
            "when it was run once more after a restart, so it was given up"
            if again
            else f"the {agent_name} server stopped while running {tool.name} ({exc}), so it "
            "may or may not have done it; it was not run again. Check before asking for it "
            "again"
        )
        return error_result(agent_name, what, {**debug, "lost": str(exc)})
    except ToolRefused as exc:
        return refused(agent_name, tool, str(exc), debug)
    return result_from_call(
        result,
        agent_name=agent_name,
        friendly_name=f"{agent_name}: {title(tool)}",
        debug_info=debug,
        max_chars=max_chars,
    )


def refused(agent_name: str, tool: Tool, message: str, debug: dict[str, Any]) -> ToolResult:
    """The server's JSON-RPC error: its text (a third party's) fenced for the model."""
    shown = " ".join(message.split())[:500] or "no reason given"
    error = ErrorResponse(
        agent_name,
        f"Error: {agent_name} refused {tool.name}: {shown}",
        friendly_name=f"{agent_name}: {title(tool)}",
        debug_info=dict(debug),
    )
    return ToolResult(error, f"Error: the MCP server refused {tool.name}:\n{fence(shown, SOURCE)}")
