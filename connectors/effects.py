"""What a call with side effects will do, resolved before the person is asked (§3a).

A tool's arguments are what the model wrote; they can name things a person cannot check —
"reply to message evil5" says nothing of who receives the reply. A tool that acts on such
a reference declares an *effect resolver* (``connector_tool(..., effect=resolve)``): an
async function of the tool's context and arguments that looks up what the call will do
and returns an ``Effect``. The server runs it before asking, shows the effect on the
approval card of every front end, stores it with the approval, and after the approval the
tool executes exactly that effect (``effect_of(ctx)``), never a fresh look-up.

``CallLedger`` is the turn's record of these calls: the effects resolved before asking,
the calls whose effect could not be resolved (they are not asked, and answer with why),
the effects the person approved, and the approved calls' runs. It lives on the turn's
``ChatContext`` (``context.calls``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agents import RunContextWrapper

from wire.events import (
    MAX_EFFECT_FIELDS,
    MAX_EFFECT_LABEL,
    MAX_EFFECT_SUMMARY,
    MAX_EFFECT_VALUE,
)

__all__ = ["CallLedger", "Effect", "EffectResolver", "effect_of", "ledger_of"]


@dataclass(frozen=True)
class Effect:
    """What a call will do, in words a person checks and in the form the tool executes.

    ``summary``: one line ("reply to Mallory <mallory@evil.example>: Re: Invoice");
    ``fields``: labelled lines in the order a person reads them (From, To, Subject, …);
    ``plan``: JSON the tool executes after approval (recipients, thread, headers), so
    what runs is exactly what was resolved when the person was asked.
    """

    summary: str
    fields: tuple[tuple[str, str], ...] = ()
    plan: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.summary.strip():
            raise ValueError("an effect needs a summary a person can read")
        if any(not label.strip() for label, _value in self.fields):
            raise ValueError("every field of an effect needs a label")
        if len(self.fields) > MAX_EFFECT_FIELDS:
            raise ValueError(f"an effect shows at most {MAX_EFFECT_FIELDS} fields")

    def to_dict(self) -> dict[str, Any]:
        """The wire and storage form (``approval_required.effect``)."""
        return {
            "summary": _clip(self.summary.strip(), MAX_EFFECT_SUMMARY),
            "fields": [
                {"label": _clip(label, MAX_EFFECT_LABEL), "value": _clip(value, MAX_EFFECT_VALUE)}
                for label, value in self.fields
            ],
            "plan": dict(self.plan),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Effect:
        fields = tuple(
            (str(item.get("label", "")), str(item.get("value", "")))
            for item in data.get("fields") or []
            if isinstance(item, Mapping)
        )
        plan = data.get("plan")
        return cls(
            str(data.get("summary", "")), fields, dict(plan) if isinstance(plan, dict) else {}
        )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# async (ctx, **arguments) -> Effect; raises the tool's own errors (ToolError, NeedsAccount).
EffectResolver = Callable[..., Awaitable[Effect]]


@dataclass
class CallLedger:
    """One turn's calls that ask for approval, by call id (see the module's docstring)."""

    resolved: dict[str, Effect] = field(default_factory=dict)
    # The calls whose effect could not be resolved: what the tool answers instead of running.
    refused: dict[str, Any] = field(default_factory=dict)
    # Set when a paused turn resumes: the calls the person approved, with the effect shown
    # (None for a tool that resolves none: its arguments were the whole story).
    approved: dict[str, Effect | None] = field(default_factory=dict)
    # An approved call's run, once started: carried to its end even if the turn stops.
    runs: dict[str, asyncio.Future[Any]] = field(default_factory=dict)


# The effect the running tool body executes; set by ``connector_tool`` around the body (a
# context variable: it follows a ``blocking=True`` body into its worker thread).
executing: ContextVar[Effect | None] = ContextVar("switchboard_executing_effect", default=None)


def ledger_of(ctx: object) -> CallLedger | None:
    """The turn's ledger from a run context (``RunContextWrapper``), if it has one."""
    ledger = getattr(getattr(ctx, "context", None), "calls", None)
    return ledger if isinstance(ledger, CallLedger) else None


def call_id_of(ctx: object) -> str | None:
    """The call id of the tool call ``ctx`` runs (the SDK's ``ToolContext``)."""
    call_id = getattr(ctx, "tool_call_id", None)
    return call_id if isinstance(call_id, str) and call_id else None


def effect_of(ctx: RunContextWrapper[Any]) -> Effect:
    """The effect this call executes: the one the person approved, or, when nobody was
    asked (approvals off for the tool), the one resolved as it started.

    Only for tools declared with ``effect=``; ``connector_tool`` resolves it before the
    tool's body runs. (``ctx`` is taken so the call reads as the tool's own.)
    """
    effect = executing.get()
    if effect is None:
        raise RuntimeError(
            "effect_of(ctx) is for tools declared with connector_tool(..., effect=...), "
            "called by the SDK in a turn"
        )
    return effect
