"""What the turn runtime tells a tracer (``TurnEngine.tracer``): a turn's start and end and
its tool calls. The OpenTelemetry implementation is the app's (``app.telemetry``), built
only when tracing is configured; without it the engine's tracer is None and a turn does
no tracing work at all.

Nothing here carries prompt or answer text: ids, names, outcomes and token counts only.
"""

from __future__ import annotations

from typing import Protocol

from wire.events import Usage


class TurnTrace(Protocol):
    """One turn's run (a resumed turn is a run of its own)."""

    def tool_called(self, call_id: str, name: str, agent: str) -> None: ...

    def tool_finished(self, call_id: str, outcome: str) -> None: ...

    def end(
        self, status: str, usage: Usage, error_code: str | None, waiting: frozenset[str]
    ) -> None:
        """The run ended (``status``) or paused (``paused``, ``waiting`` on those calls)."""
        ...


class TurnTracer(Protocol):
    def start_turn(
        self, *, user_id: str, chat_id: str, turn_id: str, resumed: bool, front_end: str
    ) -> TurnTrace:
        """Start the turn's span and make it current in the calling task (the turn's own),
        so the Agents SDK's spans and the database's nest under it."""
        ...
