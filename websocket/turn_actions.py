"""What the model is given for a turn made from an earlier one (docs/protocol.md,
"Regenerate, edit and continue"); pure, no I/O.

A regenerated or edited turn is an ordinary prompt: the superseded turns' items are left
out of the history by ``storage.session``. A continuation gives the model the stopped
answer as its own last message (a cut-off answer is already in the history, a stopped
one is not: the SDK keeps nothing of a step that was interrupted) and asks it to go on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from storage.turn_actions import CONTINUE_PROMPT, ActionStarted

if TYPE_CHECKING:
    from agents import TResponseInputItem


def model_input(started: ActionStarted) -> list[TResponseInputItem] | None:
    """The model's input for the turn ``started``; None: its prompt as it is."""
    continued = started.continued
    if continued is None:
        return None
    items: list[dict[str, Any]] = []
    answered = continued.final_text or continued.partial_text
    if answered and not started.cut_off:
        items.append({"role": "assistant", "content": answered})
    items.append({"role": "user", "content": CONTINUE_PROMPT})
    return cast("list[TResponseInputItem]", items)
