"""The agent graph one response runs: the orchestrator with the caller's ``instructions``,
the caller's own function tools and ``tool_choice`` applied. Pure: agents are cloned,
never changed.

Two kinds of tools (the spec's "externally" and "internally hosted"):

- the caller's function tools (``tools``): every agent of the graph may call them; a call
  ends the run (``connectors.caller_tools``), so the response ends with its
  ``function_call`` item and the caller sends the result in the next request;
- Switchboard's own tools, held by the connector agents the orchestrator hands off to:
  they run here, and come back as ``switchboard:tool_call`` items. ``switchboard:tool``
  entries in ``tools`` keep only the tools they name.

``tool_choice`` on that graph:

- ``auto``: the graph as it is.
- ``none``: the orchestrator alone, with no tools and no hand-offs: the model answers.
- ``required``: every agent must call a tool (a hand-off counts for the orchestrator)
  until it has used one (the SDK then resets its choice), so at least one tool runs.
- ``{"type": "function", "name": X}`` for a tool of the caller's: the orchestrator alone,
  with only X, which it must call. For one of Switchboard's (also
  ``{"type": "switchboard:tool", "name": X}``): the orchestrator must hand off to X's
  agent, which has only X and must call it.
- ``{"type": "allowed_tools", "mode", "tools"}``: only the named tools stay (both kinds);
  connector agents left with none of their own are dropped from every hand-off, so no
  other tool can be called (a hard constraint, as the spec asks); ``mode: "required"`` as
  above.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agents import Agent, FunctionTool, Handoff, ModelSettings, RunContextWrapper, UserError

from app.openresponses.errors import invalid
from app.openresponses.request import (
    AllowedTools,
    CreateResponse,
    FunctionChoice,
    FunctionToolParam,
    SwitchboardChoice,
)
from connectors.approvals import approval_required
from connectors.caller_tools import CallerTool, caller_tool, stop_at_caller

CALLER_NOTE = (
    "Instructions from the API caller for this response (follow them unless "
    "they conflict with the rules above):\n{text}"
)
CALLER_TOOLS_NOTE = (
    "The API caller also gave you tools of its own, which it runs itself: {names}. Call "
    "one when the request needs it (after doing any part of the request that is yours); "
    "your turn ends with that call, and its result comes back in the caller's next "
    "message."
)


@dataclass(frozen=True)
class ToolPolicy:
    allowed: frozenset[str] | None  # Switchboard's tools kept; None: every one
    callers: tuple[str, ...]  # the caller's tools the model may call
    choice: str | None  # None (auto), "none", "required", or a tool's name to force

    @property
    def default(self) -> bool:
        return self.allowed is None and not self.callers and self.choice is None


def specialists(orchestrator: Agent[Any]) -> list[Agent[Any]]:
    return [agent for agent in orchestrator.handoffs if isinstance(agent, Agent)]


def function_tools(orchestrator: Agent[Any]) -> dict[str, tuple[Agent[Any], FunctionTool]]:
    """Every connector tool by name, with the agent that holds it (the first one)."""
    found: dict[str, tuple[Agent[Any], FunctionTool]] = {}
    for agent in specialists(orchestrator):
        for tool in agent.tools:
            if isinstance(tool, FunctionTool):
                found.setdefault(tool.name, (agent, tool))
    return found


def gated_tools(orchestrator: Agent[Any]) -> frozenset[str]:
    """The tools whose calls may wait for the person's approval (docs/protocol.md §3a)."""
    return frozenset(
        agent_tool.name
        for agent in specialists(orchestrator)
        for agent_tool in agent.tools
        if isinstance(agent_tool, FunctionTool) and approval_required(agent_tool)
    )


def handoff_names(orchestrator: Agent[Any]) -> list[str]:
    """The names of the hand-off tools between the agents (``transfer_to_…``)."""
    return [Handoff.default_tool_name(agent) for agent in specialists(orchestrator)]


def tool_policy(
    request: CreateResponse, available: Iterable[str], reserved: Iterable[str] = ()
) -> ToolPolicy:
    """``tools`` and ``tool_choice`` checked against the tools that exist (``available``:
    Switchboard's own; ``reserved``: other names the agents' tools have, the hand-offs)."""
    known = sorted(available)
    taken = set(known) | set(reserved)
    callers = [tool.name for tool in request.caller_tools]
    for index, tool in enumerate(request.tools or ()):
        if isinstance(tool, FunctionToolParam) and tool.name in taken:
            raise invalid(
                f"{tool.name!r} is the name of one of Switchboard's own tools; give your "
                "function tool another name",
                f"tools[{index}].name",
            )
        if not isinstance(tool, FunctionToolParam) and tool.name not in known:
            raise invalid(
                f"Switchboard has no tool named {tool.name!r}; its tools are: {', '.join(known)}",
                f"tools[{index}].name",
            )
    kept = request.kept_tools
    allowed = frozenset(kept) if kept is not None else None

    def usable(name: str, switchboard_only: bool, param: str) -> None:
        if name in callers and not switchboard_only:
            return
        if name in known and (allowed is None or name in allowed):
            return
        if name in known:
            raise invalid(f"tool_choice names {name!r}, which tools leaves out", param)
        mine = f"; your tools are: {', '.join(callers)}" if callers and not switchboard_only else ""
        raise invalid(
            f"no tool named {name!r}: Switchboard's tools are: {', '.join(known)}{mine}", param
        )

    choice = request.tool_choice
    if isinstance(choice, AllowedTools):
        for index, named in enumerate(choice.tools):
            usable(
                named.name, isinstance(named, SwitchboardChoice), f"tool_choice.tools[{index}].name"
            )
        names = {named.name for named in choice.tools}
        kept_callers = tuple(name for name in callers if name in names)
        narrowed = frozenset(name for name in names if name in known)
        return ToolPolicy(narrowed, kept_callers, "required" if choice.mode == "required" else None)
    if isinstance(choice, FunctionChoice | SwitchboardChoice):
        usable(choice.name, isinstance(choice, SwitchboardChoice), "tool_choice.name")
        return ToolPolicy(allowed, tuple(callers), choice.name)
    return ToolPolicy(allowed, tuple(callers), None if choice == "auto" else choice)


