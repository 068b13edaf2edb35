"""Feedback on answers over REST: rate, change, clear; returned with the chat's turns and
in its exports; counted in /metrics; bad input refused with nothing stored. On SQLite and
PostgreSQL (``database_url``)."""

from __future__ import annotations

from typing import Any

import pytest
from apptest import Running, SeedTurn, User, seed_chat
from prometheus_client.parser import text_string_to_metric_families

from storage.engine import Database
from storage.feedback import MAX_COMMENT_CHARS, FeedbackRepository


def path(chat_id: str, turn_id: str) -> str:
    return f"/api/chats/{chat_id}/turns/{turn_id}/feedback"


async def counters(api: Running, user: User) -> dict[str, float]:
    """The feedback samples of /metrics, by name and rating."""
    text = (await api.client.get("/metrics", headers=user.auth)).text
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("switchboard_feedback") and sample.name.endswith("_total"):
                rating = sample.labels.get("rating")
                found[f"{sample.name}{'/' + rating if rating else ''}"] = sample.value
    return found


async def turn_feedback(api: Running, user: User, chat_id: str) -> list[Any]:
    detail = await api.client.get(f"/api/chats/{chat_id}", headers=user.auth)
    assert detail.status_code == 200, detail.text
    return [turn["feedback"] for turn in detail.json()["turns"]]


async def test_rate_change_clear_and_read_back(api: Running, db: Database, alice: User) -> None:
    first, second = await seed_chat(
        db, alice.id, "c1", [SeedTurn("coffee last month", "$42"), SeedTurn("and tea?", "$7")]
    )
    before = await counters(api, alice)
    assert before == {
        "switchboard_feedback_total/up": 0,
        "switchboard_feedback_total/down": 0,
        "switchboard_feedback_cleared_total": 0,
    }

    rated = await api.client.put(
        path("c1", first.id),
        json={"rating": "down", "comment": "It summed <b>all</b> categories"},
        headers=alice.auth,
    )
    assert rated.status_code == 200, rated.text
    body = rated.json()
    assert set(body) == {"turn_id", "rating", "comment", "created_at", "updated_at"}
    assert (body["turn_id"], body["rating"]) == (first.id, "down")
    assert body["comment"] == "It summed <b>all</b> categories"  # stored as text, verbatim

    # Back with the turns (what a reloaded page reads), the other turn unrated.
    assert await turn_feedback(api, alice, "c1") == [body, None]

    # The comment alone changes: not another rating in /metrics.
    edited = await api.client.put(
        path("c1", first.id), json={"rating": "down", "comment": "wrong"}, headers=alice.auth
    )
    assert edited.json()["comment"] == "wrong"
    assert edited.json()["created_at"] == body["created_at"]
    changed = await api.client.put(path("c1", first.id), json={"rating": "up"}, headers=alice.auth)
    assert changed.status_code == 200
    assert (changed.json()["rating"], changed.json()["comment"]) == ("up", None)
    blank = await api.client.put(
        path("c1", second.id), json={"rating": "up", "comment": "   "}, headers=alice.auth
    )
    assert blank.json()["comment"] is None  # a blank comment is no comment

    cleared = await api.client.delete(path("c1", first.id), headers=alice.auth)
    assert cleared.status_code == 204
    again = await api.client.delete(path("c1", first.id), headers=alice.auth)
    assert again.status_code == 204  # clearing nothing: nothing to count
    assert [f and f["rating"] for f in await turn_feedback(api, alice, "c1")] == [None, "up"]

    assert await counters(api, alice) == {
        "switchboard_feedback_total/up": 2,  # first changed to up, second rated up
        "switchboard_feedback_total/down": 1,
        "switchboard_feedback_cleared_total": 1,
    }


async def test_exports_carry_the_rating(api: Running, db: Database, alice: User) -> None:
    (turn,) = await seed_chat(db, alice.id, "c1", [SeedTurn("coffee?", "$42")])
    await api.client.put(
        path("c1", turn.id),
        json={"rating": "down", "comment": "wrong\nmonth"},
        headers=alice.auth,
    )
    markdown = (await api.client.get("/api/chats/c1/export", headers=alice.auth)).text
    assert "> **Your rating**: 👎 not helpful — wrong month" in markdown
    assert markdown.index("## Assistant") < markdown.index("Your rating")
    document = (
        await api.client.get("/api/chats/c1/export", params={"format": "json"}, headers=alice.auth)
    ).json()
    assert [(f["turn_id"], f["rating"], f["comment"]) for f in document["feedback"]] == [
        (turn.id, "down", "wrong\nmonth")
    ]


BAD_BODIES = [
    ({"rating": "sideways"}, "rating: Input should be 'up' or 'down'"),
    ({"rating": "UP"}, "rating: Input should be 'up' or 'down'"),
    ({}, "rating: Field required"),
    ({"rating": "down", "comment": "x" * (MAX_COMMENT_CHARS + 1)}, "at most 2000 characters"),
    ({"rating": "down", "comment": 5}, "comment: Input should be a valid string"),
    ({"rating": "up", "stars": 5}, "stars: Extra inputs are not permitted"),
    ({"rating": "down", "comment": "nul\u0000byte"}, "comment must not contain NUL"),
    ("not json", "must be a JSON object"),
    (["up"], "must be a JSON object"),
]


@pytest.mark.parametrize(("body", "says"), BAD_BODIES)
async def test_bad_bodies_are_400_and_store_nothing(
    api: Running, db: Database, alice: User, body: object, says: str
) -> None:
    (turn,) = await seed_chat(db, alice.id, "c1", [SeedTurn("coffee?")])
    if isinstance(body, str):
        response = await api.client.put(path("c1", turn.id), content=body, headers=alice.auth)
    else:
        response = await api.client.put(path("c1", turn.id), json=body, headers=alice.auth)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert says in error["message"], error["message"]
    assert await FeedbackRepository(db, alice.id).for_chat("c1") == {}


async def test_unknown_foreign_and_running_turns_are_refused(
    api: Running, db: Database, alice: User, bob: User
) -> None:
    (done,) = await seed_chat(db, alice.id, "c1", [SeedTurn("coffee?")])
    (elsewhere,) = await seed_chat(db, alice.id, "c2", [SeedTurn("tea?")])
    (running,) = await seed_chat(db, alice.id, "c3", [SeedTurn("slow", status="running")])
    good = {"rating": "up"}
    cases = [
        (alice, path("c1", "no-such-turn"), 404, "turn not found in this chat"),
        (alice, path("c1", elsewhere.id), 404, "turn not found in this chat"),
        (alice, path("c1", "x" * 65), 404, "turn not found in this chat"),
        (alice, path("no-such-chat", done.id), 404, "chat not found"),
        (bob, path("c1", done.id), 404, "chat not found"),
        (alice, path("c3", running.id), 409, "still running"),
    ]
    for user, where, status, says in cases:
        response = await api.client.put(where, json=good, headers=user.auth)
        assert response.status_code == status, (where, response.text)
        assert says in response.json()["error"]["message"]
        if status == 404:
            cleared = await api.client.delete(where, headers=user.auth)
            assert cleared.status_code == 404, (where, cleared.text)
    for chat_id in ("c1", "c2", "c3"):
        assert await FeedbackRepository(db, alice.id).for_chat(chat_id) == {}
    # Bob's attempt left Alice's chat as it was; a wrong method says what is allowed.
    wrong = await api.client.post(path("c1", done.id), json=good, headers=alice.auth)
    assert wrong.status_code == 405 and "PUT" in wrong.headers["allow"]
