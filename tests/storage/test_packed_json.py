"""Packed JSON columns (storage/packed_json.py, migration 0011): lossless, on both engines."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select, text
from sqlalchemy.engine import make_url

from alembic import command
from storage.engine import Database, json_dumps
from storage.migrate import alembic_config, schema_diff, upgrade
from storage.models import chat_events, chats, conversation_items, users, utcnow
from storage.packed_json import DEFLATED, DICTIONARY_V1, PACK_MIN_BYTES, pack, unpack
from storage.session import ChatSession
from tests.support.db import POSTGRES_URL, drop_schema

TOOL_OUTPUT = {
    "call_id": "call_1",
    "output": {
        "response_type": "yelp_search_results",
        "agent_name": "Yelp",
        "friendly_name": "Searching Yelp for sushi — Boston",
        "response": [
            {"name": f"Umi {i}", "rating": 4.5, "tags": ["a", None, True]} for i in range(9)
        ],
        "display_response": True,
    },
    "current_agent": "Yelp",
}


def test_dictionary_v1_never_changes() -> None:
    # Stored values are inflated with exactly these bytes: editing them corrupts every
    # packed row. A better dictionary needs a new format byte instead.
    assert hashlib.sha256(DICTIONARY_V1).hexdigest() == (
        "a9f4895e75614de43b0231b0781418ef5e40612e59e9f5ddd0df371ab4abe8ed"
    )


@pytest.mark.parametrize(
    "value",
    [
        TOOL_OUTPUT,
        {"z": 1, "a": 2, "text": "naïve ☕ " * 20, "n": None, "f": 1.5, "big": 2**62},
        ["x" * 300],
        "a plain string long enough to be packed, if deflate shrinks it " * 3,
    ],
)
def test_pack_round_trips_keys_in_order(value: Any) -> None:
    stored = pack(value)
    assert isinstance(stored, bytes) and stored[:1] == DEFLATED
    assert len(stored) < len(json_dumps(value).encode())
    back = unpack(stored)
    assert back == value
    assert json_dumps(back) == json_dumps(value)  # same key order: same bytes on the wire


def test_short_or_incompressible_values_stay_json_text() -> None:
    short = {"from": "A", "to": "B"}
    assert len(json_dumps(short)) < PACK_MIN_BYTES
    assert pack(short) == json_dumps(short)
    noise = {"k": secrets.token_urlsafe(24)}
    assert len(json_dumps(noise)) >= PACK_MIN_BYTES
    assert pack(noise) == json_dumps(noise)  # deflate would not shrink it
    assert unpack(json_dumps(noise)) == noise


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown packed JSON format"):
        unpack(b"\x7fnot ours")


async def _chat(db: Database, chat_id: str) -> None:
    now = utcnow()
    async with db.session(write=True) as session:
        await session.execute(insert(users).values(id="u1", name="u1", created_at=now))
        await session.execute(
            insert(chats).values(
                id=chat_id, user_id="u1", created_at=now, updated_at=now, last_seq=0
            )
        )
        await session.commit()


async def test_columns_store_packed_on_sqlite_and_jsonb_on_postgresql(db: Database) -> None:
    await _chat(db, "c1")
    item = {"type": "function_call_output", "call_id": "call_1", "output": "x " * 200}
    async with db.session(write=True) as session:
        await session.execute(
            insert(chat_events).values(
                chat_id="c1",
                seq=1,
                turn_id="t1",
                type="tool_output",
                payload=TOOL_OUTPUT,
                ts="2026-01-01T00:00:00.000Z",
            )
        )
        await session.commit()
    await ChatSession(db, "c1").add_items([item])  # type: ignore[list-item]
    async with db.session() as session:
        assert await session.scalar(select(chat_events.c.payload)) == TOOL_OUTPUT
        row = (await session.execute(select(conversation_items))).one()
        # call_id is filled from the item by any SQLAlchemy insert.
        assert (row.item, row.call_id) == (item, "call_1")
        kinds = (
            await session.execute(
                text("SELECT typeof(payload) FROM chat_events")
                if db.dialect == "sqlite"
                else text("SELECT jsonb_typeof(payload) FROM chat_events")
            )
        ).scalar()
    assert kinds == ("blob" if db.dialect == "sqlite" else "object")


@pytest.fixture
async def fresh_url(database_url: str, tmp_path: Path) -> AsyncIterator[str]:
    if database_url.startswith("sqlite"):
        yield f"sqlite+aiosqlite:///{tmp_path}/fresh.db"
        return
    schema = f"sb_pack_{secrets.token_hex(4)}"
    yield f"{POSTGRES_URL}?schema={schema}"
    await drop_schema(schema)


async def test_migration_0011_fills_call_id_and_downgrade_unpacks(fresh_url: str) -> None:
    config = alembic_config(fresh_url)
    await asyncio.to_thread(upgrade, fresh_url, "0010")
    db = Database(fresh_url)
    try:
        old_item = {"type": "function_call", "call_id": "call_old", "arguments": "{}"}
        async with db.engine.begin() as conn:
            await conn.execute(
                text("INSERT INTO users (id, name, created_at) VALUES ('u1', 'u1', :now)"),
                {"now": utcnow().replace(tzinfo=None)},
            )
            await conn.execute(
                text(
                    "INSERT INTO chats (id, user_id, created_at, updated_at, last_seq) "
                    "VALUES ('c1', 'u1', :now, :now, 0)"
                ),
                {"now": utcnow().replace(tzinfo=None)},
            )
            cast = "CAST(:item AS JSONB)" if db.dialect == "postgresql" else ":item"
            await conn.execute(
                text(
                    "INSERT INTO conversation_items (chat_id, item, created_at) "
                    f"VALUES ('c1', {cast}, :now)"
                ),
                {"item": json_dumps(old_item), "now": utcnow().replace(tzinfo=None)},
            )
        await db.dispose()
        await asyncio.to_thread(upgrade, fresh_url)
        assert await schema_diff(db) == []
        new_item = {"type": "function_call_output", "call_id": "call_new", "output": "y " * 200}
        await ChatSession(db, "c1").add_items([new_item])  # type: ignore[list-item]
        async with db.session() as session:
            rows = (await session.execute(select(conversation_items).order_by("id"))).all()
        assert [(r.item, r.call_id) for r in rows] == [
            (old_item, "call_old"),
            (new_item, "call_new"),
        ]
        await db.dispose()

        await asyncio.to_thread(command.downgrade, config, "0010")
        if db.dialect == "sqlite":
            path = make_url(fresh_url).database
            conn = sqlite3.connect(path)
            try:
                stored = conn.execute("SELECT item FROM conversation_items ORDER BY id").fetchall()
            finally:
                conn.close()
            # 0010's code reads JSON text only: every packed value was written back as text.
            assert [row[0] for row in stored] == [json_dumps(old_item), json_dumps(new_item)]
    finally:
        await db.dispose()
