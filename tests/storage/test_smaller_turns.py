"""Fewer bytes per turn (issue 21, migration 0012), on both engines: times packed on SQLite,
an ended turn without its lease, call ids only where an approval asked, and the search
index without positions. What is read back must not change."""

from __future__ import annotations

import asyncio
import secrets
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import insert, select, text
from sqlalchemy.engine import make_url

from alembic import command
from storage.chats import ChatRepository
from storage.engine import Database
from storage.events import EventStore
from storage.migrate import alembic_config, schema_diff, upgrade
from storage.models import approvals, chat_events, conversation_items, turns, utcnow
from storage.packed_time import PACKED, pack_time, pack_ts, unpack_time, unpack_ts
from storage.records import ChatRecord, Lease, TurnUpdate, UserRecord
from storage.search import search_chats
from storage.session import ChatSession
from storage.turn_actions import ActionRequest, start_action_turn
from tests.support.db import POSTGRES_URL, drop_schema

LEASE = Lease("test-instance", 30)


# ------------------------------------------------------------------- the packed forms


@pytest.mark.parametrize(
    "ts", ["2026-11-24T23:03:56.057Z", "1970-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"]
)
def test_a_wire_timestamp_packs_to_seven_bytes_and_back(ts: str) -> None:
    packed = pack_ts(ts)
    assert isinstance(packed, bytes) and len(packed) == 7 and packed[:1] == PACKED
    assert unpack_ts(packed) == ts


@pytest.mark.parametrize(
    "ts",
    [
        "2026-11-24T23:03:56.057+00:00",  # another spelling of a time: kept as written
        "2026-11-24T23:03:56.0570Z",
        "2026-11-24T23:03:56Z",
        "2026-11-24 23:03:56.057Z",
        "1969-12-31T23:59:59.999Z",
        "not a time at all, 24 ch",
    ],
)
def test_any_other_timestamp_stays_text(ts: str) -> None:
    assert pack_ts(ts) == ts
    assert unpack_ts(pack_ts(ts)) == ts


def test_a_datetime_packs_to_nine_bytes_with_its_microseconds() -> None:
    moment = datetime(2026, 11, 24, 23, 3, 54, 976060, tzinfo=UTC)
    packed = pack_time(moment.astimezone(timezone(timedelta(hours=2))))
    assert len(packed) == 9
    assert unpack_time(packed) == moment and unpack_time(packed).tzinfo == UTC
    # What SQLAlchemy wrote before on SQLite still reads.
    assert unpack_time("2026-11-24 23:03:54.976060") == moment
    with pytest.raises(ValueError, match="naive"):
        pack_time(moment.replace(tzinfo=None))
    with pytest.raises(ValueError, match="unknown packed"):
        unpack_time(b"\x02" + packed[1:])


# --------------------------------------------------------------- a turn, end to end


async def test_a_turn_reads_back_what_it_wrote_in_fewer_bytes(
    db: Database, store: EventStore, chat: ChatRecord, alice_chats: ChatRepository, ts: str
) -> None:
    turn, _, _ = await store.start_turn(chat.id, "hello", None, ts, lease=LEASE)
    usage = {"input_tokens": 6916, "output_tokens": 270, "total_tokens": 7186, "requests": 5}
    item = {"role": "assistant", "content": "hi there"}
    await store.append(
        chat.id,
        [],
        TurnUpdate(turn.id, status="completed", final_text="hi", usage=usage, items=(item,)),
    )
    [event] = await store.list_after(chat.id, 0)
    assert event.ts == ts
    [ended] = await alice_chats.turns(chat.id)
    assert (ended.usage, ended.final_text, ended.status) == (usage, "hi", "completed")
    assert ended.created_at == turn.created_at  # to the microsecond
    assert ended.finished_at is not None and ended.finished_at >= ended.created_at
    # Nothing runs an ended turn: its runner and lease are gone.
    assert (ended.runner, ended.lease_until) == (None, None)
    async with db.session() as session:
        row = (await session.execute(select(conversation_items))).one()
        assert row.item == item and abs(row.created_at - utcnow()) < timedelta(minutes=1)
        if db.dialect == "sqlite":
            kinds = (
                await session.execute(
                    text(
                        "SELECT typeof(e.ts), typeof(t.created_at), typeof(t.finished_at), "
                        "typeof(t.usage), typeof(i.created_at) FROM chat_events e, turns t, "
                        "conversation_items i"
                    )
                )
            ).one()
            assert tuple(kinds) == ("blob",) * 5


