"""A running turn's phase (websocket.turn_phase): the moves its table allows, and what a
cancel or a stop does in each phase."""

from __future__ import annotations

import pytest

from websocket.active_turns import ActiveTurn
from websocket.turn_phase import InvalidTransition, TurnPhase

P = TurnPhase
ALLOWED = {
    (P.RUNNING, P.STOPPING),
    (P.RUNNING, P.PAUSING),
    (P.RUNNING, P.ENDING),
    (P.STOPPING, P.ENDING),
    (P.PAUSING, P.PAUSING_STOPPED),
    (P.PAUSING, P.ENDING),
    (P.PAUSING_STOPPED, P.ENDING),
    (P.ENDING, P.FINISHED),
}


@pytest.mark.parametrize("start", list(P))
@pytest.mark.parametrize("end", list(P))
def test_a_move_is_allowed_only_by_the_table(start: TurnPhase, end: TurnPhase) -> None:
    if start is end or (start, end) in ALLOWED:
        assert start.to(end) is end
    else:
        with pytest.raises(InvalidTransition, match=f"from {start.name} to {end.name}"):
            start.to(end)


def turn(phase: TurnPhase) -> ActiveTurn:
    return ActiveTurn("t1", "c1", "u1", 1, "chat:c1", phase=phase)


@pytest.mark.parametrize(
    ("phase", "delivered", "after"),
    [
        (P.RUNNING, True, P.STOPPING),
        (P.STOPPING, True, P.STOPPING),
        (P.PAUSING, True, P.PAUSING_STOPPED),
        (P.PAUSING_STOPPED, True, P.PAUSING_STOPPED),
        (P.ENDING, False, P.ENDING),
        (P.FINISHED, False, P.FINISHED),
    ],
)
def test_a_cancel_stops_what_still_runs_and_nothing_once_the_end_is_decided(
    phase: TurnPhase, delivered: bool, after: TurnPhase
) -> None:
    active = turn(phase)
    assert active.cancel() is delivered
    assert active.phase is after
    assert active.stop_requested is after.stop_requested


def test_only_a_finished_turn_no_longer_counts_as_running() -> None:
    assert [p for p in P if turn(p).finishing] == [P.FINISHED]
    assert [p for p in P if p.run_going_on] == [P.RUNNING, P.STOPPING, P.ENDING]


def test_a_finished_turn_cannot_start_ending_again() -> None:
    active = turn(P.FINISHED)
    with pytest.raises(InvalidTransition):
        active.move(P.ENDING)
    assert active.phase is P.FINISHED
