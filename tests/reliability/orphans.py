"""Waiting for a dead instance's turn to end: its lease expires, then a sweep closes it.

A lease of ``LEASE`` seconds ends such a turn within about ``LEASE`` plus a sweep period
(``websocket.turn.LeaseTimings``); the tests wait on the stored log itself, with a deadline
far beyond that, so a busy machine slows them down but never fails them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

LEASE = 1  # SWITCHBOARD_TURN_LEASE_SECONDS for servers that tests kill


async def stored_events(server: Any, chat_id: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=server.http, timeout=10) as http:
        response = await http.get(f"/api/chats/{chat_id}/events")
        response.raise_for_status()
        return list(response.json()["events"])


def _ended(events: list[dict[str, Any]]) -> bool:
    prompts = [e["seq"] for e in events if e["type"] == "user_prompt"]
    return bool(prompts) and any(
        e["type"] == "end_of_stream" and e["seq"] > prompts[-1] for e in events
    )


async def until_last_turn_ends(
    server: Any, chat_id: str, within: float = 60.0
) -> list[dict[str, Any]]:
    """The chat's stored events once its last turn has an ``end_of_stream``."""
    deadline = time.monotonic() + within
    while True:
        events = await stored_events(server, chat_id)
        if _ended(events):
            return events
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the last turn of {chat_id} did not end within {within} s; "
                f"stored: {[e['type'] for e in events]}"
            )
        await asyncio.sleep(0.1)  # a poll of the condition, not a guess at a duration
