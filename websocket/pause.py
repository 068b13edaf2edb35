"""Pausing a turn for approvals and resuming it, on the Agents SDK's own machinery.

When a tool needs approval the SDK ends the streamed run with ``result.interruptions``;
``paused_state`` serialises its ``RunState`` (with the turn's unsaved conversation items)
for storage. Once every approval of the pause is decided, ``restore`` rebuilds the
``RunState``, approves or rejects each interruption as the person decided, and the turn
runs on from it (``Runner.run_streamed(agent, state)``).
"""

from __future__ import annotations

from typing import Any

from agents import Agent, RunState
from agents.result import RunResultStreaming

from connectors.effects import Effect
from storage.records import ApprovalRecord
from storage.session import TurnSession
from websocket.sdk_events import call_arguments
from wire.events import ApprovalEffect

# Bumped when what ``paused_state`` stores changes shape.
STATE_VERSION = 1


class ResumeFailed(RuntimeError):
    """A paused run could not be restored (e.g. stored by an incompatible SDK version)."""


def rejection_message(approval: ApprovalRecord | None) -> str:
    """What the model reads instead of the output of a call that was not approved."""
    if approval is not None and approval.status == "expired":
        return (
            "Not run: the user did not answer the approval request in time, so nothing "
            "was done. Do not try again unless the user asks."
        )
    reason = (approval.reason or "").strip() if approval is not None else ""
    said = f' They said: "{reason}"' if reason else ""
    return (
        f"Not run: the user declined this call, so nothing was done.{said} Do not try "
        "again unless the user asks."
    )


def paused_state(
    result: RunResultStreaming,
    session: TurnSession,
    current_agent: str,
    shown_types: list[str],
) -> dict[str, Any]:
    """The stored form of a paused run. The run context is left out (it holds clients
    and credentials): it is rebuilt for the resumed run. ``shown_types`` are the cards
    already shown, so the resumed turn's suggestions know the whole turn."""
    run = result.to_state().to_json(context_serializer=lambda _context: {})
    return {
        "version": STATE_VERSION,
        "run": run,
        "session": list(session.pending),
        "agent": current_agent,
        "shown_types": list(shown_types),
    }


async def restore(
    agent: Agent[Any], state: dict[str, Any], context: Any, approvals: tuple[ApprovalRecord, ...]
) -> RunState[Any]:
    """The paused ``RunState`` with every interruption decided as the person did.

    A call runs only when its approval says ``approved`` and its arguments are still
    exactly those the person saw; anything else is rejected.
    """
    if state.get("version") != STATE_VERSION:
        raise ResumeFailed(f"paused run format {state.get('version')!r} is not {STATE_VERSION}")
    try:
        run_state = await RunState.from_json(agent, state["run"], context_override=context)
    except Exception as exc:
        raise ResumeFailed(f"the paused run could not be restored: {type(exc).__name__}") from exc
    by_call = {approval.call_id: approval for approval in approvals}
    for item in run_state.get_interruptions():
        approval = by_call.get(str(item.call_id))
        shown = approval is not None and call_arguments(item.raw_item) == approval.arguments
        if approval is not None and approval.status == "approved" and shown:
            run_state.approve(item)
        else:
            run_state.reject(item, rejection_message=rejection_message(approval))
    return run_state


def restore_session(session: TurnSession, state: dict[str, Any]) -> None:
    """Give the resumed turn's session the items the paused run had not saved yet."""
    session.pending[:] = [dict(item) for item in state.get("session", [])]


def shown_before_pause(state: dict[str, Any]) -> list[str]:
    """The response types of the cards shown before the pause (none for a pause stored
    before they were kept)."""
    return [str(kind) for kind in state.get("shown_types", [])]


def wire_effect(effect: Effect | None) -> ApprovalEffect | None:
    """A resolved effect as the ``approval_required`` event carries it."""
    return ApprovalEffect.model_validate(effect.to_dict()) if effect is not None else None


def approved_effect(approval: ApprovalRecord) -> Effect | None:
    """The effect an approval showed, for the tool to execute (None: none was resolved)."""
    return Effect.from_dict(approval.effect) if approval.effect else None


def failure_text(result: object) -> str:
    """Why a tool's error result (a ToolResponse dict) failed, in its own short words."""
    if isinstance(result, dict):
        said = result.get("error_message") or result.get("response")
        if isinstance(said, str) and said.strip():
            return said.strip().removeprefix("Error: ").splitlines()[0][:200]
        if isinstance(result.get("friendly_name"), str):
            return str(result["friendly_name"])[:200]
    return "the service did not answer"
