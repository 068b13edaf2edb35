"""The offline model continues a stopped answer deterministically (docs/protocol.md,
"Regenerate, edit and continue"): through the real orchestrator and the SDK runner."""

from __future__ import annotations

from app.llm.offline_continue import NOTHING_LEFT
from storage.turn_actions import CONTINUE_PROMPT
from tests.unit.test_offline_model import run_turn


def _continue(prompt: str, partial: str) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": partial},
        {"role": "user", "content": CONTINUE_PROMPT},
    ]


async def test_the_rest_of_the_answer_follows_what_was_said() -> None:
    whole = (await run_turn("help")).messages()[0]
    for cut in (1, 20, len(whole) - 1):
        turn = await run_turn(_continue("help", whole[:cut]))
        assert turn.calls() == []
        assert turn.messages() == [whole[cut:]]


async def test_an_answer_that_was_not_started_is_given_whole() -> None:
    whole = (await run_turn("hi")).messages()[0]
    assert (await run_turn(_continue("hi", ""))).messages() == [whole]


async def test_an_older_answer_is_not_taken_for_the_stopped_one() -> None:
    greeting = (await run_turn("hi")).messages()[0]
    whole = (await run_turn("help")).messages()[0]
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": greeting},
        {"role": "user", "content": "help"},
        {"role": "user", "content": CONTINUE_PROMPT},
    ]
    assert (await run_turn(history)).messages() == [whole]


async def test_an_answer_already_complete_has_nothing_left() -> None:
    whole = (await run_turn("hi")).messages()[0]
    assert (await run_turn(_continue("hi", whole))).messages() == [NOTHING_LEFT]
    assert (await run_turn(_continue("hi", "Something else"))).messages() == [NOTHING_LEFT]


async def test_a_continue_instruction_is_not_taken_as_a_request() -> None:
    # Without the stopped answer before it, the instruction is still recognised.
    turn = await run_turn([{"role": "user", "content": CONTINUE_PROMPT}])
    assert turn.calls() == [] and len(turn.messages()) == 1
