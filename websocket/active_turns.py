"""The turns this process runs: each one's task and state, found by turn id.

Everything about a running turn is keyed by its turn id and removed only by its own task
(``ActiveTurns.detach``), so one turn's cleanup never touches another's: a resumed turn
keeps its id and registers anew.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

from agents.result import RunResultStreaming

from websocket.turn_phase import TurnPhase


@dataclass(eq=False)
class ActiveTurn:
    """A turn's task in this process. Found by turn id; removed only by that task."""

    turn_id: str
    chat_id: str
    user_id: str
    prompt_seq: int  # orders the chat's turns: the highest is its current one
    channel: str  # the hub channel of the turn's chat
    task: asyncio.Task[None] | None = None
    result: RunResultStreaming | None = None
    # After end_of_stream the turn may still be writing its suggestions; a new prompt
    # cancels their generation (and they are fenced out of storage once a later turn of
    # the chat has begun anywhere).
    suggestion: asyncio.Task[list[str]] | None = None
    # Where it is in its life (websocket.turn_phase): the one place that says so.
    phase: TurnPhase = TurnPhase.RUNNING

    def move(self, phase: TurnPhase) -> None:
        """Go to ``phase``; a move its table does not allow raises ``InvalidTransition``."""
        self.phase = self.phase.to(phase)

    @property
    def stop_requested(self) -> bool:
        return self.phase.stop_requested

    @property
    def finishing(self) -> bool:
        """Its end_of_stream is committed: for the client nothing runs any more, so a
        prompt may come (its suggestions may still be being written)."""
        return self.phase is TurnPhase.FINISHED

    def stop(self) -> None:
        """Stop the run (no more model or tool calls); it ends as cancelled. Once its end
        is decided there is nothing left to stop."""
        if self.phase is TurnPhase.RUNNING:
            self.move(TurnPhase.STOPPING)
        elif self.phase is TurnPhase.PAUSING:
            self.move(TurnPhase.PAUSING_STOPPED)
        if self.result is not None:
            self.result.cancel()

    def cancel(self) -> bool:
        """A cancel for this turn: False when, for the client, nothing runs any more."""
        if self.phase in (TurnPhase.ENDING, TurnPhase.FINISHED):
            return False  # its end is decided (one asked elsewhere is settled by storage)
        if self.phase.pausing:
            self.move(TurnPhase.PAUSING_STOPPED)
            return True  # superseded as soon as its pause is stored (websocket.turn_run)
        self.stop()
        return True


class ActiveTurns:
    """This process's turns, by turn id."""

    def __init__(self) -> None:
        self._by_id: dict[str, ActiveTurn] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[ActiveTurn]:
        return iter(list(self._by_id.values()))

    def __contains__(self, turn_id: object) -> bool:
        return turn_id in self._by_id

    def get(self, turn_id: str) -> ActiveTurn | None:
        return self._by_id.get(turn_id)

    def add(self, active: ActiveTurn) -> None:
        self._by_id[active.turn_id] = active

    def detach(self, active: ActiveTurn) -> None:
        """This process no longer runs ``active`` (idempotent). Only its own entry goes:
        a resumed turn keeps its id, and registers anew."""
        if self._by_id.get(active.turn_id) is active:
            del self._by_id[active.turn_id]

    def holds(self, active: ActiveTurn) -> bool:
        """Is ``active`` still registered (not ended, not replaced by its resumption)?"""
        return self._by_id.get(active.turn_id) is active

    def of_chat(self, chat_id: str) -> list[ActiveTurn]:
        return [active for active in self._by_id.values() if active.chat_id == chat_id]

    def current(self, chat_id: str) -> ActiveTurn | None:
        """The chat's newest turn here (earlier ones can only be finishing)."""
        return max(self.of_chat(chat_id), key=lambda active: active.prompt_seq, default=None)

    def running_for(self, user_id: str) -> int:
        # A finishing turn (writing its suggestions) no longer counts: its user may go on.
        return sum(
            1
            for active in self._by_id.values()
            if active.user_id == user_id and not active.finishing
        )

    def running_tasks(self, user_id: str) -> list[asyncio.Task[None]]:
        """The tasks of the turns ``running_for`` counts."""
        return [
            active.task
            for active in self._by_id.values()
            if active.user_id == user_id and not active.finishing and active.task is not None
        ]

    def tasks(self) -> list[asyncio.Task[None]]:
        return [active.task for active in self._by_id.values() if active.task is not None]
