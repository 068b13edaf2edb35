"""What the contract kit finds wrong with a tool, as messages that show the values behind
each failure and say what to change, and where."""

from __future__ import annotations

import json
from typing import Any

from connectors.adapters import to_plain_text
from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.testing.invoke import BLOCKING_FIX, KitTool, Outcome
from connectors.tooling import TIMEOUT_CODE

__all__ = [
    "documentation_problems",
    "outcome_problems",
    "response_problems",
    "show",
    "summary",
]

SHOWN_CHARACTERS = 600  # of one value in a failure message
SHOWN_PROBLEMS = 12  # in one failure message


def show(value: object, limit: int = SHOWN_CHARACTERS) -> str:
    """``value`` as compact JSON (repr when it is not JSON), cut at ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def summary(connector: Connector, what: str, problems: list[str]) -> str:
    """One assertion message for every problem found (the first ``SHOWN_PROBLEMS``)."""
    shown = problems[:SHOWN_PROBLEMS]
    more = len(problems) - len(shown)
    tail = f"\n\n… and {more} more" if more else ""
    count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    body = "\n\n".join(f"- {problem}" for problem in shown)
    return f"{connector.name}: {count} {what}:\n\n{body}{tail}"


# ----------------------------------------------------------------------------- documentation


def documentation_problems(tool: KitTool) -> list[str]:
    """A description, a description of every parameter and a side-effect declaration."""
    where = f" ({tool.source()})" if tool.source() else ""
    problems = []
    if not (tool.tool.description or "").strip():
        fix = (
            "add a docstring to the tool function on the MCP server, or pass "
            "@server.tool(description=...)"
            if tool.server
            else f"add a docstring to `async def {tool.name}(...)`{where}"
        )
        problems.append(
            f"{tool.label} has no description: {fix}. Its first paragraph is what the model "
            "reads to decide when to call the tool."
        )
    properties: dict[str, Any] = tool.tool.params_json_schema.get("properties") or {}
    for parameter, spec in properties.items():
        if isinstance(spec, dict) and str(spec.get("description") or "").strip():
            continue
        if tool.server:
            fix = (
                f"declare it as `{parameter}: Annotated[<type>, Field(description=...)]` in "
                "the MCP tool's signature (pydantic's Field)"
            )
        else:
            fix = (
                f"add it under `Args:` in the docstring of `{tool.name}`{where}, e.g.\n"
                f"      Args:\n          {parameter}: <what it is, with an example>"
            )
        problems.append(f"parameter {parameter!r} of {tool.label} has no description: {fix}")
    if tool.side_effect() is None:
        if tool.server:
            fix = (
                "pass annotations=ToolAnnotations(readOnlyHint=True) to @server.tool(...) if it "
                "only reads, or ToolAnnotations(readOnlyHint=False, destructiveHint=...) if it "
                "changes something"
            )
        else:
            fix = (
                f"write @connector_tool(..., side_effect=False){where} if it only reads, or "
                "side_effect=True if it sends, pays, writes or deletes"
            )
        problems.append(
            f"{tool.label} does not declare whether it has side effects: {fix}. Undeclared, "
            "every call waits for the person's approval."
        )
    return problems


# ----------------------------------------------------------------------------- results


def response_problems(connector: Connector, label: str, output: dict[str, Any]) -> list[str]:
    """What is wrong with a ToolResponse dict a tool returned."""
    if not ToolResponse.is_tool_response(output):
        return [f"{label} returned something that is not a ToolResponse: {show(output)}"]
    try:
        response = ToolResponse.from_dict(output)
    except Exception as exc:
        return [f"{label} returned an invalid ToolResponse ({exc}): {show(output)}"]
    problems = []
    if response.response_type not in connector.response_types:
        problems.append(
            f"{label} returned response_type {response.response_type!r}, which "
            f"{connector.name} does not declare in response_types "
            f"{list(connector.response_types)}: add it there, or return a declared type\n"
            f"  {show(output)}"
        )
    try:
        text = to_plain_text(output)
    except Exception as exc:
        return [*problems, f"{label}: to_plain_text failed ({exc!r}) on {show(output)}"]
    if not (isinstance(text, str) and text.strip()):
        problems.append(f"{label}: to_plain_text gave nothing for {show(output)}")
    elif str(output) != text:
        # The SDK gives the model str(output): a connector_tool's result renders as this text.
        problems.append(
            f"{label}: the model would not read the plain text (it would read "
            f"{show(str(output), 200)}); declare the tool with connectors.tooling.connector_tool"
        )
    return problems


def outcome_problems(
    connector: Connector,
    outcome: Outcome,
    *,
    generated: bool,
    errors_allowed: bool,
    timeout: float,
) -> list[str]:
    """What is wrong with one call: a blocking call on the event loop, a timeout, a crash,
    an invalid result, or an error answer where none was expected (``errors_allowed``: the
    author said generated arguments may be nonsense to this tool)."""
    tool = outcome.tool
    called = f"{tool.label} called with {show(outcome.arguments, 300)}"
    logged = f"\n  the tool logged: {show(outcome.logged, 400)}" if outcome.logged else ""
    if outcome.blocking:
        calls = "\n  ".join(outcome.blocking)
        return [f"{called} blocked the event loop:\n  {calls}\n  {BLOCKING_FIX}"]
    if outcome.overran is not None:
        return [
            f"{called} did not answer within {timeout} s (the kit's tool_timeout_seconds): it "
            f"held the event loop for {outcome.overran:.1f} s, so nothing else could run and "
            "no timeout could cut it short. Move long synchronous work off the loop: "
            "@connector_tool(..., blocking=True) on a plain `def`, or asyncio.to_thread."
        ]
    if outcome.timed_out:
        fix = (
            "An MCP tool must answer in time: never wait on something that may not come."
            if tool.server
            else "A tool must answer in time: give @connector_tool a timeout= below that, and "
            "never wait on something that may not come."
        )
        return [
            f"{called} did not answer within {timeout} s (the kit's tool_timeout_seconds). {fix}"
        ]
    if tool.server is not None and not ToolResponse.is_tool_response(outcome.output):
        # The SDK's rendering of an MCP result (text, content parts, structured JSON).
        return _mcp_problems(outcome, called, generated=generated, errors_allowed=errors_allowed)
    if not isinstance(outcome.output, dict):
        return [
            f"{called} returned {type(outcome.output).__name__}, not a ToolResponse dict: "
            f"{show(outcome.output)}. Declare it with connectors.tooling.connector_tool and "
            "return a ToolResponse."
        ]
    output: dict[str, Any] = outcome.output
    problems = response_problems(connector, called, output)
    if problems or output.get("response_type") != "error":
        return problems
    found = output.get("debug_info")
    debug: dict[str, Any] = found if isinstance(found, dict) else {}
    message = str(output.get("error_message"))
    if debug.get("error_code") == TIMEOUT_CODE:
        return [f"{called} timed out (its own timeout): {show(output)}{logged}"]
    if "exception" in debug:
        return [
            f"{called} raised {debug['exception']}: {message!r}{logged}\n  A tool must not "
            "raise for input it cannot use: raise connectors.tooling.ToolError('what went "
            "wrong and what to do next') instead."
        ]
    if message.startswith(f"Error: {tool.name} returned an invalid result"):
        return [
            f"{called} returned an invalid result (not a valid ToolResponse){logged}\n  the "
            f"model was told: {message!r}"
        ]
    return _unexpected_error(
        called, tool, message, output, generated=generated, errors_allowed=errors_allowed
    )


def _mcp_problems(
    outcome: Outcome, called: str, *, generated: bool, errors_allowed: bool
) -> list[str]:
    if outcome.mcp is None:
        return [
            f"{called} failed: the MCP server gave no answer, the model read {show(outcome.output)}"
        ]
    if not outcome.mcp.is_error:
        return [] if _has_content(outcome.output) else [f"{called} answered nothing"]
    return _unexpected_error(
        called,
        outcome.tool,
        _text_of(outcome.output),
        outcome.output,
        generated=generated,
        errors_allowed=errors_allowed,
    )


def _text_of(output: object) -> str:
    """What the model reads of an MCP answer, as one line."""
    if isinstance(output, dict) and output.get("type") == "text":
        return show(output.get("text"), 300)
    if isinstance(output, list):
        return " | ".join(_text_of(part) for part in output)
    return show(output, 300)


def _has_content(output: object) -> bool:
    """Whether the model reads something: text that is not blank, or any other part."""
    if isinstance(output, dict) and output.get("type") == "text":
        return bool(str(output.get("text") or "").strip())
    if isinstance(output, list):
        return any(_has_content(part) for part in output)
    return bool(output.strip()) if isinstance(output, str) else output is not None


def _unexpected_error(
    called: str,
    tool: KitTool,
    message: str,
    output: object,
    *,
    generated: bool,
    errors_allowed: bool,
) -> list[str]:
    answer = "an isError result" if tool.server else "an error card"
    if not generated:
        return [f"{called} (its sample_arguments) answered {answer}: {message}\n  {show(output)}"]
    if errors_allowed:
        return []
    return [
        f"{called} (generated from its JSON schema) answered {answer}: {message}\n"
        f"  {show(output)}\n  If this input is nonsense to the tool (an unknown id, say) and "
        "the error is the right answer, say so in your ConnectorContract: give "
        f"sample_arguments = {{{tool.name!r}: {{...}}}} that must succeed (generated arguments "
        "may then be refused), or declare errors_allowed_for_generated = "
        f"{{{tool.name!r}}}."
    ]
