"""``connector_tool``: the one way connector tools are declared.

What it adds over ``agents.function_tool``:

- A tool never raises into the SDK. A ``ToolError`` becomes an ``ErrorResponse`` with its
  (user-safe) message; any other exception is logged with its stack trace and the model
  and the UI get a generic ``Error: …`` card (docs/protocol.md §5: no stack traces, no secrets).
  Bad arguments from the model (schema validation, invalid JSON) also become an
  ``ErrorResponse`` through the SDK's ``failure_error_function`` hook.
- A timeout on every call (the tool's own, else ``SWITCHBOARD_TOOL_TIMEOUT``) →
  ``Error: <tool> timed out …``, reported as a retryable ``tool_timeout``.
- ``blocking=True``: the tool is a plain function calling synchronous client code (a
  vendor SDK on ``requests``); it runs in a worker thread (``connectors.blocking``) under
  the same timeout and the same error handling, and the event loop serves everyone else.
- ``side_effect``: whether calling the tool changes something for the user (sends,
  pays, writes, deletes). Such calls wait for the person's approval
  (``connectors.approvals``); a tool that does not say is treated as having side effects.
- The return value is a ``ToolResult`` (``connectors.tool_result``): the ToolResponse dict,
  which the SDK keeps as ``ToolCallOutputItem.output`` for the UI and storage, whose
  ``str()`` is the plain text the model reads. Validated once, when the response is built.
- Sizes: a result over ``SWITCHBOARD_TOOL_RESULT_MAX_CHARS`` is cut before anything reads
  it (``connectors.result_size``), a call whose arguments are over
  ``SWITCHBOARD_TOOL_ARGUMENT_MAX_CHARS`` is refused before the tool runs
  (``connectors.arguments``).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast, get_origin, get_type_hints, overload

from agents import FunctionTool, RunContextWrapper, function_tool
from pydantic import ValidationError

from connectors.approvals import declare_preview, declare_side_effect
from connectors.arguments import bound_arguments
from connectors.blocking import run_blocking
from connectors.effects import Effect, EffectResolver, call_id_of, executing, ledger_of
from connectors.responses import ErrorResponse, ToolResponse, describe_problems
from connectors.result_size import DEFAULT_MAX_CHARS
from connectors.run_setting import run_setting
from connectors.tool_frames import register_tool
from connectors.tool_result import ToolResult, cap_result, render_for_model

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
# A ``blocking=True`` tool: plain synchronous code, run in a worker thread.
BlockingToolFunc = Callable[..., ToolResponse | dict[str, Any]]
AnyToolFunc = ToolFunc | BlockingToolFunc


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
    return run_setting(_context_of(args), "tool_timeout", DEFAULT_TOOL_TIMEOUT)


def _result_cap(args: tuple[Any, ...]) -> int:
    """The settings' ``tool_result_max_chars``: the most a result may hold."""
    return run_setting(_context_of(args), "tool_result_max_chars", DEFAULT_MAX_CHARS)


def _context_of(args: tuple[Any, ...]) -> object:
    """The turn's context: the first argument is the run context when the tool takes one."""
    return getattr(args[0], "context", None) if args else None


def _takes_context(func: AnyToolFunc) -> bool:
    """Whether the tool's first parameter is the run context, as the SDK decides it."""
    first = next(iter(inspect.signature(func).parameters.values()), None)
    if first is None:
        return False
    try:
        hint = get_type_hints(func).get(first.name, first.annotation)
    except Exception:  # an annotation only a type checker can read: the SDK fails on it too
        return "Context" in str(first.annotation)
    origin = get_origin(hint) or hint
    return isinstance(origin, type) and issubclass(origin, RunContextWrapper)


def _give_context_parameter(wrapper: Any, signature: inspect.Signature) -> None:
    """Make ``wrapper`` take the run context first although the tool does not: the SDK
    passes it (and leaves it out of the schema), and the wrapper reads its settings."""
    context = inspect.Parameter(
        "_context", inspect.Parameter.POSITIONAL_ONLY, annotation=RunContextWrapper[Any]
    )
    wrapper.__signature__ = signature.replace(parameters=[context, *signature.parameters.values()])
    wrapper.__annotations__ = {"_context": RunContextWrapper[Any], **wrapper.__annotations__}


