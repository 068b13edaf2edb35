"""A turn's memory (websocket.memory) over a real database: the history read after the
stored compaction, folded and stored when it outgrows its room, reused by later turns, and
the guard that keeps each model call within the budget."""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from agents import Agent, RunConfig
from agents.run_config import CallModelData, ModelInputData

from app.llm.summarise import offline_summary
from app.settings import Settings
from storage.chats import ChatRepository
from storage.engine import Database
from storage.memory import MemoryStore
from storage.session import ChatSession, TurnSession
from storage.users import UserRepository
from tests.support.clients import open_client
from tests.support.servers import serve
from websocket.history_budget import Budget, item_tokens
from websocket.memory import MemoryPolicy, TurnMemory, is_summary_item, summary_item


class Summaries:
    """The offline summary, counting its calls and what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, int]] = []

    async def __call__(
        self, previous: str | None, items: Sequence[Mapping[str, Any]], max_tokens: int
    ) -> str:
        self.calls.append((previous, len(items)))
        return offline_summary(previous, items, max_tokens)


def turn(n: int, tool: bool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": f"question {n} " + "q" * 40}]
    if tool:
        items += [
            {"type": "function_call", "call_id": f"c{n}", "name": "search", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": "r" * 200},
        ]
    items.append({"role": "assistant", "content": [{"type": "output_text", "text": f"a{n}"}]})
    return items


@pytest.fixture
async def chat_id(db: Database) -> str:
    user, _ = await UserRepository(db).create_user("alice")
    return (await ChatRepository(db, user.id).get_or_create("long-chat")).id


AGENT = Agent(name="Switchboard", instructions="Be brief.")
BUDGET = Budget(context_tokens=2_000, answer_tokens=200)  # history room: about 1,330


def memory_for(db: Database, chat_id: str, summaries: Summaries) -> TurnMemory:
    policy = MemoryPolicy(BUDGET, summaries)
    session = ChatSession(db, chat_id)
    return TurnMemory(policy, MemoryStore(db), session, AGENT, None, "the next question")


def pairs_whole(items: list[dict[str, Any]]) -> bool:
    calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    return calls == outputs


async def test_history_is_compacted_stored_and_reused(db: Database, chat_id: str) -> None:
    summaries = Summaries()
    stored = ChatSession(db, chat_id)
    for n in range(6):
        await stored.add_items(turn(n, tool=n % 2 == 0))
    # Short enough: everything, no summary.
    history = await memory_for(db, chat_id, summaries).history()
    assert history == await stored.get_items() and summaries.calls == []

    for n in range(6, 20):
        await stored.add_items(turn(n, tool=n % 2 == 0))
    memory = memory_for(db, chat_id, summaries)
    history = await memory.history()
    assert summaries.calls == [(None, summaries.calls[0][1])]
    assert is_summary_item(history[0]) and not any(is_summary_item(i) for i in history[1:])
    assert history[1]["role"] == "user"  # cut at a turn's start
    assert pairs_whole(history[1:])
    room = BUDGET.history_tokens(0)
    assert sum(item_tokens(i) for i in history) <= room
    compaction = await MemoryStore(db).load(chat_id)
    assert compaction is not None and compaction.compactions == 1
    assert history[0] == summary_item(compaction.summary)
    # The kept items are exactly those after the compaction.
    rows = await stored.get_rows(compaction.through_item_id)
    assert history[1:] == [item for _, item in rows]

    # The next turn reads the stored compaction: no new summary.
    await stored.add_items(turn(20, tool=False))
    again = await memory_for(db, chat_id, summaries).history()
    assert len(summaries.calls) == 1
    assert again[0] == history[0] and again[-len(turn(20, False)) :] == turn(20, False)

    # Growing again: the previous summary is merged into the next one.
    for n in range(21, 40):
        await stored.add_items(turn(n, tool=n % 2 == 0))
    third = await memory_for(db, chat_id, summaries).history()
    assert len(summaries.calls) == 2 and summaries.calls[1][0] == compaction.summary
    later = await MemoryStore(db).load(chat_id)
    assert later is not None and later.compactions == 2
    assert later.through_item_id > compaction.through_item_id
    assert later.summary_tokens <= BUDGET.summary_tokens
    assert third[0] == summary_item(later.summary)
    # The stored items are all still there.
    assert sum(1 for i in await stored.get_items() if i.get("role") == "user") == 40


async def test_the_turn_session_reads_its_history_once_and_adds_what_is_pending(
    db: Database, chat_id: str
) -> None:
    summaries = Summaries()
    stored = ChatSession(db, chat_id)
    for n in range(20):
        await stored.add_items(turn(n, tool=True))
    memory = memory_for(db, chat_id, summaries)
    session = TurnSession(stored, history=memory.history)
    await session.add_items([{"role": "user", "content": "the next question"}])
    first = await session.get_items()
    assert is_summary_item(first[0]) and first[-1]["content"] == "the next question"
    assert await session.get_items() == first and len(summaries.calls) == 1
    # The SDK's tail reads (with a limit) are served as before, from the stored items.
    assert await session.get_items(limit=1) == [{"role": "user", "content": "the next question"}]
    # Only the turn's own items are written with its end, never the summary.
    assert session.items_to_keep(True) == ({"role": "user", "content": "the next question"},)


async def test_a_failing_summariser_leaves_the_history_whole_and_nothing_stored(
    db: Database, chat_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(previous: str | None, items: Sequence[Mapping[str, Any]], cap: int) -> str:
        raise RuntimeError("summary model down")

    stored = ChatSession(db, chat_id)
    for n in range(20):
        await stored.add_items(turn(n, tool=True))
    memory = TurnMemory(MemoryPolicy(BUDGET, broken), MemoryStore(db), stored, AGENT, None, "next")
    with caplog.at_level(logging.ERROR, logger="switchboard.memory"):
        history = await memory.history()
    assert history == await stored.get_items()
    assert await MemoryStore(db).load(chat_id) is None
    assert "could not summarise" in caplog.text


def test_the_guard_leaves_out_the_oldest_groups_but_never_the_summary_or_the_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    summaries = Summaries()
    memory = TurnMemory(
        MemoryPolicy(Budget(600, 100), summaries),
        MemoryStore(Database("sqlite+aiosqlite:///:memory:")),
        ChatSession(Database("sqlite+aiosqlite:///:memory:"), "c"),
        AGENT,
        None,
        "next",
    )
    history = [summary_item("earlier")] + turn(1, True) + turn(2, True) + turn(3, True)
    running = [
        {"role": "user", "content": "now"},
        {"type": "function_call", "call_id": "now1", "name": "search", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "now1", "output": "n" * 600},
    ]
    small = ModelInputData(input=[summary_item("earlier"), *running], instructions="Be brief.")
    assert memory.fit(small, AGENT) is small  # fits: untouched

    data = ModelInputData(input=[*history, *running], instructions="Be brief.")
    with caplog.at_level(logging.WARNING, logger="switchboard.memory"):
        fitted = memory.fit(data, AGENT)
    kept = fitted.input
    assert kept[0] == history[0] and kept[-3:] == running
    assert len(kept) < len(data.input) and pairs_whole(kept)
    assert sum(item_tokens(i) for i in kept) <= 500 - 3  # less the instructions
    assert fitted.instructions == "Be brief."
    assert "left the oldest history out" in caplog.text
    assert summaries.calls == []  # the guard never calls the summariser


# -- through the real app, with the offline demo model ----------------------------------

OFFLINE_PROMPTS = [
    "find sushi in Boston",
    "what did I spend on coffee last month",
    "search the web for python asyncio",
    "show reviews for the first one",
]


async def test_the_offline_model_summarises_a_long_chat_deterministically(
    make_settings: Callable[..., Settings],
) -> None:
    """Two chats with the same prompts on a small context: both are summarised, with
    the same summary, and every turn completes."""
    settings = make_settings(
        offline_delta_delay=0, model_context_tokens=7_000, prompts_per_minute=100_000
    )
    chats = [uuid.uuid4().hex, uuid.uuid4().hex]
    async with serve(settings) as live:
        for chat in chats:
            async with open_client(live.ws_url(chat), auto_approve=True) as client:
                for n in range(16):
                    events = await client.turn(OFFLINE_PROMPTS[n % len(OFFLINE_PROMPTS)])
                    end = next(e for e in events if e["type"] == "end_of_stream")
                    assert end["status"] == "completed", events[-3:]
        store = MemoryStore(live.services.db)
        first, second = [await store.load(chat) for chat in chats]
    assert first is not None and second is not None
    assert first.compactions >= 2, first
    assert (first.summary, first.compactions) == (second.summary, second.compactions)
    assert first.summary.startswith('- The user asked: "find sushi in Boston"') or (
        first.summary.startswith("(")  # the oldest lines gave way to their count
    )
    assert "tools used:" in first.summary
    # Whole lines only: the offline summary keeps within its budget by dropping the oldest
    # lines, never by being cut.
    lines = first.summary.splitlines()
    assert all(line.startswith("- ") and line.endswith(".") for line in lines[1:]), lines


async def test_the_guard_chains_the_deployments_filter_and_never_fails_a_call(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = Database("sqlite+aiosqlite:///:memory:")
    memory = TurnMemory(
        MemoryPolicy(Budget(600, 100), Summaries()),
        MemoryStore(database),
        ChatSession(database, "c"),
        AGENT,
        None,
        "next",
    )
    seen: list[int] = []

    def drop_first(data: CallModelData[Any]) -> ModelInputData:
        seen.append(len(data.model_data.input))
        return ModelInputData(input=data.model_data.input[1:], instructions="Be brief.")

    guarded = memory.run_config(RunConfig(call_model_input_filter=drop_first))
    assert guarded.call_model_input_filter is not None
    items: list[Any] = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    call = CallModelData(ModelInputData(input=items, instructions="x"), AGENT, None)
    result = guarded.call_model_input_filter(call)
    result = await result if inspect.isawaitable(result) else result
    assert seen == [2] and result.input == items[1:]  # the deployment's filter ran first

    def broken(data: ModelInputData, agent: Agent[Any]) -> ModelInputData:
        raise RuntimeError("a bug in the guard")

    monkeypatch.setattr(memory, "fit", broken)
    with caplog.at_level(logging.ERROR, logger="switchboard.memory"):
        result = guarded.call_model_input_filter(call)
        result = await result if inspect.isawaitable(result) else result
    assert result.input == items[1:]  # sent as the deployment's filter left it
    assert "could not fit a model call" in caplog.text
