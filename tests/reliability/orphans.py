"""Waiting for a dead instance's turn to end: its lease expires, then a sweep closes it.

A lease of ``LEASE`` seconds ends such a turn within about ``LEASE`` plus a sweep period
(``websocket.turn.LeaseTimings``); the tests wait on the stored log itself, with a deadline
far beyond that, so a busy machine slows them down but never fails them.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.waiting import wait_until

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
    stored: list[dict[str, Any]] = []

    async def ended() -> bool:
        stored[:] = await stored_events(server, chat_id)
        return _ended(stored)

    try:
        await wait_until(ended, what=f"the last turn of {chat_id} to end", within=within)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; stored: {[e['type'] for e in stored]}") from None
    return stored
