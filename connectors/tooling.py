"""``connector_tool``: the one way connector tools are declared.

What it adds over ``agents.function_tool``:

- A tool never raises into the SDK. A ``ToolError`` becomes an ``ErrorResponse`` with its
  (user-safe) message; any other exception is logged with its stack trace and the model
  and the UI get a generic ``Error: …`` card (docs/protocol.md §5: no stack traces, no secrets).
  Bad arguments from the model (schema validation, invalid JSON) also become an
  ``ErrorResponse`` through the SDK's ``failure_error_function`` hook.
- A timeout on every call (the tool's own, else ``SWITCHBOARD_TOOL_TIMEOUT``) →
  ``Error: <tool> timed out …``, reported as a retryable ``tool_timeout``.
- ``side_effect``: whether calling the tool changes something for the user (sends,
  pays, writes, deletes). Such calls wait for the person's approval
  (``connectors.approvals``); a tool that does not say is treated as having side effects.
- The return value is a ``ToolResult`` (``connectors.tool_result``): the ToolResponse dict,
  which the SDK keeps as ``ToolCallOutputItem.output`` for the UI and storage, whose
  ``str()`` is the plain text the model reads. Validated once, when the response is built.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast, overload

from agents import FunctionTool, RunContextWrapper, function_tool
from pydantic import ValidationError

from connectors.approvals import declare_side_effect
from connectors.responses import ErrorResponse, ToolResponse, describe_problems
from connectors.tool_result import ToolResult, render_for_model

__all__ = [
    "NeedsAccount",
    "ToolError",
    "ToolResult",
    "connector_tool",
    "error_result",
    "render_for_model",
]

logger = logging.getLogger("switchboard.connectors.tools")

ToolFunc = Callable[..., Awaitable[ToolResponse | dict[str, Any]]]


class ToolError(Exception):
    """A tool failure whose message is safe to show and says what to do next.

    ``raise ToolError("no email with id 123; search the inbox first")`` reaches the model
    and the UI as ``Error: no email with id 123; search the inbox first``. ``debug_info``
    (status codes, request ids; never secrets) is persisted for the chat's owner only.
    """

    def __init__(self, message: str, *, debug_info: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.debug_info = debug_info


class NeedsAccount(Exception):
    """The user must connect an account first; the tool answers with ``card``.

    Raised from anywhere under a tool (typically while picking the backend), so every tool
    of a connector shows the same "Connect" card without repeating the check.
    """

    def __init__(self, card: ToolResponse) -> None:
        super().__init__(card.friendly_name)
        self.card = card


def error_result(
    agent_name: str, message: str, debug_info: dict[str, Any] | None = None
) -> ToolResult:
    """An ``ErrorResponse`` dict; ``message`` gets the ``Error: `` prefix the model expects."""
    text = message.strip() or "unknown error"
    if not text.startswith("Error"):
        text = f"Error: {text}"
    return ToolResult(ErrorResponse(agent_name, text, debug_info=debug_info))


# When a tool is called without a run context (tests, scripts): ConnectorSettings' default.
DEFAULT_TOOL_TIMEOUT = 60.0
# What a timed-out call reports (websocket.stream: a retryable ``tool_timeout`` error).
TIMEOUT_CODE = "tool_timeout"


def _time_limit(timeout: float | None, args: tuple[Any, ...]) -> float:
    """The tool's own timeout, else the settings' ``tool_timeout``: no call is unbounded."""
    if timeout is not None:
        return timeout
    context = getattr(args[0], "context", None) if args else None
    limit = getattr(getattr(context, "settings", None), "tool_timeout", None)
    return limit if isinstance(limit, int | float) else DEFAULT_TOOL_TIMEOUT


def _turn_id(args: tuple[Any, ...]) -> str | None:
    # For the log line only: the first argument is the run context when the tool takes one.
    context = getattr(args[0], "context", None) if args else None
    return getattr(context, "turn_id", None)


def _as_result(agent_name: str, tool_name: str, value: object) -> ToolResult:
    """What the tool returned as a ``ToolResult``; a dict is validated, a response is not
    (it was when it was built)."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, ToolResponse):
        return ToolResult(value)
    if isinstance(value, dict):
        try:
            return ToolResult(ToolResponse.from_dict(cast(dict[str, Any], value)))
        except ValidationError as exc:
            logger.error(
                "tool %s returned an invalid ToolResponse dict: %s",
                tool_name,
                describe_problems(exc),
            )
    else:
        logger.error("tool %s returned %s, not a ToolResponse", tool_name, type(value).__name__)
    return error_result(agent_name, f"{tool_name} returned an invalid result; try another way")


