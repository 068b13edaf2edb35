"""5. Storage: event-append throughput and history-read latency of a 1,000-turn chat.

In-process against the real repositories (no socket: this isolates the database layer),
SQLite file vs. PostgreSQL. A chat is filled the way the turn writer fills it: per turn,
``start_turn`` (the prompt), the turn's events appended one transaction each (the
writer's pattern when the model is slower than the database), and ``end_of_stream``
together with the turn's final update and its model-side items. Then history is read
back the ways the product reads it: the whole event log, a resume from near the end,
one REST page, the turn list, and the model's conversation items.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.common import migrate, percentile, postgres_schema, sqlite_url, summary
from storage.chats import ChatRepository
from storage.engine import Database
from storage.events import EventStore
from storage.records import NewEvent, TurnUpdate
from storage.session import ChatSession
from storage.users import UserRepository

TS = "2025-01-31T12:00:00.000Z"
READ_REPEATS = 20
TAIL = 100


def _tool_output(turn: int) -> dict[str, Any]:
    businesses = [
        {
            "id": f"b{turn}-{i}",
            "name": f"Sushi Place {i}",
            "rating": 4.5,
            "review_count": 120 + i,
            "price": "$$",
            "url": f"https://example.com/b/{i}",
            "location": {"display_address": ["1 Main St", "Boston, MA 02110"]},
        }
        for i in range(5)
    ]
    return {
        "call_id": f"call_{turn}",
        "current_agent": "Yelp",
        "output": {
            "response_type": "yelp_search_results",
            "agent_name": "Yelp",
            "friendly_name": "Searching Yelp",
            "response": businesses,
            "display_response": True,
        },
    }


def turn_events(turn: int, turn_id: str) -> list[NewEvent]:
    """The persisted events of the benchmark's multi-agent turn, minus the prompt."""
    payloads: list[tuple[str, dict[str, Any]]] = [
        ("handoff", {"from_agent": "Switchboard", "to_agent": "Yelp"}),
        ("agent_updated", {"new_agent": "Yelp", "name": "Yelp", "current_agent": "Yelp"}),
        (
            "tool_call",
            {
                "call_id": f"call_{turn}",
                "name": "search_businesses_at_yelp",
                "description": "Searching Yelp",
                "current_agent": "Yelp",
                "arguments": {"term": "sushi", "location": "Boston"},
            },
        ),
        ("tool_output", _tool_output(turn)),
        ("handoff", {"from_agent": "Yelp", "to_agent": "GMail"}),
        ("agent_updated", {"new_agent": "GMail", "name": "Gmail", "current_agent": "GMail"}),
        ("llm_response", {"text": "word " * 50, "current_agent": "GMail"}),
    ]
    return [
        NewEvent(type=kind, turn_id=turn_id, payload=payload, ts=TS) for kind, payload in payloads
    ]


def model_items(turn: int) -> tuple[dict[str, Any], ...]:
    """What the SDK saves for one turn: the prompt, calls, outputs and the answer."""
    return (
        {"role": "user", "content": f"prompt {turn}"},
        {
            "type": "function_call",
            "call_id": f"call_{turn}",
            "name": "search_businesses_at_yelp",
            "arguments": '{"term":"sushi","location":"Boston"}',
            "id": f"fc_{turn}",
        },
        {"type": "function_call_output", "call_id": f"call_{turn}", "output": "5 results"},
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{turn}",
            "status": "completed",
            "content": [{"type": "output_text", "text": "word " * 50, "annotations": []}],
        },
    )


