"""Full-text search over a user's chats (storage.search), on SQLite FTS5 and PostgreSQL:
the triggers keep the index in step with every write, and nothing of another user's or
of a tool's output is ever found."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select, text, update

from alembic import command
from storage.chats import ChatRepository
from storage.engine import Database
from storage.events import EventStore
from storage.migrate import alembic_config, upgrade
from storage.models import chat_search, turns, utcnow
from storage.records import NewEvent, TurnUpdate
from storage.search import BadQuery, matching_texts, search_chats, search_terms, snippet
from storage.users import UserRepository
from tests.support.db import POSTGRES_URL, drop_schema


async def answered(
    store: EventStore, chat_id: str, prompt: str, answer: str | None, ts: str, tool: str = ""
) -> str:
    """A turn of ``chat_id``: ``prompt``, a tool output holding ``tool``, then ``answer``."""
    turn, _, _ = await store.start_turn(chat_id, prompt, None, ts)
    events = [
        NewEvent(
            "tool_output",
            turn.id,
            {"call_id": "c1", "output": {"response": tool}, "current_agent": "A"},
            ts,
        )
    ]
    update_ = TurnUpdate(turn.id, status="completed", final_text=answer)  # type: ignore[arg-type]
    await store.append(chat_id, events, update_)
    return turn.id


async def ids(db: Database, user_id: str, query: str, limit: int = 50) -> list[str]:
    hits, _ = await search_chats(db, user_id, query, limit=limit)
    return [hit.chat.id for hit in hits]


async def test_finds_prompts_answers_and_titles_by_word_prefix(
    db: Database, alice_chats: ChatRepository, store: EventStore, ts: str
) -> None:
    for chat_id in ("coffee", "trip", "titled"):
        await alice_chats.get_or_create(chat_id)
    await answered(store, "coffee", "What did I spend on coffee last month?", "You spent $42.", ts)
    await answered(store, "trip", "Plan a weekend", "Lisbon has great pastries and trams.", ts)
    await answered(store, "titled", "hello", "hi", ts)
    await alice_chats.set_title("titled", "Quarterly budget review")

    assert await ids(db, alice_chats.user_id, "coffee") == ["coffee"]
    assert await ids(db, alice_chats.user_id, "COFF") == ["coffee"]  # prefix, any case
    assert await ids(db, alice_chats.user_id, "pastry") == ["trip"]  # stemmed: pastries
    assert await ids(db, alice_chats.user_id, "lisbon trams") == ["trip"]  # every word
    assert await ids(db, alice_chats.user_id, "lisbon coffee") == []
    assert await ids(db, alice_chats.user_id, "budget") == ["titled"]
    assert await ids(db, alice_chats.user_id, "spent") == ["coffee"]  # an answer's word

    hits, _ = await search_chats(db, alice_chats.user_id, "pastries")
    assert hits[0].kind == "answer"
    assert hits[0].snippet == "Lisbon has great pastries and trams."


async def test_tool_outputs_are_not_searched(
    db: Database, alice_chats: ChatRepository, store: EventStore, ts: str
) -> None:
    await alice_chats.get_or_create("c")
    await answered(store, "c", "search the web", "Here you go.", ts, tool="zanzibar secret")
    assert await ids(db, alice_chats.user_id, "zanzibar") == []
    assert await ids(db, alice_chats.user_id, "web") == ["c"]


async def test_never_another_users_chats(
    db: Database,
    alice_chats: ChatRepository,
    bob_chats: ChatRepository,
    store: EventStore,
    ts: str,
) -> None:
    await alice_chats.get_or_create("alices")
    await bob_chats.get_or_create("bobs")
    await answered(store, "alices", "dinner recipes", "Try risotto.", ts)
    await answered(store, "bobs", "dinner ideas", "Try risotto too.", ts)
    assert await ids(db, alice_chats.user_id, "risotto") == ["alices"]
    assert await ids(db, bob_chats.user_id, "risotto") == ["bobs"]


async def test_index_follows_renames_answers_and_deletes(
    db: Database, alice_chats: ChatRepository, store: EventStore, ts: str
) -> None:
    await alice_chats.get_or_create("c")
    await alice_chats.set_title("c", "Old name")
    turn_id = await answered(store, "c", "hello", "first answer", ts)
    assert await ids(db, alice_chats.user_id, "old") == ["c"]

    await alice_chats.set_title("c", "Holiday plans")
    assert await ids(db, alice_chats.user_id, "old") == []
    assert await ids(db, alice_chats.user_id, "holiday") == ["c"]

    # A rewritten answer replaces the old text rather than adding to it.
    async with db.session(write=True) as session:
        await session.execute(
            update(turns).where(turns.c.id == turn_id).values(final_text="second answer")
        )
        await session.commit()
    assert await ids(db, alice_chats.user_id, "first") == []
    assert await ids(db, alice_chats.user_id, "second") == ["c"]

    # Streaming writes (partial_text) do not touch the index.
    async with db.session() as session:
        before = await session.scalar(select(func.count()).select_from(chat_search))
    async with db.session(write=True) as session:
        await session.execute(
            update(turns).where(turns.c.id == turn_id).values(partial_text="streaming…")
        )
        await session.commit()
    async with db.session() as session:
        assert await session.scalar(select(func.count()).select_from(chat_search)) == before

    assert await alice_chats.delete("c")
    assert await ids(db, alice_chats.user_id, "holiday") == []
    async with db.session() as session:
        assert await session.scalar(select(func.count()).select_from(chat_search)) == 0
        if db.dialect == "sqlite":
            # The FTS5 index itself agrees with its content table after the cascade.
            await session.execute(
                text("INSERT INTO chat_search_fts (chat_search_fts) VALUES ('integrity-check')")
            )


async def test_pages_like_the_list(
    db: Database, alice_chats: ChatRepository, store: EventStore, ts: str
) -> None:
    for n in range(5):
        await alice_chats.get_or_create(f"c{n}")
        await answered(store, f"c{n}", f"question {n} about taxes", "an answer", ts)
    await alice_chats.get_or_create("other")
    await answered(store, "other", "unrelated", "nothing", ts)

    seen: list[str] = []
    cursor: str | None = None
    while True:
        hits, cursor = await search_chats(db, alice_chats.user_id, "taxes", 2, cursor)
        assert len(hits) <= 2
        seen += [hit.chat.id for hit in hits]
        if cursor is None:
            break
    listed, _ = await alice_chats.list(limit=50)
    assert seen == [chat.id for chat in listed if chat.id != "other"]
    assert len(seen) == 5


async def test_a_query_is_words_only(
    db: Database, alice_chats: ChatRepository, store: EventStore, ts: str
) -> None:
    """Engine query syntax in the input is just punctuation: no error, no injection."""
    await alice_chats.get_or_create("c")
    await answered(store, "c", "rock and roll", "yes", ts)
    for query in ('rock" OR "x', "rock:* | x", "rock AND (", "roll*", "NEAR(rock roll)"):
        await search_chats(db, alice_chats.user_id, query)
    assert await ids(db, alice_chats.user_id, 'rock" OR "zzz') == []  # OR is just a word
    assert await ids(db, alice_chats.user_id, "(rock)") == ["c"]
    assert await ids(db, alice_chats.user_id, "rock_roll") == ["c"]  # "_" separates words


@pytest.mark.parametrize(
    "query", ["", "   ", "?!…", "__", "x" * 201, " ".join(f"w{n}" for n in range(13))]
)
def test_bad_queries(query: str) -> None:
    with pytest.raises(BadQuery):
        search_terms(query)


def test_snippet_is_cut_around_the_match_on_word_boundaries() -> None:
    body = " ".join(f"word{n}" for n in range(100)) + " the coffee here " + "tail " * 50
    cut = snippet(body, ["coffee"], width=60)
    assert cut.startswith("…") and cut.endswith("…")
    assert "coffee" in cut
    assert len(cut) <= 62
    assert all(
        part.startswith(("word", "the", "coffee", "here", "tail")) for part in cut[1:-1].split()
    )
    assert snippet("short text", ["zzz"]) == "short text"
    assert snippet("## Picks\nTry **Umi** and `Ganko`\n> quoted", ["umi"]) == (
        "Picks Try Umi and Ganko quoted"
    )


async def test_the_query_uses_the_engines_full_text_index(db: Database) -> None:
    """The search condition is the index's own expression (no scan of every text)."""
    condition = matching_texts(db.dialect, ["coffee"])
    statement = select(chat_search.c.chat_id).where(condition)
    compiled = statement.compile(dialect=db.engine.dialect, compile_kwargs={"literal_binds": True})
    explain = "EXPLAIN" if db.dialect == "postgresql" else "EXPLAIN QUERY PLAN"
    async with db.transaction() as conn:
        if db.dialect == "postgresql":
            # An empty table: without this the planner rightly prefers a sequential scan.
            await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        plan = "\n".join(
            str(row[-1]) for row in await conn.exec_driver_sql(f"{explain} {compiled}")
        )
    expected = "ix_chat_search_body" if db.dialect == "postgresql" else "VIRTUAL TABLE INDEX"
    assert expected in plan, plan


