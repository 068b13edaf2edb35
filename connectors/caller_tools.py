"""Tools an API caller defines and runs itself ("externally hosted" function tools of the
Open Responses spec): the model may call them, the caller executes them and sends the
result in its next request.

Switchboard never runs such a call. Each is a ``CallerTool``: a function tool whose
invocation does nothing and whose agent stops the run right after (``stop_at_caller``),
so the turn ends with the call as its last step and the response with its
``function_call`` item. The SDK still records an output for the call, ``PENDING``, the
text the model would read if the run went on; it is never stored (``drop_pending``), so
the caller's real result, sent later, is the only one the conversation ever holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents import FunctionTool, FunctionToolResult, RunContextWrapper, ToolsToFinalOutputResult
from agents.tool_context import ToolContext

from connectors.responses import ToolResponse
from connectors.tool_result import ToolResult

# What the model reads for a caller's call while its result is not there yet.
PENDING = (
    "Pending: this tool runs on the API caller's side; its result comes in the caller's "
    "next request. Do not call it again for this request."
)
CALLER_AGENT = "Caller"


@dataclass
class CallerTool(FunctionTool):
    """A function tool defined by the API caller: calling it only ends the run."""


async def _pending(context: ToolContext[Any], arguments: str) -> ToolResult:
    # Hidden from the chat's socket (display_response=False): the call is shown, its
    # result comes from the caller.
    response = ToolResponse(
        "caller_call", CALLER_AGENT, "Caller's tool", PENDING, display_response=False
    )
    return ToolResult(response, model_text=PENDING)


def caller_tool(
    name: str, description: str | None, parameters: Mapping[str, Any] | None, strict: bool
) -> CallerTool:
    """The caller's function tool definition as a tool the agents can call."""
    schema = dict(parameters) if parameters else {"type": "object", "properties": {}}
    return CallerTool(
        name=name,
        description=description or "",
        params_json_schema=schema,
        on_invoke_tool=_pending,
        strict_json_schema=strict,
    )


def is_caller_tool(tool: object) -> bool:
    return isinstance(tool, CallerTool)


def stop_at_caller(
    context: RunContextWrapper[Any], results: list[FunctionToolResult]
) -> ToolsToFinalOutputResult:
    """``Agent.tool_use_behavior``: the run ends once a caller's tool was called (every
    other call of the same step has run by then); otherwise the model goes on."""
    if any(isinstance(result.tool, CallerTool) for result in results):
        return ToolsToFinalOutputResult(is_final_output=True, final_output="")
    return ToolsToFinalOutputResult(is_final_output=False, final_output=None)


def drop_pending(items: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """``items`` without the placeholder outputs of caller calls (``PENDING``): what a
    turn stores, so that the caller's result is the only output those calls get."""
    return tuple(
        dict(item)
        for item in items
        if not (item.get("type") == "function_call_output" and item.get("output") == PENDING)
    )


def unanswered_calls(items: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """call_id → name of the function calls in ``items`` that have no output."""
    answered = {item.get("call_id") for item in items if item.get("type") == "function_call_output"}
    return {
        str(item.get("call_id")): str(item.get("name"))
        for item in items
        if item.get("type") == "function_call" and item.get("call_id") not in answered
    }
