"""What a turn runs with and what it reports: the engine every turn shares, the plan of a
turn started by another front end than the socket, and the outcome of a turn's run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal

from agents import Agent, RunConfig, RunErrorHandlers, TResponseInputItem

from connectors.arguments import DEFAULT_MAX_CHARS
from connectors.context import ChatContext
from websocket.memory import MemoryPolicy
from websocket.ports import FailureReporter
from websocket.tracing import TurnTracer

# (prompt, final text, response_types shown) -> follow-up prompts
SuggestHook = Callable[[str, str, list[str]], Coroutine[Any, Any, list[str]]]
# (user_id, chat_id, turn_id) -> the run context handed to tools
ContextFactory = Callable[[str, str, str], ChatContext]
# (user_id, chat_id, prompt) -> called once after the first turn of a chat completes
TitleHook = Callable[[str, str, str], Awaitable[None]]


@dataclass
class TurnEngine:
    """Everything a turn needs that does not change between turns."""

    orchestrator: Agent[ChatContext]
    run_config: RunConfig
    tool_descriptions: dict[str, str]
    agent_display_names: dict[str, str]
    make_context: ContextFactory
    report_failure: FailureReporter
    suggest: SuggestHook | None = None
    on_first_turn: TitleHook | None = None
    max_model_turns: int = 12
    # The deployment's main model, for the token metrics of agents without one of their own.
    model_name: str = "default"
    # OpenTelemetry (app.telemetry) when configured; None: no tracing work at all.
    tracer: TurnTracer | None = None
    # The model's token budget and the summariser (websocket.memory); None: every turn
    # reads the whole history, as the SDK's sessions do.
    memory: MemoryPolicy | None = None
    # SWITCHBOARD_TOOL_ARGUMENT_MAX_CHARS: longer arguments are refused, and shown cut.
    max_argument_chars: int = DEFAULT_MAX_CHARS


# How a run ends: a turn's final status, or paused to wait for approvals.
RunStatus = Literal["completed", "cancelled", "failed", "paused"]


@dataclass(frozen=True)
class TurnOutcome:
    """How a turn ended (or paused), for ``TurnPlan.finished``."""

    status: RunStatus
    usage: dict[str, int]
    final_text: str
    error: dict[str, Any] | None = None  # the ``error`` event's payload of a failed turn
    # A paused turn's approvals (``approval_required`` payloads), in order.
    approvals: tuple[dict[str, Any], ...] = ()
    # Why the model stopped before it finished its answer (``max_output_tokens``,
    # ``content_filter``): a completed turn whose answer was cut off there.
    incomplete: str | None = None


@dataclass
class TurnPlan:
    """A turn started by another front end than the socket (the Open Responses API).

    ``agent``, ``input`` (model input items) and ``run_config`` replace the orchestrator,
    the prompt text and the engine's run config. ``observe`` sees every SDK stream event
    as it comes (it must neither block nor raise; errors are logged). ``finished`` runs
    once the turn's end (or pause) is committed and before another turn of the chat can
    start here. No suggested prompts are made for such turns. A turn resumed after its
    approvals runs the orchestrator unless a plan gives its ``agent`` again.
    ``error_handlers`` go to the SDK's runner (default: a refusal is the turn's answer).
    """

    agent: Agent[ChatContext] | None = None
    input: list[TResponseInputItem] | None = None
    run_config: RunConfig | None = None
    observe: Callable[[object], None] | None = None
    finished: Callable[[TurnOutcome], Awaitable[None]] | None = None
    error_handlers: RunErrorHandlers[ChatContext] | None = None
