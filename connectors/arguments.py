"""The size cap on a tool call's arguments: a call whose arguments are longer is refused
before the tool runs.

A model asked to "summarise this 5,000-word paste in 3 bullets" may pass the whole paste
as a search query: the search service then answers with hundreds of kilobytes, all of it
stored, sent and read again by the model. A call over the cap
(``SWITCHBOARD_TOOL_ARGUMENT_MAX_CHARS``) never reaches the tool: the model reads an error
that names the limit and how far over it the call was, never the value itself, and can
call again with less.

Every function tool gets the check in the same way (``bound_arguments``), as an Agents SDK
tool input guardrail: the SDK runs it with the raw arguments string before it invokes
the tool, so the check is one length test, whatever the arguments hold.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agents import FunctionTool, ToolGuardrailFunctionOutput, tool_input_guardrail
from agents.tool_guardrails import ToolInputGuardrailData

from connectors.result_size import size_within
from connectors.run_setting import run_setting

__all__ = [
    "DEFAULT_MAX_CHARS",
    "argument_limit",
    "bound_arguments",
    "oversized",
    "oversized_params",
]

# Without a run context (tests, scripts): ConnectorSettings' default.
DEFAULT_MAX_CHARS = 65_536


def oversized(tool_name: str, arguments: str, max_chars: int) -> str | None:
    """The error the model reads for arguments over ``max_chars``, or None when within.

    Names the limit and the size, never the value: echoing it would carry it on.
    """
    if len(arguments) <= max_chars:
        return None
    return (
        f"Error: {tool_name} was not called: its arguments were {len(arguments):,} "
        f"characters, over the limit of {max_chars:,}. A tool's arguments say what to look "
        "up or do (a query, an id, a short text), not the material itself: call it again "
        "with far shorter arguments, e.g. a few key words instead of a pasted text, and "
        "work on the user's text yourself."
    )


def oversized_params(tool_name: str, params: Mapping[str, Any], max_chars: int) -> str | None:
    """``oversized`` for arguments the SDK has already parsed (a ``needs_approval`` rule
    sees only those): measured cheaply, then exactly, as compact JSON, when near or over."""
    if size_within(params, max_chars) is not None:
        return None
    compact = json.dumps(params, ensure_ascii=False, separators=(",", ":"))
    return oversized(tool_name, compact, max_chars)


def argument_limit(context: object) -> int:
    """The cap on a call's arguments in the run's settings (``context`` is the turn's)."""
    return run_setting(context, "tool_argument_max_chars", DEFAULT_MAX_CHARS)


@tool_input_guardrail(name="argument_size")
def _argument_size(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
    tool = data.context
    problem = oversized(tool.tool_name, tool.tool_arguments, argument_limit(tool.context))
    if problem is None:
        return ToolGuardrailFunctionOutput.allow()
    return ToolGuardrailFunctionOutput.reject_content(
        problem, output_info={"argument_chars": len(tool.tool_arguments)}
    )


def bound_arguments(tool: FunctionTool) -> FunctionTool:
    """``tool``, whose calls with arguments over the cap are refused before it runs."""
    guardrails: list[Any] = list(tool.tool_input_guardrails or [])
    if _argument_size not in guardrails:
        tool.tool_input_guardrails = [_argument_size, *guardrails]
    return tool
