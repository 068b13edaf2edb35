"""Packed JSON (storage/packed_json.py): what a reload reads equals what the socket sent.

The benchmark turn (bench/peer.py: handoff to Yelp, its search, handoff to Gmail, the
email sent with approvals off, the answer, suggestions) on the real server. On SQLite its
large payloads and items are stored deflated; the REST history, a resume over the
socket, the JSON export and the model's history for the next turn must still give back
exactly what the live socket saw (and what the SDK wrote).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import make_url

from app.settings import Settings
from storage.engine import Database
from storage.packed_json import unpack
from storage.session import ChatSession
from tests.support.clients import open_client
from tests.support.servers import serve
from wire.events import ENVELOPE_KEY_SET

BENCH_PROMPT = "find sushi in Boston and email the list to bob@example.com"
EPHEMERAL = {"llm_response_delta", "pong"}


def persisted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] not in EPHEMERAL]


def stored_forms(database_url: str, chat_id: str) -> tuple[list[Any], list[Any]]:
    """The raw stored ``payload`` and ``item`` values of a chat (SQLite), read with sqlite3."""
    path = make_url(database_url).database
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        payloads = [
            row[0]
            for row in conn.execute(
                "SELECT payload FROM chat_events WHERE chat_id = ? ORDER BY seq", (chat_id,)
            )
        ]
        items = [
            row[0]
            for row in conn.execute(
                "SELECT item FROM conversation_items WHERE chat_id = ? ORDER BY id", (chat_id,)
            )
        ]
    finally:
        conn.close()
    return payloads, items


async def test_a_reload_reads_exactly_what_the_live_socket_saw(
    make_settings: Callable[..., Settings], database_url: str
) -> None:
    chat_id = uuid.uuid4().hex
    async with serve(make_settings(offline_delta_delay=0.0, approvals="off")) as live:
        async with open_client(live.ws_url(chat_id)) as client:
            first = await client.turn(BENCH_PROMPT)
            second = await client.turn("show reviews for the top result")
            # A resume by seq over the socket replays the whole log.
            await client.send({"type": "resume", "after_seq": 0})
            replay = [await client.recv() for _ in range(len(persisted(first + second)))]
        async with open_client(live.ws_url(chat_id, after_seq=3)) as client:
            await client.send({"type": "ping"})
            resumed = await client.until("pong")
        async with live.client() as http:
            stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
            detail = (await http.get(f"/api/chats/{chat_id}")).json()
            export = (await http.get(f"/api/chats/{chat_id}/export?format=json")).json()

    live_events = persisted(first + second)
    types = [event["type"] for event in live_events]
    assert types.count("tool_output") >= 3 and "suggested_prompts" in types
    assert stored == live_events
    assert replay == live_events
    assert persisted(resumed) == live_events[3:]
    assert export["events"] == live_events
    finals = [event["text"] for event in live_events if event["type"] == "llm_response"]
    assert [turn["final_text"] for turn in detail["turns"]] == finals
    assert [turn["status"] for turn in detail["turns"]] == ["completed", "completed"]

    # The model's history for the next turn: every item the two turns wrote, decoded.
    db = Database(database_url)
    try:
        items = await ChatSession(db, chat_id).get_items()
    finally:
        await db.dispose()
    kinds = [item.get("type", item.get("role")) for item in items]
    assert kinds.count("function_call") == kinds.count("function_call_output") >= 5
    assert items[0] == {"content": BENCH_PROMPT, "role": "user"}
    assert [i["content"][0]["text"] for i in items if i.get("type") == "message"] == finals

    if make_url(database_url).get_backend_name() == "sqlite":
        payloads, raw_items = stored_forms(database_url, chat_id)
        # The large values really are stored packed, and unpack to the same values.
        assert any(isinstance(p, bytes) for p in payloads)
        assert any(isinstance(i, bytes) for i in raw_items)
        assert [unpack(p) for p in payloads] == [
            {k: v for k, v in e.items() if k not in ENVELOPE_KEY_SET} for e in live_events
        ]
        assert [unpack(i) for i in raw_items] == items
