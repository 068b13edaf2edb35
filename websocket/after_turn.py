"""What follows a turn's end: its suggested prompts and the chat's title. Useful, never
allowed to fail the turn, and never among the next turn's events."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from storage.errors import TurnFenced
from websocket.active_turns import ActiveTurn
from websocket.turn_plan import SuggestHook, TitleHook
from websocket.writer import EventWriter
from wire.events import SuggestedPromptsEvent

logger = logging.getLogger("switchboard.turn")


async def suggest_prompts(
    active: ActiveTurn,
    suggest: SuggestHook,
    prompt: str,
    final_text: str,
    shown_types: list[str],
    writer: Callable[[], EventWriter],
) -> None:
    """Make the turn's follow-up prompts and write them after its end with ``writer()``.

    Made in their own task, kept on ``active.suggestion``: the chat's next prompt, or a
    shutdown, cancels it. Once a later turn of the chat has begun anywhere the writer is
    fenced out, and the suggestions are dropped.
    """
    active.suggestion = asyncio.create_task(
        suggest(prompt, final_text, shown_types), name=f"suggest-{active.turn_id}"
    )
    try:
        prompts = (await active.suggestion)[:4]
        after_end = writer()
        after_end.put(SuggestedPromptsEvent(prompts=prompts))
        await after_end.close()
    except asyncio.CancelledError:
        if not active.suggestion.cancelled():
            raise  # the turn task itself is being cancelled
    except Exception as exc:
        # Fenced: the chat's next turn has begun; its prompt made these moot.
        if not isinstance(exc.__cause__, TurnFenced):
            extra = {"chat_id": active.chat_id, "turn_id": active.turn_id}
            logger.exception("suggested prompts failed", extra=extra)


async def give_title(
    on_first_turn: TitleHook | None, user_id: str, chat_id: str, turn_id: str, prompt: str
) -> None:
    """Title the chat after its first prompt (``TurnEngine.on_first_turn``)."""
    if on_first_turn is None:
        return
    try:
        await on_first_turn(user_id, chat_id, prompt)
    except Exception:
        logger.exception("chat title failed", extra={"chat_id": chat_id, "turn_id": turn_id})
