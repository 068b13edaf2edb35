"""The agent graph one response runs: the orchestrator with the caller's ``instructions``
and ``tool_choice`` / ``tools`` applied. Pure: agents are cloned, never changed.

``tool_choice`` on Switchboard's graph (the orchestrator only hands off; the connector
agents hold the tools):

- ``auto``: the graph as it is.
- ``none``: the orchestrator alone, with no hand-offs: the model answers directly.
- ``required``: every agent must call a tool (a hand-off counts for the orchestrator)
  until it has used one (the SDK then resets its choice), so at least one tool runs.
- ``{"type": "function", "name": X}``: the orchestrator must hand off to X's agent, which
  has only X and must call it.
- ``{"type": "allowed_tools", "mode", "tools"}`` and ``tools``: agents keep only the named
  tools, agents left with none are dropped from every hand-off, so no other tool can be
  called (a hard constraint, as the spec asks); ``mode: "required"`` as above.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from agents import Agent, FunctionTool, Handoff, ModelSettings, RunContextWrapper

from app.openresponses.errors import invalid
from app.openresponses.request import AllowedTools, CreateResponse, FunctionToolRef
from connectors.approvals import approval_required

CALLER_NOTE = (
    "Instructions from the API caller for this response (follow them unless "
    "they conflict with the rules above):\n{text}"
)


@dataclass(frozen=True)
class ToolPolicy:
    allowed: frozenset[str] | None  # None: every tool
    choice: str | None  # None (auto), "none", "required", or a tool name to force


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


def tool_policy(request: CreateResponse, available: Iterable[str]) -> ToolPolicy:
    """``tools`` and ``tool_choice`` checked against the tools that exist."""
    known = sorted(available)

    def check(names: list[str], param: str) -> frozenset[str]:
        for index, name in enumerate(names):
            if name not in known:
                raise invalid(
                    f"no tool named {name!r}; Switchboard's tools are: {', '.join(known)}",
                    f"{param}[{index}].name" if param != "tool_choice" else "tool_choice.name",
                )
        return frozenset(names)

    allowed = check([t.name for t in request.tools], "tools") if request.tools else None
    choice = request.tool_choice
    if isinstance(choice, AllowedTools):
        narrowed = check([t.name for t in choice.tools], "tool_choice.tools")
        allowed = narrowed if allowed is None else allowed & narrowed
        if not allowed:
            raise invalid("tools and tool_choice.tools have no tool in common", "tool_choice.tools")
        return ToolPolicy(allowed, "required" if choice.mode == "required" else None)
    if isinstance(choice, FunctionToolRef):
        check([choice.name], "tool_choice")
        if allowed is not None and choice.name not in allowed:
            raise invalid(
                f"tool_choice names {choice.name!r}, which tools leaves out", "tool_choice.name"
            )
        return ToolPolicy(allowed, choice.name)
    if choice == "auto":
        return ToolPolicy(allowed, None)
    return ToolPolicy(allowed, choice)


def _with_note(base: Any, text: str) -> Callable[..., Any]:
    """Instructions that end with the caller's ``text``; ``base`` may be a callable."""

    async def render(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        own = base(ctx, agent) if callable(base) else (base or "")
        if inspect.isawaitable(own):
            own = await own
        return f"{str(own).rstrip()}\n\n{CALLER_NOTE.format(text=text.strip())}"

    return render


def _settings(agent: Agent[Any], tool_choice: str | None) -> ModelSettings:
    return replace(agent.model_settings, tool_choice=tool_choice)


def response_agent(
    orchestrator: Agent[Any], instructions: str | None, policy: ToolPolicy
) -> Agent[Any]:
    """The orchestrator (and the agents it hands off to) for one response."""

    def note(agent: Agent[Any]) -> Any:
        return _with_note(agent.instructions, instructions) if instructions else agent.instructions

    if policy.choice == "none":
        return orchestrator.clone(
            handoffs=[],
            instructions=note(orchestrator),
            model_settings=_settings(orchestrator, None),
        )
    tools = function_tools(orchestrator)
    forced = policy.choice if policy.choice not in (None, "required") else None
    allowed = frozenset({forced}) if forced else policy.allowed
    owner = tools[forced][0] if forced else None

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
            tools=kept, instructions=note(agent), model_settings=_settings(agent, choice)
        )
    if not clones:
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
        instructions=note(orchestrator),
        model_settings=_settings(orchestrator, orchestrator_choice),
    )


def tool_definitions(
    orchestrator: Agent[Any], allowed: frozenset[str] | None = None
) -> list[dict[str, Any]]:
    """The Response object's ``tools``: Switchboard's function tools the model could use."""
    out = []
    for name, (_, tool) in function_tools(orchestrator).items():
        if allowed is not None and name not in allowed:
            continue
        out.append(
            {
                "type": "function",
                "name": name,
                "description": tool.description,
                "parameters": tool.params_json_schema,
                "strict": tool.strict_json_schema,
            }
        )
    return out
