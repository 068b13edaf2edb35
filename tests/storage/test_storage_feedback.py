"""Ratings of answers: one per (turn, user), replaced and cleared; owner-checked; a
running turn refused; the rows go with their chat. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, update

from storage.chats import ChatRepository
from storage.engine import Database
from storage.errors import ChatNotFound, TurnInProgress, TurnNotFound
from storage.events import EventStore
from storage.feedback import MAX_COMMENT_CHARS, FeedbackRepository
from storage.models import feedback, turns
from storage.records import ChatRecord, UserRecord


async def ended_turn(db: Database, chat_id: str, prompt: str, ts: str) -> str:
    turn, _, _ = await EventStore(db).start_turn(chat_id, prompt, None, ts)
    async with db.session(write=True) as session:
        await session.execute(
            update(turns).where(turns.c.id == turn.id).values(status="completed", final_text="ok")
        )
        await session.commit()
    return turn.id


async def rows(db: Database) -> int:
    async with db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(feedback)) or 0)


async def test_rate_change_and_clear(
    db: Database, alice: UserRecord, chat: ChatRecord, ts: str
) -> None:
    turn_id = await ended_turn(db, chat.id, "coffee last month", ts)
    repo = FeedbackRepository(db, alice.id)

    first = await repo.rate(chat.id, turn_id, "down", "wrong month <b>really</b>")
    assert first.before is None
    assert (first.after.rating, first.after.comment) == ("down", "wrong month <b>really</b>")

    changed = await repo.rate(chat.id, turn_id, "up", None)
    assert (changed.before, changed.after.rating, changed.after.comment) == ("down", "up", None)
    assert changed.after.created_at == first.after.created_at  # one rating, replaced
    assert changed.after.updated_at >= first.after.updated_at
    assert await rows(db) == 1

    stored = await repo.for_chat(chat.id)
    assert list(stored) == [turn_id] and stored[turn_id].rating == "up"

    assert await repo.clear(chat.id, turn_id) == "up"
    assert await repo.clear(chat.id, turn_id) is None  # clearing nothing is fine
    assert await repo.for_chat(chat.id) == {}


async def test_each_turn_has_its_own_rating(
    db: Database, alice: UserRecord, chat: ChatRecord, ts: str
) -> None:
    first = await ended_turn(db, chat.id, "one", ts)
    second = await ended_turn(db, chat.id, "two", ts)
    repo = FeedbackRepository(db, alice.id)
    await repo.rate(chat.id, first, "up", None)
    await repo.rate(chat.id, second, "down", "no")
    assert {k: v.rating for k, v in (await repo.for_chat(chat.id)).items()} == {
        first: "up",
        second: "down",
    }


async def test_refusals_store_nothing(
    db: Database,
    alice: UserRecord,
    bob: UserRecord,
    alice_chats: ChatRepository,
    chat: ChatRecord,
    ts: str,
) -> None:
    done = await ended_turn(db, chat.id, "done", ts)
    other_chat = await alice_chats.get_or_create("chat-2")
    elsewhere = await ended_turn(db, other_chat.id, "elsewhere", ts)
    running, _, _ = await EventStore(db).start_turn(chat.id, "still running", None, ts)
    alice_repo = FeedbackRepository(db, alice.id)

    with pytest.raises(ChatNotFound):
        await FeedbackRepository(db, bob.id).rate(chat.id, done, "up", None)
    with pytest.raises(ChatNotFound):
        await FeedbackRepository(db, bob.id).clear(chat.id, done)
    with pytest.raises(TurnNotFound):
        await alice_repo.rate(chat.id, "no-such-turn", "up", None)
    with pytest.raises(TurnNotFound, match="not found in this chat"):
        await alice_repo.rate(chat.id, elsewhere, "up", None)  # another chat's turn
    with pytest.raises(TurnNotFound):
        await alice_repo.clear(chat.id, elsewhere)
    with pytest.raises(TurnInProgress):
        await alice_repo.rate(chat.id, running.id, "down", None)
    with pytest.raises(ValueError, match="'up' or 'down'"):
        await alice_repo.rate(chat.id, done, "sideways", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"longer than {MAX_COMMENT_CHARS}"):
        await alice_repo.rate(chat.id, done, "down", "x" * (MAX_COMMENT_CHARS + 1))
    assert await rows(db) == 0


async def test_ratings_go_with_their_chat(
    db: Database, alice: UserRecord, alice_chats: ChatRepository, chat: ChatRecord, ts: str
) -> None:
    turn_id = await ended_turn(db, chat.id, "bye", ts)
    await FeedbackRepository(db, alice.id).rate(chat.id, turn_id, "up", "thanks")
    assert await alice_chats.delete(chat.id)
    assert await rows(db) == 0
