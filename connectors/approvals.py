"""Which tool calls wait for the person's approval (docs/protocol.md §3a). Pure: no I/O.

Every tool declares whether it has side effects (``connector_tool(side_effect=…)``, a RAP
toolset's ``side_effect``); a tool that declares nothing is treated as having them:
unknown means ask. The deployment's policy (``SWITCHBOARD_APPROVALS`` and
``SWITCHBOARD_APPROVAL_OVERRIDES``) turns those declarations into the Agents SDK's own
``needs_approval`` flag, set on copies of the tools of each agent the orchestrator wires
up, so the SDK pauses the run (``result.interruptions``) before such a call runs.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agents import Agent, FunctionTool

ApprovalMode = Literal["side_effects", "always", "off"]
Override = Literal["ask", "auto"]

# Set on a FunctionTool by ``connector_tool`` and the RAP runtime; read by ``side_effect_of``.
SIDE_EFFECT_ATTRIBUTE = "switchboard_side_effect"


def declare_side_effect(tool: FunctionTool, side_effect: bool | None) -> FunctionTool:
    """Record on ``tool`` whether calling it changes something for the user (None: not said)."""
    setattr(tool, SIDE_EFFECT_ATTRIBUTE, side_effect)
    return tool


def side_effect_of(tool: object) -> bool | None:
    """What ``tool`` declared: True, False, or None when it declared nothing."""
    value = getattr(tool, SIDE_EFFECT_ATTRIBUTE, None)
    return value if isinstance(value, bool) else None


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
    gated = copy.copy(tool)  # keeps the side-effect declaration (an instance attribute)
    gated.needs_approval = policy.needs_approval(tool.name, side_effect_of(tool))
    return gated


def approval_required(tool: object) -> bool:
    """Whether the SDK will pause before ``tool`` runs (a callable rule counts as yes)."""
    return getattr(tool, "needs_approval", False) is not False