@pytest.fixture
async def fresh_url(database_url: str, tmp_path: Path) -> AsyncIterator[str]:
    """An empty, unmigrated database on the same engine as ``database_url``."""
    if database_url.startswith("sqlite"):
        yield f"sqlite+aiosqlite:///{tmp_path}/fresh.db"
        return
    schema = f"sb_search_{secrets.token_hex(4)}"
    yield f"{POSTGRES_URL}?schema={schema}"
    await drop_schema(schema)


async def old_turn(db: Database, chat_id: str, seq: int, prompt: str, answer: str) -> None:
    """A finished turn written with only the columns every schema since 0001 has: this
    test runs on older schemas, which later migrations' columns are missing from."""
    async with db.session(write=True) as session:
        await session.execute(
            insert(turns).values(
                id=secrets.token_hex(8),
                chat_id=chat_id,
                prompt=prompt,
                status="completed",
                final_text=answer,
                partial_text="",
                created_at=utcnow(),
                user_prompt_seq=seq,
            )
        )
        await session.commit()


async def old_prompts(db: Database, chat_id: str) -> list[str]:
    async with db.session() as session:
        query = select(turns.c.prompt).where(turns.c.chat_id == chat_id)
        return list(await session.scalars(query.order_by(turns.c.user_prompt_seq)))