async def fill_chat(db: Database, chat_id: str, turns: int) -> dict[str, Any]:
    store = EventStore(db)
    latencies: list[float] = []
    events = 0
    started = time.perf_counter()
    for turn in range(turns):
        t0 = time.perf_counter()
        record, _, _ = await store.start_turn(chat_id, f"prompt {turn}", None, TS)
        latencies.append(time.perf_counter() - t0)
        for event in turn_events(turn, record.id):
            t0 = time.perf_counter()
            await store.append(chat_id, [event])
            latencies.append(time.perf_counter() - t0)
        end = NewEvent(
            type="end_of_stream",
            turn_id=record.id,
            ts=TS,
            payload={
                "status": "completed",
                "usage": {
                    "input_tokens": 10,
                    "output_tokens": 5,
                    "total_tokens": 15,
                    "requests": 3,
                },
            },
        )
        update = TurnUpdate(
            turn_id=record.id,
            status="completed",
            final_text="word " * 50,
            usage=end.payload["usage"],
            items=model_items(turn),
        )
        t0 = time.perf_counter()
        await store.append(chat_id, [end], update)
        latencies.append(time.perf_counter() - t0)
        events += 9
    elapsed = time.perf_counter() - started
    return {
        "turns": turns,
        "events": events,
        "seconds": elapsed,
        "events_per_s": events / elapsed,
        "transaction_ms": summary(latencies),
    }


async def batch_throughput(db: Database, chat_id: str, batches: int, size: int) -> float:
    """Events per second when the writer flushes ``size`` events per transaction."""
    store = EventStore(db)
    record, _, _ = await store.start_turn(chat_id, "batch", None, TS)
    batch = [
        NewEvent(
            type="agent_updated",
            turn_id=record.id,
            ts=TS,
            payload={"new_agent": "Yelp", "name": "Yelp", "current_agent": "Yelp"},
        )
        for _ in range(size)
    ]
    started = time.perf_counter()
    for _ in range(batches):
        await store.append(chat_id, batch)
    elapsed = time.perf_counter() - started
    await store.append(chat_id, [], TurnUpdate(turn_id=record.id, status="completed"))
    return batches * size / elapsed


async def timed(reads: int, read: Any) -> dict[str, float]:
    times = []
    for _ in range(reads):
        t0 = time.perf_counter()
        await read()
        times.append(time.perf_counter() - t0)
    return {"p50_ms": percentile(times, 0.5) * 1000, "p99_ms": percentile(times, 0.99) * 1000}


async def read_history(db: Database, user_id: str, chat_id: str) -> dict[str, Any]:
    chats = ChatRepository(db, user_id)
    store = EventStore(db)
    last = (await chats.get(chat_id)).last_seq  # type: ignore[union-attr]
    return {
        "last_seq": last,
        "all_events": await timed(READ_REPEATS // 4, lambda: chats.events(chat_id)),
        "resume_tail": await timed(READ_REPEATS, lambda: store.list_after(chat_id, last - TAIL)),
        "first_page": await timed(READ_REPEATS, lambda: chats.events(chat_id, 0, TAIL)),
        "turn_list": await timed(READ_REPEATS // 4, lambda: chats.turns(chat_id)),
        "model_items": await timed(READ_REPEATS // 4, lambda: ChatSession(db, chat_id).get_items()),
    }


async def run_engine(engine: str, url: str, turns: int) -> dict[str, Any]:
    db = Database(url)
    try:
        user = await UserRepository(db).ensure_local_user()
        chats = ChatRepository(db, user.id)
        await chats.get_or_create("long")
        await chats.get_or_create("batches")
        fill = await fill_chat(db, "long", turns)
        reads = await read_history(db, user.id, "long")
        batched = await batch_throughput(db, "batches", batches=100, size=10)
    finally:
        await db.dispose()
    return {"engine": engine, "fill": fill, "batched_events_per_s": batched, "reads": reads}


async def run(
    work_dir: Path, *, postgres_url: str | None, turns: int = 1000
) -> list[dict[str, Any]]:
    directory = work_dir / "storage"
    directory.mkdir()
    url = sqlite_url(directory)
    await migrate(url)
    rows = [await run_engine("sqlite", url, turns)]
    if postgres_url is not None:
        async with postgres_schema(postgres_url) as schema_url:
            rows.append(await run_engine("postgresql", schema_url, turns))
    return rows
