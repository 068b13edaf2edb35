"""The event log: turns, gap-free seqs under concurrency, crash recovery."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from storage.chats import ChatRepository
from storage.engine import Database
from storage.errors import ChatNotFound, TurnInProgress
from storage.events import EventStore, make_preview
from storage.models import turns
from storage.records import ChatRecord, NewEvent, TurnUpdate

USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "requests": 1}


def delta(turn_id: str, ts: str, text: str = "x") -> NewEvent:
    return NewEvent("llm_response", turn_id, {"text": text, "current_agent": "Switchboard"}, ts)


async def finish(store: EventStore, chat_id: str, turn_id: str, ts: str) -> None:
    await store.append(
        chat_id,
        [NewEvent("end_of_stream", turn_id, {"status": "completed", "usage": USAGE}, ts)],
        TurnUpdate(turn_id, status="completed", final_text="done", usage=USAGE),
    )


async def test_start_turn_persists_turn_and_user_prompt(
    db: Database, store: EventStore, alice_chats: ChatRepository, chat: ChatRecord, ts: str
) -> None:
    turn, event, created = await store.start_turn(chat.id, "Find  me\nsushi", "m1", ts)
    assert created is True
    assert (turn.status, turn.prompt, turn.client_message_id) == (
        "running",
        "Find  me\nsushi",
        "m1",
    )
    assert turn.user_prompt_seq == event.seq == 1
    assert turn.created_at == datetime.fromisoformat(ts).astimezone(UTC)
    assert event.to_wire() == {
        "type": "user_prompt",
        "chat_id": chat.id,
        "turn_id": turn.id,
        "seq": 1,
        "ts": ts,
        "text": "Find  me\nsushi",
        "client_message_id": "m1",
    }
    assert await store.get_turn(turn.id) == turn
    assert await store.running_turn(chat.id) == turn
    async with db.session() as session:
        # No usage yet is SQL NULL, not the JSON text 'null'.
        assert await session.scalar(select(turns.c.id).where(turns.c.usage.is_(None))) == turn.id
    assert await store.list_after(chat.id, 0) == [event]
    stored = await alice_chats.get(chat.id)
    assert stored is not None
    assert (stored.last_seq, stored.preview) == (1, "Find me sushi")
    assert stored.updated_at >= chat.updated_at


def test_preview_is_short_and_one_line() -> None:
    assert make_preview("a\n\n b") == "a b"
    long = make_preview("word " * 100)
    assert len(long) <= 120 and long.endswith("…")


async def test_start_turn_is_idempotent_on_client_message_id(
    store: EventStore, chat: ChatRecord, ts: str
) -> None:
    turn, event, _ = await store.start_turn(chat.id, "hello", "m1", ts)
    again, again_event, created = await store.start_turn(chat.id, "hello", "m1", ts)
    assert created is False
    assert (again, again_event) == (turn, event)
    # Also after the turn finished: a late retry must not run the prompt twice.
    await finish(store, chat.id, turn.id, ts)
    late, late_event, created = await store.start_turn(chat.id, "hello", "m1", ts)
    assert created is False and late.id == turn.id and late.status == "completed"
    assert late_event == event


async def test_one_running_turn_per_chat(store: EventStore, chat: ChatRecord, ts: str) -> None:
    first, _, _ = await store.start_turn(chat.id, "one", None, ts)
    with pytest.raises(TurnInProgress) as caught:
        await store.start_turn(chat.id, "two", None, ts)
    assert caught.value.turn_id == first.id
    await finish(store, chat.id, first.id, ts)
    second, event, created = await store.start_turn(chat.id, "two", None, ts)
    assert created and event.seq == 3  # user_prompt, end_of_stream, user_prompt


async def test_start_turn_for_an_owner_refuses_anyone_elses_chat(
    store: EventStore, chat: ChatRecord
) -> None:
    # A socket checked the chat when it connected; the chat may have been deleted and its id
    # taken by someone else since.
    ts = "2025-01-01T00:00:00.000Z"
    with pytest.raises(ChatNotFound):
        await store.start_turn(chat.id, "x", None, ts, owner=f"not-{chat.user_id}")
    assert await store.list_after(chat.id, 0) == []
    turn, event, created = await store.start_turn(chat.id, "x", None, ts, owner=chat.user_id)
    assert created and event.seq == 1 and turn.prompt == "x"


async def test_start_turn_unknown_chat_and_bad_ts(store: EventStore, chat: ChatRecord) -> None:
    with pytest.raises(ChatNotFound):
        await store.start_turn("missing", "x", None, "2025-01-01T00:00:00.000Z")
    with pytest.raises(ValueError, match="RFC 3339"):
        await store.start_turn(chat.id, "x", None, "yesterday")
    with pytest.raises(ValueError, match="no time zone"):
        await store.start_turn(chat.id, "x", None, "2025-01-01T00:00:00")


async def test_append_assigns_consecutive_seqs_and_applies_update(
    store: EventStore, alice_chats: ChatRepository, chat: ChatRecord, ts: str
) -> None:
    turn, _, _ = await store.start_turn(chat.id, "hi", None, ts)
    records = await store.append(
        chat.id,
        [delta(turn.id, ts, "a"), delta(turn.id, ts, "b")],
        TurnUpdate(turn.id, partial_text="ab", current_agent="Yelp"),
    )
    assert [r.seq for r in records] == [2, 3]
    assert [r.payload["text"] for r in records] == ["a", "b"]
    checkpoint = await store.get_turn(turn.id)
    assert checkpoint is not None
    assert (checkpoint.partial_text, checkpoint.current_agent) == ("ab", "Yelp")
    assert checkpoint.status == "running" and checkpoint.finished_at is None

    await finish(store, chat.id, turn.id, ts)
    done = await store.get_turn(turn.id)
    assert done is not None
    assert (done.status, done.final_text, done.usage) == ("completed", "done", USAGE)
    assert done.partial_text == "ab"  # untouched fields stay
    assert done.finished_at is not None and done.finished_at.tzinfo == UTC
    assert await store.running_turn(chat.id) is None

    assert [e.seq for e in await store.list_after(chat.id, 0)] == [1, 2, 3, 4]
    assert [e.seq for e in await store.list_after(chat.id, 2)] == [3, 4]
    assert [e.seq for e in await store.list_after(chat.id, 1, limit=2)] == [2, 3]
    assert [e.seq for e in await alice_chats.events(chat.id, after_seq=3)] == [4]
    assert [t.id for t in await alice_chats.turns(chat.id)] == [turn.id]
    assert (await alice_chats.get(chat.id)).last_seq == 4  # type: ignore[union-attr]


async def test_append_nothing_is_a_no_op(store: EventStore, chat: ChatRecord) -> None:
    assert await store.append(chat.id, []) == []


async def test_update_only_checkpoint_takes_no_seq(
    store: EventStore, alice_chats: ChatRepository, chat: ChatRecord, ts: str
) -> None:
    turn, _, _ = await store.start_turn(chat.id, "hi", None, ts)
    assert await store.append(chat.id, [], TurnUpdate(turn.id, partial_text="so far")) == []
    assert (await store.get_turn(turn.id)).partial_text == "so far"  # type: ignore[union-attr]
    assert (await alice_chats.get(chat.id)).last_seq == 1  # type: ignore[union-attr]


async def test_append_is_atomic(
    store: EventStore, alice_chats: ChatRepository, chat: ChatRecord, ts: str
) -> None:
    other = await alice_chats.get_or_create("other")
    foreign, _, _ = await store.start_turn(other.id, "elsewhere", None, ts)
    turn, _, _ = await store.start_turn(chat.id, "hi", None, ts)
    with pytest.raises(ValueError, match="does not exist in chat"):
        await store.append(chat.id, [delta(turn.id, ts)], TurnUpdate(foreign.id, status="failed"))
    # Neither the event nor its seq was kept.
    assert [e.seq for e in await store.list_after(chat.id, 0)] == [1]
    assert (await alice_chats.get(chat.id)).last_seq == 1  # type: ignore[union-attr]
    assert [r.seq for r in await store.append(chat.id, [delta(turn.id, ts)])] == [2]
    with pytest.raises(ChatNotFound):
        await store.append("missing", [delta(turn.id, ts)])


async def test_payload_json_round_trip(store: EventStore, chat: ChatRecord, ts: str) -> None:
    turn, _, _ = await store.start_turn(chat.id, "hi", None, ts)
    payload = {
        "call_id": "c1",
        "output": {"response": [{"a": 1, "b": [True, None, 2.5]}], "debug_info": {"k": "v"}},
        "current_agent": "Yelp",
        "unicode": "crème brûlée 🍮",
    }
    await store.append(chat.id, [NewEvent("tool_output", turn.id, payload, ts)])
    stored = (await store.list_after(chat.id, 1))[0]
    assert stored.payload == payload
    assert "debug_info" not in stored.to_wire()["output"]


async def test_turns_whose_lease_expired_are_found_and_closed(
    db: Database, store: EventStore, alice_chats: ChatRepository, chat: ChatRecord, ts: str
) -> None:
    other = await alice_chats.get_or_create("other")
    done = await alice_chats.get_or_create("done")
    cut, _, _ = await store.start_turn(chat.id, "one", None, ts)
    await store.append(chat.id, [delta(cut.id, ts)], TurnUpdate(cut.id, partial_text="half an ans"))
    cut_too, _, _ = await store.start_turn(other.id, "two", None, ts)
    finished, _, _ = await store.start_turn(done.id, "three", None, ts)
    await finish(store, done.id, finished.id, ts)

    # What the orphan sweep (websocket.leases) does: no lease holds these two turns.
    expired = await store.expired_turns()
    assert sorted((ref.chat_id, ref.turn_id) for ref in expired) == sorted(
        [(chat.id, cut.id), (other.id, cut_too.id)]
    )
    assert {ref.user_id for ref in expired} == {chat.user_id}
    for ref in expired:
        assert await store.close_turn(ref.chat_id, ref.turn_id, ts)

    closed = await store.get_turn(cut.id)
    assert closed is not None
    assert (closed.status, closed.final_text) == ("failed", "half an ans")
    assert closed.finished_at is not None
    last = (await store.list_after(chat.id, 0))[-1]
    assert (last.seq, last.type, last.turn_id) == (3, "end_of_stream", cut.id)
    assert last.payload == {
        "status": "failed",
        "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "requests": 0},
    }
    assert (await store.get_turn(cut_too.id)).status == "failed"  # type: ignore[union-attr]
    assert (await store.get_turn(finished.id)).status == "completed"  # type: ignore[union-attr]
    assert len(await store.list_after(done.id, 0)) == 2  # nothing added to a finished turn
    assert await store.expired_turns() == []
    assert await store.close_turn(chat.id, cut.id, ts) == []  # closed once only
    # The chats can run turns again.
    assert (await store.start_turn(chat.id, "again", None, ts))[2] is True


# --- concurrency -------------------------------------------------------------------------


async def test_concurrent_appenders_get_unique_gap_free_seqs(
    db: Database, store: EventStore, chat: ChatRecord, ts: str
) -> None:
    """Many writers on one chat: seqs are exactly 1..N, each writer's in its own order.

    On PostgreSQL 20 writers × 10 single-event appends race for the chat row; on SQLite
    (one writer at a time by design) 5 × 10 checks that waiting writers never fail.
    """
    writers = 20 if db.dialect == "postgresql" else 5
    per_writer = 10
    turn, _, _ = await store.start_turn(chat.id, "go", None, ts)

    async def writer(w: int) -> list[int]:
        seqs = []
        for i in range(per_writer):
            [record] = await store.append(chat.id, [delta(turn.id, ts, f"{w}:{i}")])
            seqs.append(record.seq)
        return seqs

    results = await asyncio.gather(*(writer(w) for w in range(writers)))
    for seqs in results:
        assert seqs == sorted(seqs)
    allocated = sorted(seq for seqs in results for seq in seqs)
    total = writers * per_writer
    assert allocated == list(range(2, total + 2))  # seq 1 is the user_prompt
    stored = await store.list_after(chat.id, 0)
    assert [e.seq for e in stored] == list(range(1, total + 2))
    # Every writer's events are stored in the order it wrote them.
    for w in range(writers):
        mine = [e.payload["text"] for e in stored if e.payload.get("text", "").startswith(f"{w}:")]
        assert mine == [f"{w}:{i}" for i in range(per_writer)]


async def test_concurrent_batches_stay_contiguous(
    db: Database, store: EventStore, chat: ChatRecord, ts: str
) -> None:
    turn, _, _ = await store.start_turn(chat.id, "go", None, ts)
    batches = await asyncio.gather(
        *(store.append(chat.id, [delta(turn.id, ts, str(b))] * 7) for b in range(10))
    )
    for batch in batches:
        seqs = [r.seq for r in batch]
        assert seqs == list(range(seqs[0], seqs[0] + 7))
    assert sorted(r.seq for batch in batches for r in batch) == list(range(2, 72))


async def test_concurrent_start_turns_only_one_wins(
    db: Database, store: EventStore, chat: ChatRecord, ts: str
) -> None:
    outcomes = await asyncio.gather(
        *(store.start_turn(chat.id, f"prompt {i}", f"m{i}", ts) for i in range(10)),
        return_exceptions=True,
    )
    started = [o for o in outcomes if isinstance(o, tuple)]
    refused = [o for o in outcomes if isinstance(o, TurnInProgress)]
    assert len(started) == 1 and len(refused) == 9, outcomes
    assert all(r.turn_id == started[0][0].id for r in refused)
    async with db.session() as session:
        assert len((await session.execute(select(turns.c.id))).all()) == 1
    assert [e.seq for e in await store.list_after(chat.id, 0)] == [1]


async def test_concurrent_retries_of_one_prompt_start_it_once(
    store: EventStore, chat: ChatRecord, ts: str
) -> None:
    outcomes = await asyncio.gather(*(store.start_turn(chat.id, "hi", "m1", ts) for _ in range(6)))
    assert sum(created for _, _, created in outcomes) == 1
    assert len({turn.id for turn, _, _ in outcomes}) == 1
    assert {event.seq for _, event, _ in outcomes} == {1}
