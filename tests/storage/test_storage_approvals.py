"""Approvals in storage: pausing, the first decision wins, exactly one resume, superseding,
expiry, and the record of every decision. Real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from storage.approvals import NOT_RUN, ApprovalRequest, ApprovalStore
from storage.chats import ChatRepository
from storage.engine import Database
from storage.errors import ApprovalDecided, ApprovalNotFound, TurnFenced
from storage.events import EventStore
from storage.models import approvals, conversation_items, paused_turns
from storage.records import ChatRecord, Lease, NewEvent, UserRecord
from storage.session import ChatSession

LEASE = Lease("test-instance", 30.0)  # a live instance's

ARGS = {"to": ["bob@example.com"], "subject": "Sushi", "body": "Hi Bob"}
USAGE = {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10, "requests": 2}
STATE: dict[str, Any] = {
    "version": 1,
    "run": {"opaque": True},
    "agent": "GMail",
    "session": [
        {"role": "user", "content": "email Bob"},
        {"type": "function_call", "call_id": "c1", "name": "send_google_email", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "send_google_email", "arguments": "{}"},
    ],
}


def request(approval_id: str, call_id: str) -> ApprovalRequest:
    return ApprovalRequest(
        approval_id, call_id, "send_google_email", "Sending an email", ARGS, "GMail"
    )


def later(hours: float = 1) -> datetime:
    return datetime.now(UTC) + timedelta(hours=hours)


@pytest.fixture
def approval_store(db: Database) -> ApprovalStore:
    return ApprovalStore(db)


async def paused_turn(
    store: EventStore, approval_store: ApprovalStore, chat: ChatRecord, ts: str, *ids: str
) -> str:
    turn, _event, _created = await store.start_turn(chat.id, "email Bob", None, ts)
    await store.append(chat.id, [NewEvent("tool_call", turn.id, {"call_id": "c1"}, ts)])
    requests = [
        request(approval_id, f"c{index}")
        for index, approval_id in enumerate(ids or ("ap_1",), start=1)
    ]
    await approval_store.pause(
        chat.id, turn.id, requests, STATE, USAGE, later(), ts, text="Let me send that."
    )
    return turn.id


async def test_pause_stores_the_approvals_the_run_and_the_events(
    db: Database,
    store: EventStore,
    approval_store: ApprovalStore,
    chat: ChatRecord,
    alice: UserRecord,
    ts: str,
) -> None:
    turn_id = await paused_turn(store, approval_store, chat, ts, "ap_1", "ap_2")
    events = await store.list_after(chat.id, 2)
    assert [(e.type, e.seq, e.payload["approval_id"]) for e in events] == [
        ("approval_required", 3, "ap_1"),
        ("approval_required", 4, "ap_2"),
    ]
    assert events[0].payload["arguments"] == ARGS
    assert events[0].payload["expires_at"].endswith("Z")
    running = await store.running_turn(chat.id)
    assert running is not None and running.id == turn_id and running.paused
    assert (await store.get_turn(turn_id)).paused  # type: ignore[union-attr]
    # A paused turn is a row, not a process: never an orphan, never closed as one.
    assert await store.expired_turns() == []
    assert await store.close_turn(chat.id, turn_id, ts) == []
    # Nor a stop left for a runner: nothing runs it to hear (the caller supersedes it).
    assert not await store.request_cancel(chat.id, turn_id)
    pending = await approval_store.pending_for_user(alice.id)
    assert [(a.id, a.status, a.turn_id) for a in pending] == [
        ("ap_1", "pending", turn_id),
        ("ap_2", "pending", turn_id),
    ]


async def test_a_turn_closed_meanwhile_cannot_pause(
    store: EventStore,
    approval_store: ApprovalStore,
    chat: ChatRecord,
    ts: str,
) -> None:
    turn, _event, _created = await store.start_turn(chat.id, "email Bob", None, ts)
    assert await store.close_turn(chat.id, turn.id, ts)  # another instance closed it
    with pytest.raises(TurnFenced):
        await approval_store.pause(
            chat.id, turn.id, [request("ap_1", "c1")], STATE, USAGE, later(), ts
        )
    assert await approval_store.for_chat(chat.id) == []


async def test_the_first_decision_wins_and_the_last_one_claims_the_run(
    store: EventStore,
    approval_store: ApprovalStore,
    chat: ChatRecord,
    alice: UserRecord,
    ts: str,
) -> None:
    turn_id = await paused_turn(store, approval_store, chat, ts, "ap_1", "ap_2")
    first = await approval_store.decide(
        alice.id, chat.id, "ap_1", "approved", None, "socket:s1", ts, LEASE
    )
    assert first.resume is None  # ap_2 still waits
    assert first.event.payload == {
        "approval_id": "ap_1",
        "call_id": "c1",
        "decision": "approved",
        "reason": None,
        "decided_by": alice.id,
        "decided_via": "socket:s1",
    }
    with pytest.raises(ApprovalDecided) as decided:
        await approval_store.decide(alice.id, chat.id, "ap_1", "rejected", None, "rest", ts, LEASE)
    assert decided.value.status == "approved"
    last = await approval_store.decide(
        alice.id, chat.id, "ap_2", "rejected", "wrong person", "rest", ts, LEASE
    )
    assert last.resume is not None
    assert (last.resume.turn_id, last.resume.user_id, last.resume.prompt) == (
        turn_id,
        alice.id,
        "email Bob",
    )
    assert [(a.id, a.status, a.reason) for a in last.resume.approvals] == [
        ("ap_1", "approved", None),
        ("ap_2", "rejected", "wrong person"),
    ]
    assert last.resume.state["run"] == {"opaque": True}
    assert last.resume.after_seq == last.event.seq
    running = await store.running_turn(chat.id)
    assert running is not None and not running.paused  # it runs again, here
    record = {a.id: a for a in await approval_store.for_chat(chat.id)}
    assert (record["ap_2"].decided_by, record["ap_2"].decided_via, record["ap_2"].reason) == (
        alice.id,
        "rest",
        "wrong person",
    )
    assert record["ap_2"].decided_at is not None


async def test_concurrent_decisions_claim_the_run_exactly_once(
    database_url: str,
    store: EventStore,
    approval_store: ApprovalStore,
    chat: ChatRecord,
    alice: UserRecord,
    ts: str,
) -> None:
    # Two engines stand for two instances deciding the same approvals at the same moment.
    await paused_turn(store, approval_store, chat, ts, "ap_1", "ap_2")
    other = Database(database_url)
    try:
        stores = [approval_store, ApprovalStore(other)]
        attempts = [
            stores[i % 2].decide(
                alice.id, chat.id, approval_id, "approved", None, f"socket:{i}", ts, LEASE
            )
            for i, approval_id in enumerate(["ap_1", "ap_2"] * 4)
        ]
        results = await asyncio.gather(*attempts, return_exceptions=True)
    finally:
        await other.dispose()
    won = [r for r in results if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, BaseException)]
    assert len(won) == 2 and all(isinstance(r, ApprovalDecided) for r in lost)
    assert sum(r.resume is not None for r in won) == 1
    resolved = [e for e in await store.list_after(chat.id, 0) if e.type == "approval_resolved"]
    assert sorted(e.payload["approval_id"] for e in resolved) == ["ap_1", "ap_2"]


async def test_unknown_other_chat_and_other_user_approvals_are_not_found(
    store: EventStore,
    approval_store: ApprovalStore,
    chat: ChatRecord,
    alice: UserRecord,
    bob: UserRecord,
    alice_chats: ChatRepository,
    ts: str,
) -> None:
    await paused_turn(store, approval_store, chat, ts, "ap_1")
    second = await alice_chats.get_or_create("chat-2")
    for user_id, chat_id, approval_id in [
        (alice.id, chat.id, "ap_nope"),
        (alice.id, second.id, "ap_1"),
        (bob.id, chat.id, "ap_1"),
        (alice.id, "no-such-chat", "ap_1"),
    ]:
        with pytest.raises(ApprovalNotFound):
            await approval_store.decide(
                user_id, chat_id, approval_id, "approved", None, "rest", ts, LEASE
            )
    assert [a.status for a in await approval_store.for_chat(chat.id)] == ["pending"]
    assert await approval_store.pending_for_user(bob.id) == []


async def test_an_expired_approval_is_resolved_as_expired_not_decided(
    db: Database,
    store: EventStore,
    approval_store: ApprovalStore,
    chat: ChatRecord,
    alice: UserRecord,
    ts: str,
) -> None:
    turn_id = await paused_turn(store, approval_store, chat, ts, "ap_1")
    async with db.session(write=True) as session:
        await session.execute(
            update(approvals).values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        await session.commit()
    decided = await approval_store.decide(
        alice.id, chat.id, "ap_1", "approved", None, "rest", ts, LEASE
    )
    assert decided.expired
    assert decided.event.payload["decision"] == "expired"
    assert decided.event.payload["decided_by"] is None
    assert decided.resume is not None and decided.resume.turn_id == turn_id
    assert decided.resume.approvals[0].status == "expired"
    with pytest.raises(ApprovalDecided):
        await approval_store.decide(alice.id, chat.id, "ap_1", "approved", None, "rest", ts, LEASE)


async def test_the_sweep_expires_only_what_is_due(
    db: Database,
    store: EventStore,
    approval_store: ApprovalStore,
    chat: ChatRecord,
    alice_chats: ChatRepository,
    ts: str,
) -> None:
    await paused_turn(store, approval_store, chat, ts, "ap_due")
    other = await alice_chats.get_or_create("chat-2")
    await paused_turn(store, approval_store, other, ts, "ap_later")
    async with db.session(write=True) as session:
        await session.execute(
            update(approvals)
            .where(approvals.c.id == "ap_due")
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        await session.commit()
    assert await approval_store.due() == [("ap_due", chat.id)]
    done = await approval_store.expire(chat.id, "ap_due", ts, LEASE)
    assert done is not None and done.resume is not None
    assert (done.event.payload["decision"], done.event.payload["decided_via"]) == (
        "expired",
        "expiry",
    )
    assert await approval_store.due() == []
    assert await approval_store.expire(chat.id, "ap_due", ts, LEASE) is None  # once
    assert await approval_store.expire(other.id, "ap_later", ts, LEASE) is None  # not due
    assert [a.status for a in await approval_store.for_chat(other.id)] == ["pending"]


async def test_supersede_ends_the_paused_turn_and_answers_its_calls(
    db: Database,
    store: EventStore,
    approval_store: ApprovalStore,
    chat: ChatRecord,
    alice: UserRecord,
    ts: str,
) -> None:
    turn_id = await paused_turn(store, approval_store, chat, ts, "ap_1", "ap_2")
    await approval_store.decide(alice.id, chat.id, "ap_1", "approved", None, "rest", ts, LEASE)
    ended = await approval_store.supersede(chat.id, turn_id, "prompt", ts)
    assert ended is not None
    assert [
        (e.type, e.payload.get("approval_id"), e.payload.get("decision"), e.payload.get("status"))
        for e in ended
    ] == [
        ("approval_resolved", "ap_2", "superseded", None),
        ("end_of_stream", None, None, "cancelled"),
    ]
    assert ended[-1].payload["usage"] == USAGE
    turn = await store.get_turn(turn_id)
    assert turn is not None and (turn.status, turn.final_text, turn.paused) == (
        "cancelled",
        "Let me send that.",
        False,
    )
    assert await store.running_turn(chat.id) is None
    with pytest.raises(ApprovalDecided) as late:
        await approval_store.decide(alice.id, chat.id, "ap_2", "approved", None, "rest", ts, LEASE)
    assert late.value.status == "superseded"
    assert await approval_store.supersede(chat.id, turn_id, "prompt", ts) is None
    # The next turn's model sees what happened, and no call is left without an output.
    items = await ChatSession(db, chat.id).get_items()
    outputs = {
        item["call_id"]: item["output"]
        for item in items
        if item.get("type") == "function_call_output"
    }
    assert outputs == {"c1": NOT_RUN, "c2": NOT_RUN}
    async with db.session() as session:
        assert await session.scalar(select(paused_turns.c.turn_id)) is None
        assert await session.scalar(select(conversation_items.c.id)) is not None


async def test_a_dead_resumed_turn_says_its_approved_action_was_not_run_again(
    store: EventStore,
    approval_store: ApprovalStore,
    chat: ChatRecord,
    alice: UserRecord,
    ts: str,
) -> None:
    turn_id = await paused_turn(store, approval_store, chat, ts, "ap_1")
    # The decision claims the turn for the instance that resumes it, whose lease is
    # already over: it died before the tool's output was written.
    decided = await approval_store.decide(
        alice.id, chat.id, "ap_1", "approved", None, "rest", ts, Lease("dead-instance", 0.0)
    )
    assert decided.resume is not None
    ending = await store.close_turn(chat.id, turn_id, ts)
    assert [e.type for e in ending] == ["error", "end_of_stream"]
    assert "send_google_email" in ending[0].payload["message"]
    assert "not run again" in ending[0].payload["message"]
    assert ending[0].payload["retryable"] is False
    assert ending[1].payload["status"] == "failed"