def _failure_function(agent_name: str, tool_name: str) -> Callable[..., Any]:
    """The SDK calls this when it cannot run the tool at all (e.g. invalid arguments)."""

    def failure(_ctx: RunContextWrapper[Any], error: Exception) -> ToolResult:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
        return error_result(
            agent_name,
            f"could not call {tool_name}: {first_line}. "
            "Check the arguments against the tool's schema.",
        )

    return failure


@overload
def connector_tool(
    func: ToolFunc,
    *,
    agent_name: str,
    timeout: float | None = None,
    name: str | None = None,
    side_effect: bool | None = None,
) -> FunctionTool: ...


@overload
def connector_tool(
    func: None = None,
    *,
    agent_name: str,
    timeout: float | None = None,
    name: str | None = None,
    side_effect: bool | None = None,
) -> Callable[[ToolFunc], FunctionTool]: ...


def connector_tool(
    func: ToolFunc | None = None,
    *,
    agent_name: str,
    timeout: float | None = None,
    name: str | None = None,
    side_effect: bool | None = None,
) -> FunctionTool | Callable[[ToolFunc], FunctionTool]:
    """Declare an async connector tool that returns a ``ToolResponse`` (or its dict).

    The function's signature and Google-style docstring become the (strict) JSON schema,
    exactly as with ``agents.function_tool``. ``agent_name`` labels error cards;
    ``timeout`` (seconds) bounds each call; without it the settings' ``tool_timeout``
    (``SWITCHBOARD_TOOL_TIMEOUT``, 60 s) does, and a call past it is a retryable
    ``tool_timeout``. ``side_effect``: True for a tool that sends,
    pays, writes or deletes, False for one that only reads; left None, the tool is treated
    as having side effects and every call waits for the person's approval.
    """

    def decorate(inner: ToolFunc) -> FunctionTool:
        if not inspect.iscoroutinefunction(inner):
            # A sync tool would run on the event loop (or a thread) with no timeout control.
            raise TypeError(f"connector tool {inner.__name__} must be an async function")
        tool_name = name or inner.__name__

        @functools.wraps(inner)
        async def wrapper(*args: Any, **kwargs: Any) -> ToolResult:
            limit = _time_limit(timeout, args)
            try:
                async with asyncio.timeout(limit):
                    value = await inner(*args, **kwargs)
            except TimeoutError:
                logger.warning(
                    "tool %s timed out after %ss (turn %s)", tool_name, limit, _turn_id(args)
                )
                return error_result(
                    agent_name,
                    f"{tool_name} timed out; try again in a moment or ask for less data",
                    {"tool": tool_name, "timeout_seconds": limit, "error_code": TIMEOUT_CODE},
                )
            except NeedsAccount as exc:
                return ToolResult(exc.card)
            except ToolError as exc:
                return error_result(agent_name, str(exc), exc.debug_info)
            except Exception as exc:
                logger.exception("tool %s failed (turn %s)", tool_name, _turn_id(args))
                # Only the exception's type: its message may hold secrets (URLs, tokens).
                return error_result(
                    agent_name,
                    f"{tool_name} failed unexpectedly; try again later or try something else",
                    {"tool": tool_name, "exception": type(exc).__name__},
                )
            return _as_result(agent_name, tool_name, value)

        tool = function_tool(
            wrapper,
            name_override=tool_name,
            failure_error_function=_failure_function(agent_name, tool_name),
        )
        return declare_side_effect(tool, side_effect)

    if func is not None:
        return decorate(func)
    return decorate