async def test_a_turns_end_keeps_call_ids_only_for_calls_an_approval_asked_about(
    db: Database,
    store: EventStore,
    chat: ChatRecord,
    alice: UserRecord,
    ts: str,
) -> None:
    """The history of a superseded turn keeps the calls the person approved (and only
    those): that must hold with the call ids written only where an approval asked."""
    turn, _, _ = await store.start_turn(chat.id, "send it", None, ts, lease=LEASE)
    now = utcnow()
    async with db.session(write=True) as session:
        await session.execute(
            insert(approvals).values(
                id="ap_1",
                chat_id=chat.id,
                turn_id=turn.id,
                call_id="call_sent",
                name="send_google_email",
                description="Sending an email",
                arguments={},
                current_agent="GMail",
                status="approved",
                created_at=now,
                expires_at=now + timedelta(minutes=5),
            )
        )
        await session.commit()
    items = (
        {"role": "user", "content": "send it"},
        {"type": "function_call", "call_id": "call_found", "name": "search", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_found", "output": "3 found"},
        {"type": "function_call", "call_id": "call_sent", "name": "send", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_sent", "output": "sent"},
        {"role": "assistant", "content": "Sent."},
    )
    await store.append(
        chat.id, [], TurnUpdate(turn.id, status="completed", final_text="Sent.", items=items)
    )
    async with db.session() as session:
        stored = (
            await session.execute(
                select(conversation_items.c.call_id).order_by(conversation_items.c.id)
            )
        ).scalars()
        assert list(stored) == [None, None, None, "call_sent", "call_sent", None]
    assert await ChatSession(db, chat.id).get_items() == list(items)

    await start_action_turn(
        db, chat.id, ActionRequest("regenerate", turn.id), "r", ts, owner=alice.id, lease=LEASE
    )
    # Only the approved call's items stay for the model; the rest of the turn goes.
    assert await ChatSession(db, chat.id).get_items() == [items[3], items[4]]


async def test_a_word_the_index_splits_is_still_found(
    db: Database, store: EventStore, chat: ChatRecord, alice: UserRecord, ts: str
) -> None:
    """A New Tai Lue vowel sign is a letter to Python (so one query word) and a separator
    to SQLite's tokenizer (so two index words), which an index without positions cannot
    match as a phrase: the query asks for each part instead of failing."""
    word = "k\u19b0la"  # ᦰ: U+19B0
    turn, _, _ = await store.start_turn(chat.id, f"find {word} today", None, ts)
    await store.append(chat.id, [], TurnUpdate(turn.id, status="completed", final_text="ok"))
    hits, _ = await search_chats(db, alice.id, word)
    if db.dialect == "sqlite":
        assert [(hit.chat.id, hit.kind) for hit in hits] == [(chat.id, "prompt")]
    # PostgreSQL's parser has its own idea of the word; it must answer either way.
    assert {hit.chat.id for hit in hits} <= {chat.id}


# ------------------------------------------------------------------ migration 0012


@pytest.fixture
async def fresh_url(database_url: str, tmp_path: Path) -> AsyncIterator[str]:
    if database_url.startswith("sqlite"):
        yield f"sqlite+aiosqlite:///{tmp_path}/fresh.db"
        return
    schema = f"sb_small_{secrets.token_hex(4)}"
    yield f"{POSTGRES_URL}?schema={schema}"
    await drop_schema(schema)


async def _fts_is_sound(db: Database) -> None:
    if db.dialect == "sqlite":  # FTS5 compares its index with chat_search's texts
        async with db.engine.begin() as conn:
            await conn.execute(
                text("INSERT INTO chat_search_fts (chat_search_fts) VALUES ('integrity-check')")
            )


async def _found(db: Database, query: str) -> list[str]:
    hits, _ = await search_chats(db, "u1", query)
    return [f"{hit.chat.id}:{hit.kind}" for hit in hits]


async def test_migration_0012_upgrades_stored_turns_and_downgrade_reads_as_before(
    fresh_url: str,
) -> None:
    config = alembic_config(fresh_url)
    await asyncio.to_thread(upgrade, fresh_url, "0011")
    db = Database(fresh_url)
    naive = utcnow().replace(tzinfo=None)
    try:
        async with db.engine.begin() as conn:
            await conn.execute(
                text("INSERT INTO users (id, name, created_at) VALUES ('u1', 'u1', :now)"),
                {"now": naive},
            )
            await conn.execute(
                text(
                    "INSERT INTO chats (id, user_id, title, created_at, updated_at, last_seq) "
                    "VALUES ('c1', 'u1', 'Sushi nights', :now, :now, 1)"
                ),
                {"now": naive},
            )
            # Written by 0011's code: an ended turn that kept its lease, a running one.
            for turn_id, status, answer in (
                ("t1", "completed", "Umi has omakase"),
                ("t2", "running", None),
            ):
                await conn.execute(
                    text(
                        "INSERT INTO turns (id, chat_id, prompt, status, final_text, "
                        "partial_text, created_at, finished_at, user_prompt_seq, runner, "
                        "lease_until, cancel_requested) VALUES (:id, 'c1', :prompt, :status, "
                        ":answer, '', :now, :now, 1, 'vm:1:ab', :now, false)"
                    ),
                    {
                        "id": turn_id,
                        "prompt": f"find {turn_id} restaurants",
                        "status": status,
                        "answer": answer,
                        "now": naive,
                    },
                )
        await db.dispose()

        await asyncio.to_thread(upgrade, fresh_url)
        assert await schema_diff(db) == []
        async with db.session() as session:
            rows = (await session.execute(select(turns.c.id, turns.c.runner))).all()
        leases = {turn_id: runner for turn_id, runner in rows}
        assert leases == {"t1": None, "t2": "vm:1:ab"}  # a running turn keeps its lease
        await _fts_is_sound(db)
        if db.dialect == "sqlite":
            async with db.engine.connect() as conn:
                fts = await conn.scalar(
                    text("SELECT sql FROM sqlite_master WHERE name = 'chat_search_fts'")
                )
            assert "detail=none, columnsize=0" in fts
        # Texts indexed before the upgrade are found after it, by prefix, as before.
        assert await _found(db, "omak") == ["c1:answer"]
        assert await _found(db, "sush nigh") == ["c1:title"]
        assert await _found(db, "t1 restaurant") == ["c1:prompt"]
        # And what is written now is indexed too, and stored packed on SQLite.
        store = EventStore(db)
        ts = "2026-11-24T23:03:56.057Z"
        await store.append(
            "c1",
            [],
            TurnUpdate(
                "t2",
                status="completed",
                final_text="Hana Hand Roll delivers",
                usage={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3, "requests": 1},
                items=({"role": "assistant", "content": "Hana Hand Roll delivers"},),
            ),
        )
        assert await _found(db, "deliver") == ["c1:answer"]
        await _fts_is_sound(db)
        async with db.session(write=True) as session:
            await session.execute(
                insert(chat_events).values(
                    chat_id="c1",
                    seq=2,
                    turn_id="t2",
                    type="end_of_stream",
                    payload={"status": "completed"},
                    ts=ts,
                )
            )
            await session.commit()
        await db.dispose()

        await asyncio.to_thread(command.downgrade, config, "0011")
        if db.dialect == "sqlite":
            raw = sqlite3.connect(make_url(fresh_url).database or "")
            try:
                kinds = raw.execute(
                    "SELECT typeof(e.ts), e.ts, typeof(t.created_at), typeof(t.finished_at), "
                    "typeof(t.usage), t.usage, typeof(i.created_at) FROM chat_events e, turns t, "
                    "conversation_items i WHERE t.id = 't2'"
                ).fetchone()
            finally:
                raw.close()
            # 0011's code reads text: every packed value was written back as text.
            assert kinds == (
                "text",
                ts,
                "text",
                "text",
                "text",
                '{"input_tokens":1,"output_tokens":2,"total_tokens":3,"requests":1}',
                "text",
            )
        await _fts_is_sound(db)
        assert await _found(db, "omak") == ["c1:answer"]
        assert sorted(await _found(db, "hana")) == ["c1:answer"]
    finally:
        await db.dispose()
