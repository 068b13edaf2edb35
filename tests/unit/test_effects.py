"""``connectors.effects`` and ``connector_tool(effect=…)``: what a call will do, as its
card shows it (pure parts; the turn's path is in tests/ws and tests/reliability)."""

from __future__ import annotations

import pytest
from agents import RunContextWrapper

from connectors.context import ChatContext
from connectors.effects import Effect
from connectors.gmail.effects import Original, ReplyPlan, people, reply_effect
from connectors.responses import ToolResponse
from connectors.tooling import connector_tool
from wire.events import MAX_EFFECT_VALUE, ApprovalEffect


def test_an_effect_round_trips_and_its_wire_form_is_bounded() -> None:
    effect = Effect("post a note", (("As", "ann@example.com"), ("Text", "x" * 5_000)), {"a": 1})
    wire = effect.to_dict()
    assert len(wire["fields"][1]["value"]) == MAX_EFFECT_VALUE
    assert wire["fields"][1]["value"].endswith("…")
    ApprovalEffect.model_validate(wire)  # what the event carries validates
    again = Effect.from_dict(wire)
    assert (again.summary, again.fields[0], again.plan) == (
        "post a note",
        ("As", "ann@example.com"),
        {"a": 1},
    )


@pytest.mark.parametrize(
    ("summary", "fields", "problem"),
    [
        ("  ", (), "summary"),
        ("s", (("", "v"),), "label"),
        ("s", tuple(("l", "v") for _ in range(21)), "at most 20"),
    ],
)
def test_an_effect_a_person_could_not_read_is_refused(
    summary: str, fields: tuple[tuple[str, str], ...], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        Effect(summary, fields)


def test_a_reply_says_who_receives_it_and_what_it_answers() -> None:
    plan = ReplyPlan(
        sender="me@example.com",
        to=["Mallory <mallory@evil.example>"],
        cc=[],
        subject="Re: Invoice",
        thread_id="t1",
        in_reply_to="<m1@x>",
        references=None,
        original=Original(
            id="m1",
            sender="Boss <boss@example.com>",
            subject="Invoice",
            date="Sat, 05 Dec 2026 15:00:00 +0000",
        ),
    )
    effect = reply_effect(plan)
    assert effect.summary == "send a reply to Mallory <mallory@evil.example>"
    assert dict(effect.fields) == {
        "From": "me@example.com",
        "To": "Mallory <mallory@evil.example>",
        "Subject": "Re: Invoice",
        "In reply to": '"Invoice" from Boss <boss@example.com>, Sat, 05 Dec 2026 15:00:00 +0000',
    }
    assert effect.plan["thread_id"] == "t1"
    assert people(["a", "b", "c"]) == "a and 2 others"


async def _resolve(ctx: RunContextWrapper[ChatContext], text: str) -> Effect:
    return Effect("x")


def test_an_effect_is_for_tools_that_act_and_take_the_context() -> None:
    with pytest.raises(TypeError, match="side_effect=False"):

        @connector_tool(agent_name="A", side_effect=False, effect=_resolve)
        async def reads(ctx: RunContextWrapper[ChatContext], text: str) -> ToolResponse:
            """Read."""
            raise AssertionError

    with pytest.raises(TypeError, match="run context"):

        @connector_tool(agent_name="A", side_effect=True, effect=_resolve)
        async def no_context(text: str) -> ToolResponse:
            """Write."""
            raise AssertionError
