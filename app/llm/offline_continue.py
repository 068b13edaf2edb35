"""The offline model's answer to a ``continue`` turn (docs/protocol.md, "Regenerate, edit
and continue"): deterministic, and pure.

The stopped answer is the model's last message before the continue instruction. The
offline model works out again what it would have answered to the request before it, with
the same tool results; when that answer starts with what was already said, the rest of
it is the continuation, so the two messages read together as the whole answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from app.llm.offline_transcript import Decision, Say
from storage.turn_actions import CONTINUE_PROMPT

NOTHING_LEFT = "That was the whole answer: there is nothing more to add to it."
START_OVER = (
    "I stopped before I had worked out that answer, so there is nothing to continue; "
    "ask again and I will start over."
)


def _as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else {}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(_as_dict(part).get("text", "")) for part in content)
    return ""


def continuation(
    model_input: str | Sequence[Any], answer_to: Callable[[list[Any]], Decision]
) -> Say | None:
    """The continuation, when the latest user message is the continue instruction (None
    otherwise). ``answer_to(items)``: what the model decides given ``items``."""
    if isinstance(model_input, str):
        return None
    items = [_as_dict(item) for item in model_input]
    asks = [i for i, item in enumerate(items) if item.get("role") == "user"]
    if not asks or _text(items[asks[-1]].get("content")).strip() != CONTINUE_PROMPT:
        return None
    if any(item.get("type") == "function_call" for item in items[asks[-1] + 1 :]):
        return None  # not the first step of the continuation: go on as usual
    before = items[: asks[-1]]
    # The stopped answer: an assistant message after the request it answered (none when
    # the turn stopped before it said anything; an older answer is not it).
    request = asks[-2] if len(asks) > 1 else -1
    said = next(
        (
            i
            for i in range(len(before) - 1, request, -1)
            if before[i].get("role") == "assistant"
            and before[i].get("type", "message") == "message"
        ),
        None,
    )
    partial = _text(before[said].get("content")) if said is not None else ""
    again = answer_to(before[:said] if said is not None else before)
    if not isinstance(again, Say):
        return Say(START_OVER)
    if again.text.startswith(partial) and len(again.text) > len(partial):
        return Say(again.text[len(partial) :])
    return Say(NOTHING_LEFT)