async def test_the_upgrade_indexes_existing_chats(fresh_url: str, ts: str) -> None:
    """Chats written before migration 0006 are found after it (the backfill), and the
    downgrade takes the index away again without touching the chats."""
    await asyncio.to_thread(upgrade, fresh_url, "0005")
    db = Database(fresh_url)
    try:
        user, _ = await UserRepository(db).create_user("old-timer")
        repo = ChatRepository(db, user.id)
        await repo.get_or_create("old")
        await repo.set_title("old", "Tax return")
        await old_turn(db, "old", 1, "deductions for a home office", "Keep receipts.")
        await asyncio.to_thread(upgrade, fresh_url)
        assert await ids(db, user.id, "tax") == ["old"]
        assert await ids(db, user.id, "office") == ["old"]
        assert await ids(db, user.id, "receipts") == ["old"]
        # Written after the upgrade: the triggers take over from the backfill.
        await answered(EventStore(db), "old", "and mileage?", "Log every trip.", ts)
        assert await ids(db, user.id, "mileage") == ["old"]

        await asyncio.to_thread(command.downgrade, alembic_config(fresh_url), "0005")
        assert await old_prompts(db, "old") == ["deductions for a home office", "and mileage?"]
        await old_turn(db, "old", 9, "one more", "ok")  # no trigger left behind
    finally:
        await db.dispose()


async def test_the_snippet_is_the_newest_matching_message_before_the_title(
    db: Database, alice_chats: ChatRepository, store: EventStore, ts: str
) -> None:
    await alice_chats.get_or_create("c")
    await answered(store, "c", "sushi in Boston?", "Umi has good sushi.", ts)
    await answered(store, "c", "and ramen?", "Try Ganko.", ts)
    await alice_chats.set_title("c", "Sushi in Boston")  # newest of all, but the title
    [hit], _ = await search_chats(db, alice_chats.user_id, "sushi")
    assert (hit.kind, hit.snippet) == ("answer", "Umi has good sushi.")
    [hit], _ = await search_chats(db, alice_chats.user_id, "boston")
    assert (hit.kind, hit.snippet) == ("prompt", "sushi in Boston?")
    await alice_chats.set_title("c", "Dinner ideas")
    [hit], _ = await search_chats(db, alice_chats.user_id, "dinner")
    assert (hit.kind, hit.snippet) == ("title", "Dinner ideas")
