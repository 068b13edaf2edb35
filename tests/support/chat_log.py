"""What every chat's stored log must look like, whatever happened while it was written.

- seqs are 1..n, no gap, no repeat;
- turns follow each other: a turn's events lie between its ``user_prompt`` and the next
  one, and a new turn starts only after the previous one's ``end_of_stream``;
- each turn has exactly one ``end_of_stream``, and after it only its
  ``suggested_prompts`` (never a tool call, never text, never a second end).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

AFTER_END = {"suggested_prompts"}


@dataclass
class ChatLog:
    ends: dict[str, str] = field(default_factory=dict)  # turn id -> end_of_stream status
    order: list[str] = field(default_factory=list)  # turn ids in order
    prompts: dict[str, str] = field(default_factory=dict)  # turn id -> client_message_id


def check_chat_log(events: list[dict[str, Any]], *, last_may_run: bool = False) -> ChatLog:
    """Assert the invariants above; ``last_may_run``: the last turn may still be running."""
    seqs = [event["seq"] for event in events]
    assert seqs == list(range(1, len(events) + 1)), f"seqs are not 1..n: {seqs}"
    log = ChatLog()
    current: str | None = None
    for event in events:
        kind, turn_id = event["type"], event.get("turn_id")
        where = f"seq {event['seq']} ({kind})"
        if kind == "user_prompt":
            assert current is None or current in log.ends, (
                f"{where}: turn {turn_id} began before turn {current} ended"
            )
            assert turn_id not in log.order, f"{where}: turn {turn_id} began twice"
            current = turn_id
            log.order.append(turn_id)
            log.prompts[turn_id] = event.get("client_message_id") or ""
            continue
        assert turn_id == current, f"{where}: belongs to turn {turn_id}, not {current}"
        if current in log.ends:
            assert kind in AFTER_END, f"{where}: after the end of turn {current}"
            continue
        if kind == "end_of_stream":
            log.ends[current] = event["status"]
    unended = [turn_id for turn_id in log.order if turn_id not in log.ends]
    allowed = log.order[-1:] if last_may_run else []
    assert unended in ([], allowed), f"turns that never ended: {unended}"
    return log