def _turn_id(args: tuple[Any, ...]) -> str | None:
    return getattr(_context_of(args), "turn_id", None)  # for the log line only


def _as_result(agent_name: str, tool_name: str, value: object, max_chars: int) -> ToolResult:
    """What the tool returned as a ``ToolResult``, cut to ``max_chars`` first if over it
    (nothing else has read it yet); a dict is validated, a response is not (it was when
    it was built)."""
    try:
        value = cap_result(value, max_chars)
    except ValidationError:
        pass  # an invalid dict: reported below
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


def _arguments(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The tool's arguments by name (the SDK passes them positionally), its context left out."""
    bound = signature.bind(*args, **kwargs).arguments
    return {name: value for index, (name, value) in enumerate(bound.items()) if index}


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


def _check_kind(func: AnyToolFunc, blocking: bool) -> None:
    """An async tool runs on the event loop, a ``blocking=True`` one in a thread: refuse
    the other mix, which would freeze the loop or never run the coroutine."""
    what = getattr(func, "__qualname__", repr(func))
    is_async = inspect.iscoroutinefunction(func)
    if blocking and is_async:
        raise TypeError(
            f"connector tool {what} is an async function but is declared blocking=True, "
            "which is for plain (synchronous) functions that run in a worker thread: "
            "drop blocking=True (async code already runs on the event loop) or make it a "
            "plain `def` if it calls blocking client code"
        )
    if not blocking and not is_async:
        raise TypeError(
            f"connector tool {what} must be an async function (`async def`), or, if it "
            "calls blocking client code (a vendor SDK, `requests`), a plain function "
            "declared with connector_tool(..., blocking=True), which runs it in a worker "
            "thread instead of freezing the event loop"
        )


def _check_effect(
    func: AnyToolFunc, signature: inspect.Signature, side_effect: bool | None
) -> None:
    """``effect=`` needs a tool that acts and that takes the run context: the resolver
    looks things up for the same user, and the body reads the effect from the call."""
    what = getattr(func, "__qualname__", repr(func))
    if side_effect is False:
        raise TypeError(
            f"connector tool {what} declares effect= but side_effect=False: an effect is "
            "what a call that acts will do, shown before the person approves it"
        )
    first = next(iter(signature.parameters.values()), None)
    if first is None or "Context" not in str(first.annotation):
        raise TypeError(
            f"connector tool {what} declares effect=, so its first parameter must be the run "
            "context (ctx: RunContextWrapper[ChatContext]), which the resolver is given too"
        )


@overload
def connector_tool(
    func: AnyToolFunc,
    *,
    agent_name: str,
    timeout: float | None = None,
    name: str | None = None,
    side_effect: bool | None = None,
    blocking: bool = False,
    effect: EffectResolver | None = None,
) -> FunctionTool: ...


@overload
def connector_tool(
    func: None = None,
    *,
    agent_name: str,
    timeout: float | None = None,
    name: str | None = None,
    side_effect: bool | None = None,
    blocking: bool = False,
    effect: EffectResolver | None = None,
) -> Callable[[AnyToolFunc], FunctionTool]: ...


def connector_tool(
    func: AnyToolFunc | None = None,
    *,
    agent_name: str,
    timeout: float | None = None,
    name: str | None = None,
    side_effect: bool | None = None,
    blocking: bool = False,
    effect: EffectResolver | None = None,
) -> FunctionTool | Callable[[AnyToolFunc], FunctionTool]:
    """Declare a connector tool that returns a ``ToolResponse`` (or its dict).

    The function's signature and Google-style docstring become the (strict) JSON schema,
    exactly as with ``agents.function_tool``. ``agent_name`` labels error cards;
    ``timeout`` (seconds) bounds each call; without it the settings' ``tool_timeout``
    (``SWITCHBOARD_TOOL_TIMEOUT``, 60 s) does, and a call past it is a retryable
    ``tool_timeout``. ``side_effect``: True for a tool that sends,
    pays, writes or deletes, False for one that only reads; left None, the tool is treated
    as having side effects and every call waits for the person's approval.

    The function is ``async`` unless ``blocking=True``: then it is a plain function that
    may block (synchronous client code) and runs in a worker thread. A timed-out thread
    cannot be stopped; it finishes in the background and its result is dropped.

    ``effect``: for a side-effecting tool whose arguments do not say what it will do in
    words a person can check (an id where the person needs an address, a name, an
    amount): ``async def resolve(ctx, **arguments) -> Effect``, run before the person is
    asked, under the same timeout and error handling. The approval card shows the effect,
    and the tool's body executes exactly it (``connectors.effects.effect_of(ctx)``). A
    resolver that fails (``ToolError``, ``NeedsAccount``, …) means the call is not asked:
    it answers with that error and never runs.
    """

    def decorate(inner: AnyToolFunc) -> FunctionTool:
        _check_kind(inner, blocking)
        tool_name = name or inner.__name__
        # A blocking tool's threads: its connector's own pool (named by the connector's agent).
        call = cast(
            ToolFunc, functools.partial(run_blocking, agent_name, inner) if blocking else inner
        )
        signature = inspect.signature(inner)
        if effect is not None:
            _check_effect(inner, signature, side_effect)
        # The wrapper always gets the run context, where the settings' limits are.
        own_context = _takes_context(inner)
        if not blocking:  # it runs on the loop: the watchdog names it if it holds the loop
            register_tool(inner, agent_name, tool_name)

        async def guarded(
            what: str, args: tuple[Any, ...], work: Callable[[], Awaitable[object]]
        ) -> object:
            """``work()``'s value, or the error result the model and the UI get instead."""
            limit = _time_limit(timeout, args)
            try:
                async with asyncio.timeout(limit):
                    return await work()
            except TimeoutError:
                logger.warning(
                    "tool %s timed out after %ss %s(turn %s)%s",
                    tool_name,
                    limit,
                    what,
                    _turn_id(args),
                    # A thread cannot be stopped: say where the call still runs.
                    "; its worker thread cannot be stopped and finishes in the background"
                    if blocking
                    else "",
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
                logger.exception("tool %s failed %s(turn %s)", tool_name, what, _turn_id(args))
                # Only the exception's type: its message may hold secrets (URLs, tokens).
                return error_result(
                    agent_name,
                    f"{tool_name} failed unexpectedly; try again later or try something else",
                    {"tool": tool_name, "exception": type(exc).__name__},
                )

        async def preview(ctx: RunContextWrapper[Any], arguments: dict[str, Any]) -> object:
            """What the call will do (an ``Effect``), or the error result saying why that
            cannot be known: then the call is not asked and answers with that error."""
            assert effect is not None
            return await guarded(
                "looking up what it would do ", (ctx,), lambda: effect(ctx, **arguments)
            )

        @functools.wraps(inner)
        async def wrapper(*given: Any, **kwargs: Any) -> ToolResult:
            args = given if own_context else given[1:]  # what the tool itself takes
            if effect is not None:
                # Exactly what the person approved; resolved now only when nobody was asked.
                ledger, call_id = (
                    (ledger_of(args[0]), call_id_of(args[0])) if args else (None, None)
                )
                approved = ledger.approved.get(call_id) if ledger and call_id else None
                planned = approved or await preview(args[0], _arguments(signature, args, kwargs))
                if not isinstance(planned, Effect):
                    return cast(ToolResult, planned)
                token = executing.set(planned)
                try:
                    value = await guarded("", args, lambda: call(*args, **kwargs))
                finally:
                    executing.reset(token)
            else:
                value = await guarded("", given, lambda: call(*args, **kwargs))
            return _as_result(agent_name, tool_name, value, _result_cap(given))

        if not own_context:
            _give_context_parameter(wrapper, signature)

        tool = bound_arguments(
            function_tool(
                wrapper,
                name_override=tool_name,
                failure_error_function=_failure_function(agent_name, tool_name),
            )
        )
        if effect is not None:
            declare_preview(tool, preview)
        return declare_side_effect(tool, side_effect)

    if func is not None:
        return decorate(func)
    return decorate
