"""Which tool calls wait for the person's approval (docs/protocol.md §3a), and how such a
call is carried. No I/O of its own.

Every tool declares whether it has side effects (``connector_tool(side_effect=…)``, a RAP
toolset's ``side_effect``); a tool that declares nothing is treated as having them:
unknown means ask. The deployment's policy (``SWITCHBOARD_APPROVALS`` and
``SWITCHBOARD_APPROVAL_OVERRIDES``) turns those declarations into the Agents SDK's own
``needs_approval`` flag, set on copies of the tools of each agent the orchestrator wires
up, so the SDK pauses the run (``result.interruptions``) before such a call runs.

A copy that asks also carries its calls (``connectors.effects.CallLedger``): before asking
it resolves what the call will do when the tool declares how (``connector_tool(effect=…)``;
a call whose effect cannot be known is not asked and answers with why), and once the
person has approved and the call has started, it runs to its end even if the turn is
stopped meanwhile, so the turn can say what happened instead of "maybe".
"""

from __future__ import annotations

import asyncio
import copy
import difflib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agents import Agent, FunctionTool, RunContextWrapper
from agents.tool_context import ToolContext

from connectors.arguments import argument_limit, oversized_params
from connectors.effects import Effect, call_id_of, ledger_of

ApprovalMode = Literal["side_effects", "always", "off"]
Override = Literal["ask", "auto"]

# Set on a FunctionTool by ``connector_tool`` and the RAP runtime; read by ``side_effect_of``.
SIDE_EFFECT_ATTRIBUTE = "switchboard_side_effect"
# Set by ``connector_tool(effect=…)``: async (ctx, arguments) -> Effect, or the tool's
# error result when what the call would do cannot be known.
PREVIEW_ATTRIBUTE = "switchboard_preview"
Preview = Callable[[RunContextWrapper[Any], dict[str, Any]], Awaitable[object]]


def declare_side_effect(tool: FunctionTool, side_effect: bool | None) -> FunctionTool:
    """Record on ``tool`` whether calling it changes something for the user (None: not said)."""
    setattr(tool, SIDE_EFFECT_ATTRIBUTE, side_effect)
    return tool


def side_effect_of(tool: object) -> bool | None:
    """What ``tool`` declared: True, False, or None when it declared nothing."""
    value = getattr(tool, SIDE_EFFECT_ATTRIBUTE, None)
    return value if isinstance(value, bool) else None


def declare_preview(tool: FunctionTool, preview: Preview) -> FunctionTool:
    """Record how ``tool`` finds out what a call will do before the person is asked."""
    setattr(tool, PREVIEW_ATTRIBUTE, preview)
    return tool


def preview_of(tool: object) -> Preview | None:
    preview = getattr(tool, PREVIEW_ATTRIBUTE, None)
    return preview if callable(preview) else None


@dataclass(frozen=True)
class ApprovalPolicy:
    """``side_effects``: every tool with (or without declared) side effects asks;
    ``always``: every tool call asks; ``off``: nothing asks (trusted automation).
    ``overrides`` (tool name → ``ask`` | ``auto``) win over the mode."""

    mode: ApprovalMode = "side_effects"
    overrides: Mapping[str, Override] = field(default_factory=dict)

    def needs_approval(self, tool_name: str, side_effect: bool | None) -> bool:
        override = self.overrides.get(tool_name)
        if override is not None:
            return override == "ask"
        if self.mode == "off":
            return False
        if self.mode == "always":
            return True
        return side_effect is not False

    def unknown_overrides(self, tool_names: Iterable[str]) -> list[str]:
        """One line per override naming no tool, with the closest real name if any."""
        known = sorted(set(tool_names))
        problems = []
        for name in sorted(set(self.overrides) - set(known)):
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"no tool is named {name!r}{hint}")
        return problems


def previews(root: Agent[Any]) -> dict[str, Preview]:
    """The previews of the tools that ask, by tool name, over ``root`` and every agent it
    can hand off to (to look up again what an approved call would do)."""
    found: dict[str, Preview] = {}
    seen: set[int] = set()
    agents = [root]
    while agents:
        agent = agents.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        for tool in agent.tools:
            preview = preview_of(tool)
            if preview is not None and approval_required(tool):
                found.setdefault(getattr(tool, "name", ""), preview)
        agents += [peer for peer in agent.handoffs if isinstance(peer, Agent)]
    return found


def agent_tools(agents: Iterable[Agent[Any]]) -> list[FunctionTool]:
    """The function tools of ``agents``, in order."""
    return [tool for agent in agents for tool in agent.tools if isinstance(tool, FunctionTool)]


def apply_policy(agents: Iterable[Agent[Any]], policy: ApprovalPolicy) -> None:
    """Give each agent copies of its function tools whose ``needs_approval`` follows
    ``policy``. Copies: the tool objects of a connector module are shared by every app
    built in this process, each with its own settings."""
    for agent in agents:
        agent.tools = [
            _with_policy(tool, policy) if isinstance(tool, FunctionTool) else tool
            for tool in agent.tools
        ]


def _with_policy(tool: FunctionTool, policy: ApprovalPolicy) -> FunctionTool:
    gated = copy.copy(tool)  # keeps the declarations (instance attributes)
    if not policy.needs_approval(tool.name, side_effect_of(tool)):
        gated.needs_approval = False
        return gated
    gated.needs_approval = _asking(tool.name, preview_of(tool))
    gated.on_invoke_tool = _carried(tool.on_invoke_tool)
    return gated


def _asking(tool_name: str, preview: Preview | None) -> Callable[..., Awaitable[bool]]:
    """The SDK's ``needs_approval`` for a call that waits for the person: a call whose
    arguments are over the size cap is not asked (it would be refused once approved:
    ``connectors.arguments``), and for a tool that says what a call will do, the effect is
    resolved and kept for the approval card; a call whose effect cannot be known is not
    asked either (nothing honest could be shown). ``_carried`` answers both with why."""

    async def needs_approval(
        ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str
    ) -> bool:
        ledger = ledger_of(ctx)
        if ledger is None:
            return True  # nowhere to keep a refusal: ask, as for any tool
        problem = oversized_params(tool_name, params, argument_limit(ctx.context))
        if problem is not None:
            ledger.refused[call_id] = problem
            return False
        if preview is None:
            return True
        outcome = await preview(ctx, params)
        if isinstance(outcome, Effect):
            ledger.resolved[call_id] = outcome
            return True
        ledger.refused[call_id] = outcome
        return False

    return needs_approval


Invoke = Callable[[ToolContext[Any], str], Awaitable[Any]]


def _carried(invoke: Invoke) -> Invoke:
    """``invoke`` for a call that asked: a refused call answers with why, unrun; an
    approved one runs at most once and, once started, to its end (shielded from the
    turn's cancellation: a send cut off half-way may or may not have happened), its run
    kept in the ledger for the turn to report."""

    async def run(ctx: ToolContext[Any], arguments: str) -> Any:
        ledger, call_id = ledger_of(ctx), call_id_of(ctx)
        if ledger is None or call_id is None:
            return await invoke(ctx, arguments)
        if call_id in ledger.refused:
            return ledger.refused[call_id]
        started = ledger.runs.get(call_id)
        if started is None:
            started = ledger.runs[call_id] = asyncio.ensure_future(invoke(ctx, arguments))
        return await asyncio.shield(started)

    return run


def approval_required(tool: object) -> bool:
    """Whether the SDK will pause before ``tool`` runs (a callable rule counts as yes)."""
    return getattr(tool, "needs_approval", False) is not False
