"""``coerce_tool_response``: turn *any* tool output into a valid ToolResponse, so the
stream translators never fail a turn on an odd output. Pure: no I/O; never raises.

A ``ToolResponse`` or a ``ToolResult`` (what ``connector_tool`` returns) is already valid
and is passed on as it is; only other values are validated here.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from connectors.generic_renderers import ERROR_PREFIX
from connectors.responses import (
    ErrorResponse,
    JsonResponse,
    TextResponse,
    ToolResponse,
    describe_problems,
)
from connectors.tool_result import ToolResult

# What the Agents SDK sends the model when a tool raises and no failure function is set.
SDK_TOOL_ERROR_PREFIX = "An error occurred while running the tool"
_REPR_CHARS = 4000


def coerce_tool_output(value: object, agent_name: str) -> dict[str, Any]:
    """``coerce_tool_response`` as the *persisted* dict: it keeps ``debug_info``
    (``to_dict(include_debug=True)``); the socket layer strips it."""
    if isinstance(value, ToolResult):
        return dict(value)
    return coerce_tool_response(value, agent_name).to_dict(include_debug=True)


def coerce_tool_response(value: object, agent_name: str) -> ToolResponse:
    """Turn any tool output into a valid ToolResponse; never raises.

    - a ``ToolResponse`` → itself; a ``ToolResult`` → the response it was built from;
    - a ToolResponse-shaped dict (or a JSON string of one) → validated and normalised
      (key order, unknown keys dropped); if invalid, its core keys with the problems in
      ``debug_info["coerce_error"]``, else an ``ErrorResponse``;
    - an exception → ``ErrorResponse`` naming only the exception type (details in
      ``debug_info``);
    - a string starting with the word ``Error`` (``"Error: x"`` → message ``x``) or the
      Agents SDK's default tool-failure text → ``ErrorResponse``; any other string →
      ``TextResponse``;
    - a pydantic model → its ``model_dump(mode="json")``, then as below;
    - a dict/list/tuple of JSON → ``JsonResponse`` (a top-level ``debug_info`` key of a
      dict moves to ``debug_info``); None/bool/number → ``TextResponse`` of its JSON;
    - anything else → ``TextResponse`` of its ``repr`` (capped).
    """
    agent = agent_name if isinstance(agent_name, str) and agent_name else "Tool"
    try:
        if isinstance(value, ToolResponse):
            return value
        if isinstance(value, ToolResult):
            return value.tool_response
        if isinstance(value, BaseException):
            return _from_exception(value, agent)
        if isinstance(value, str):
            return _from_string(value, agent)
        if ToolResponse.is_tool_response(value):
            return _from_shaped(value, agent)  # type: ignore[arg-type]
        dump = getattr(value, "model_dump", None)
        if callable(dump) and not isinstance(value, type):
            try:
                dumped = dump(mode="json")
            except Exception:
                dumped = None
            if dumped is not None and dumped is not value:
                return coerce_tool_response(dumped, agent)
        if isinstance(value, dict | list | tuple):
            json_response = _from_json(value, agent)
            if json_response is not None:
                return json_response
        elif value is None or isinstance(value, bool | int | float):
            return TextResponse(agent, json.dumps(value))  # NaN/inf: still readable text
        return TextResponse(agent, _capped(repr(value), _REPR_CHARS))
    except Exception as exc:  # a hostile __repr__/model_dump: still a valid response
        return _from_exception(exc, agent)


def _capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [truncated: {len(text) - limit} more characters]"


def _from_string(value: str, agent: str) -> ToolResponse:
    stripped = value.strip()
    if stripped.startswith("{"):
        try:
            parsed = json.loads(stripped)
        except (ValueError, RecursionError):
            parsed = None
        if ToolResponse.is_tool_response(parsed):
            return _from_shaped(parsed, agent)
    if ERROR_PREFIX.match(stripped):
        message = stripped[len("Error:") :].strip() if stripped.startswith("Error:") else stripped
        return ErrorResponse(agent, message or stripped)
    if stripped.startswith(SDK_TOOL_ERROR_PREFIX):
        return ErrorResponse(agent, stripped)
    return TextResponse(agent, value)


def _from_shaped(value: dict[str, Any], agent: str) -> ToolResponse:
    try:
        return ToolResponse.from_dict(value)
    except ValidationError as exc:
        reason = describe_problems(exc)
    # Keep what can be kept: the core keys, dropping the invalid optional ones.
    shown = value.get("display_response", True)
    core: dict[str, Any] = {
        key: value[key] for key in ("response_type", "agent_name", "friendly_name", "response")
    }
    core["display_response"] = (
        shown if isinstance(shown, bool) else bool(shown if isinstance(shown, int) else True)
    )
    if isinstance(value.get("error_message"), str):
        core["error_message"] = value["error_message"]
    try:
        return ToolResponse(**core, debug_info={"coerce_error": reason})
    except ValidationError:
        return ErrorResponse(
            value["agent_name"] or agent,
            "The tool returned a response that could not be shown.",
            debug_info={"coerce_error": reason},
        )


def _from_json(
    value: dict[str, Any] | list[Any] | tuple[Any, ...], agent: str
) -> ToolResponse | None:
    """A ``JsonResponse`` of ``value``, or None when it is not JSON."""
    data: Any = list(value) if isinstance(value, tuple) else value
    debug: dict[str, Any] | None = None
    if isinstance(data, dict) and "debug_info" in data:
        debug = data["debug_info"] if isinstance(data["debug_info"], dict) else None
        data = {key: item for key, item in data.items() if key != "debug_info"}
    try:
        result = JsonResponse(agent, data)
    except ValidationError:
        return None
    if debug is not None:
        try:
            result.debug_info = debug  # validated on assignment
        except ValidationError:
            pass  # kept out: only the data is shown anyway
    return result


def _from_exception(exc: BaseException, agent: str) -> ToolResponse:
    # The message may hold URLs with keys, SQL, paths...: only the type is shown; the
    # details go to debug_info (persisted, never sent on the socket).
    return ErrorResponse(
        agent,
        f"The {agent} tool failed ({type(exc).__name__}).",
        debug_info={
            "exception_type": type(exc).__name__,
            "exception": _capped(str(exc), _REPR_CHARS),
        },
    )
