"""Where a running turn is in its life, and the moves allowed between phases.

One enum and one table, so that "can a cancel still stop this turn?", "does it count
against the user's running turns?" and "may its lease be renewed?" are questions about
one value, never about several flags that must agree. A move the table does not allow
raises: it is a bug in the runner, and the tests see it at once.

    RUNNING ──cancel──▶ STOPPING ─────────────┐
       │                                      ▼
       ├──────────────────────────────────▶ ENDING ──▶ FINISHED
       │                                      ▲
       └──approvals──▶ PAUSING ──cancel──▶ PAUSING_STOPPED
                          │ (its pause could not be stored)
                          └──────────────────▶ ENDING

A paused turn stays PAUSING (or PAUSING_STOPPED) until its task detaches it: no process
runs it any more, and a decision resumes it as a new RUNNING turn.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["InvalidTransition", "TurnPhase"]


class InvalidTransition(RuntimeError):
    def __init__(self, phase: TurnPhase, to: TurnPhase) -> None:
        super().__init__(f"a turn cannot go from {phase.name} to {to.name}")


class TurnPhase(Enum):
    RUNNING = "running"  # the model's run goes on
    STOPPING = "stopping"  # asked to stop: the run ends as cancelled
    PAUSING = "pausing"  # the run stopped for approvals; the pause is being stored
    PAUSING_STOPPED = "pausing_stopped"  # a cancel came meanwhile: ended once it is stored
    ENDING = "ending"  # its end is decided (end_of_stream being written): nothing to stop
    FINISHED = "finished"  # end_of_stream committed; only its suggestions may still run

    def to(self, phase: TurnPhase) -> TurnPhase:
        """``phase``, if this phase may move there (staying put is always allowed)."""
        if phase is not self and phase not in _MOVES[self]:
            raise InvalidTransition(self, phase)
        return phase

    @property
    def stop_requested(self) -> bool:
        """Someone asked this turn to stop before its end was decided."""
        return self in (TurnPhase.STOPPING, TurnPhase.PAUSING_STOPPED)

    @property
    def pausing(self) -> bool:
        return self in (TurnPhase.PAUSING, TurnPhase.PAUSING_STOPPED)

    @property
    def run_going_on(self) -> bool:
        """Its run may still act (call the model or tools): not paused, not finished."""
        return self in (TurnPhase.RUNNING, TurnPhase.STOPPING, TurnPhase.ENDING)


_MOVES: dict[TurnPhase, frozenset[TurnPhase]] = {
    TurnPhase.RUNNING: frozenset({TurnPhase.STOPPING, TurnPhase.PAUSING, TurnPhase.ENDING}),
    TurnPhase.STOPPING: frozenset({TurnPhase.ENDING}),
    TurnPhase.PAUSING: frozenset({TurnPhase.PAUSING_STOPPED, TurnPhase.ENDING}),
    TurnPhase.PAUSING_STOPPED: frozenset({TurnPhase.ENDING}),
    TurnPhase.ENDING: frozenset({TurnPhase.FINISHED}),
    TurnPhase.FINISHED: frozenset(),
}