def caller_tools(request: CreateResponse, names: Sequence[str]) -> list[CallerTool]:
    """The caller's function tools named in ``names``, as tools the agents can call."""
    out = []
    for index, tool in enumerate(request.caller_tools):
        if tool.name not in names:
            continue
        try:
            out.append(caller_tool(tool.name, tool.description, tool.parameters, bool(tool.strict)))
        except UserError as exc:  # a schema the SDK cannot make strict
            raise invalid(
                f"tools[{index}].parameters: {exc}", f"tools[{index}].parameters"
            ) from None
    return out


def _with_note(base: Any, *notes: str) -> Callable[..., Any]:
    """Instructions that end with ``notes``; ``base`` may be a callable."""

    async def render(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        own = base(ctx, agent) if callable(base) else (base or "")
        if inspect.isawaitable(own):
            own = await own
        return "\n\n".join([str(own).rstrip(), *notes])

    return render


def _settings(agent: Agent[Any], tool_choice: str | None) -> ModelSettings:
    return replace(agent.model_settings, tool_choice=tool_choice)


def response_agent(
    orchestrator: Agent[Any],
    instructions: str | None,
    policy: ToolPolicy,
    callers: Sequence[CallerTool] = (),
) -> Agent[Any]:
    """The orchestrator (and the agents it hands off to) for one response; ``callers``:
    the caller's tools of ``policy.callers``."""
    told = [CALLER_NOTE.format(text=instructions.strip())] if instructions else []
    notes = told
    if callers:
        names = ", ".join(tool.name for tool in callers)
        notes = [CALLER_TOOLS_NOTE.format(names=names), *told]

    def note(agent: Agent[Any], notes: Sequence[str] = notes) -> Any:
        return _with_note(agent.instructions, *notes) if notes else agent.instructions

    extra: dict[str, Any] = {"tool_use_behavior": stop_at_caller} if callers else {}
    if policy.choice == "none":
        return orchestrator.clone(
            handoffs=[],
            tools=[],
            instructions=note(orchestrator, told),
            model_settings=_settings(orchestrator, None),
        )
    by_name = {tool.name: tool for tool in callers}
    if policy.choice in by_name:
        # A tool of the caller's, forced: the orchestrator calls it, and nothing else.
        return orchestrator.clone(
            handoffs=[],
            tools=[by_name[policy.choice]],
            instructions=note(orchestrator),
            model_settings=_settings(orchestrator, policy.choice),
            **extra,
        )
    tools = function_tools(orchestrator)
    forced = policy.choice if policy.choice not in (None, "required") else None
    allowed = frozenset({forced}) if forced else policy.allowed
    owner = tools[forced][0] if forced else None
    shared = [] if forced else list(callers)

    clones: dict[int, Agent[Any]] = {}
    for agent in specialists(orchestrator):
        if owner is not None and agent is not owner:
            continue
        kept = [
            tool
            for tool in agent.tools
            if allowed is None or getattr(tool, "name", None) in allowed
        ]
        if allowed is not None and not kept:
            continue
        choice = forced or policy.choice  # "required", a tool's name, or None
        clones[id(agent)] = agent.clone(
            tools=kept + shared,
            instructions=note(agent),
            model_settings=_settings(agent, choice),
            **extra,
        )
    if not clones and not shared:
        raise invalid("none of the allowed tools can be used", "tool_choice")
    for original in specialists(orchestrator):
        clone = clones.get(id(original))
        if clone is None:
            continue
        # Hand-offs stay within the kept agents; a forced call has no one to pass it on to.
        clone.handoffs = (
            []
            if forced
            else [
                clones[id(peer)] if isinstance(peer, Agent) else peer
                for peer in original.handoffs
                if (isinstance(peer, Agent) and id(peer) in clones) or isinstance(peer, Handoff)
            ]
        )
    kept_agents = [clones[id(agent)] for agent in specialists(orchestrator) if id(agent) in clones]
    if forced is not None:
        orchestrator_choice: str | None = Handoff.default_tool_name(kept_agents[0])
    else:
        orchestrator_choice = policy.choice
    return orchestrator.clone(
        handoffs=kept_agents,
        tools=shared,
        instructions=note(orchestrator),
        model_settings=_settings(orchestrator, orchestrator_choice),
        **extra,
    )


def tool_definitions(request: CreateResponse, names: Sequence[str]) -> list[dict[str, Any]]:
    """The Response object's ``tools``: the caller's function tools the model could call
    (Switchboard's own are not function tools: they run here)."""
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "strict": tool.strict,
        }
        for tool in request.caller_tools
        if tool.name in names
    ]
