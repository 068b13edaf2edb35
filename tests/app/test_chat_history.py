"""History over REST: search (?q=), rename (PATCH), export (Markdown, JSON), and no empty
"New chat" entries in the list. Runs on SQLite and PostgreSQL (``database_url``)."""

from __future__ import annotations

import json

import pytest
from apptest import Running, SeedTurn, User, seed_chat

from storage.chats import ChatRepository
from storage.engine import Database
from storage.events import EventStore
from storage.records import NewEvent


async def listed(api: Running, user: User, **params: str) -> list[str]:
    response = await api.client.get("/api/chats", params=params, headers=user.auth)
    assert response.status_code == 200, response.text
    return [chat["id"] for chat in response.json()["chats"]]


# ----------------------------------------------------------------------------- search


async def test_search_finds_prompts_and_answers_with_a_snippet(
    api: Running, db: Database, alice: User, bob: User
) -> None:
    await seed_chat(db, alice.id, "coffee", [SeedTurn("What did I spend on coffee?", "$42")])
    await seed_chat(db, alice.id, "trip", [SeedTurn("Plan Lisbon", "Trams and pastries.")])
    await seed_chat(db, bob.id, "bobs-coffee", [SeedTurn("coffee for bob", "ok")])

    response = await api.client.get("/api/chats", params={"q": "coffee"}, headers=alice.auth)
    assert response.status_code == 200
    body = response.json()
    assert [chat["id"] for chat in body["chats"]] == ["coffee"]  # never bob's
    hit = body["chats"][0]
    assert hit["matched"] == "prompt"
    assert hit["snippet"] == "What did I spend on coffee?"
    assert set(hit) == {"id", "title", "created_at", "updated_at", "preview", "matched", "snippet"}
    assert body["next_cursor"] is None

    assert await listed(api, alice, q="pastr") == ["trip"]  # an answer, by prefix
    # The seeded tool output says "example.com": tool results are not searched.
    assert await listed(api, alice, q="example") == []
    # Without q the list is unchanged in shape.
    plain = (await api.client.get("/api/chats", headers=alice.auth)).json()["chats"]
    assert set(plain[0]) == {"id", "title", "created_at", "updated_at", "preview"}


async def test_search_pages_with_the_cursor(api: Running, db: Database, alice: User) -> None:
    for n in range(5):
        await seed_chat(db, alice.id, f"c{n}", [SeedTurn(f"budget question {n}")])
    seen: list[str] = []
    cursor: str | None = None
    while True:
        params = {"q": "budget", "limit": "2"} | ({"cursor": cursor} if cursor else {})
        body = (await api.client.get("/api/chats", params=params, headers=alice.auth)).json()
        seen += [chat["id"] for chat in body["chats"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"c{n}" for n in reversed(range(5))]


@pytest.mark.parametrize("q", ["", "   ", "?!"])
async def test_a_search_without_a_word_matches_nothing(
    api: Running, db: Database, alice: User, q: str
) -> None:
    # It was a 400 ("q is empty"), which /openapi.json could not promise against: a
    # search box with nothing to search for finds nothing.
    await seed_chat(db, alice.id, "c1", [SeedTurn("hi")])
    response = await api.client.get("/api/chats", params={"q": q}, headers=alice.auth)
    assert response.status_code == 200, response.text
    assert response.json() == {"chats": [], "next_cursor": None}
    bad = {"q": q, "cursor": "not-a-cursor"}
    assert (await api.client.get("/api/chats", params=bad, headers=alice.auth)).status_code == 400


@pytest.mark.parametrize(
    ("q", "says"),
    [
        ("x" * 201, "longer than 200"),
        (" ".join(f"w{n}" for n in range(13)), "more than 12 words"),
    ],
)
async def test_bad_search_queries_are_400(api: Running, alice: User, q: str, says: str) -> None:
    response = await api.client.get("/api/chats", params={"q": q}, headers=alice.auth)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert says in error["message"]


async def test_search_with_a_bad_cursor_is_400(api: Running, alice: User) -> None:
    params = {"q": "coffee", "cursor": "not-a-cursor"}
    response = await api.client.get("/api/chats", params=params, headers=alice.auth)
    assert response.status_code == 400
    assert "cursor" in response.json()["error"]["message"]


# ----------------------------------------------------------------------------- rename


async def test_rename_trims_and_shows_in_list_and_search(
    api: Running, db: Database, alice: User
) -> None:
    await seed_chat(db, alice.id, "c1", [SeedTurn("hello")])
    response = await api.client.patch(
        "/api/chats/c1", json={"title": "  Coffee\n spending   in May "}, headers=alice.auth
    )
    assert response.status_code == 200
    assert response.json()["title"] == "Coffee spending in May"
    assert response.json()["id"] == "c1"
    listed_chat = (await api.client.get("/api/chats", headers=alice.auth)).json()["chats"][0]
    assert listed_chat["title"] == "Coffee spending in May"
    hits = (
        await api.client.get("/api/chats", params={"q": "spending may"}, headers=alice.auth)
    ).json()["chats"]
    assert [(h["id"], h["matched"]) for h in hits] == [("c1", "title")]


async def test_rename_another_users_chat_is_404_and_changes_nothing(
    api: Running, db: Database, alice: User, bob: User
) -> None:
    await seed_chat(db, alice.id, "c1", [SeedTurn("hello")])
    await ChatRepository(db, alice.id).set_title("c1", "Mine")
    for chat_id in ("c1", "missing"):
        response = await api.client.patch(
            f"/api/chats/{chat_id}", json={"title": "Bob's now"}, headers=bob.auth
        )
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    chat = await ChatRepository(db, alice.id).get("c1")
    assert chat is not None and chat.title == "Mine"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"", "JSON object"),
        (b"[]", "JSON object"),
        (b'{"title": ""}', "title"),
        (b'{"title": "   "}', "blank"),
        (b'{"title": 5}', "title"),
        (json.dumps({"title": "x" * 201}).encode(), "title"),
        (b'{"title": "ok", "extra": 1}', "extra"),
        (b'{"name": "ok"}', "title"),
    ],
)
async def test_rename_bad_bodies_are_400(
    api: Running, db: Database, alice: User, body: bytes, says: str
) -> None:
    await seed_chat(db, alice.id, "c1", [SeedTurn("hello")])
    await ChatRepository(db, alice.id).set_title("c1", "Kept")
    response = await api.client.patch(
        "/api/chats/c1",
        content=body,
        headers=alice.auth | {"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and says in error["message"]
    chat = await ChatRepository(db, alice.id).get("c1")
    assert chat is not None and chat.title == "Kept"


# ----------------------------------------------------------------------------- export


async def seed_with_approval(db: Database, user_id: str) -> None:
    await seed_chat(db, user_id, "c1", [SeedTurn("Find **coffee** shops", "Try *Blue Bottle*.")])
    await ChatRepository(db, user_id).set_title("c1", "Coffee shops / Lisbon!")
    turn = (await ChatRepository(db, user_id).turns("c1"))[0]
    ts = turn.created_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    await EventStore(db).append(
        "c1",
        [
            NewEvent(
                "approval_required",
                turn.id,
                {
                    "approval_id": "a1",
                    "call_id": "c2",
                    "name": "send_email",
                    "description": "Send an email to bob@example.com",
                    "arguments": {"to": "bob@example.com"},
                    "current_agent": "Mail",
                    "expires_at": ts,
                },
                ts,
            ),
            NewEvent(
                "approval_resolved",
                turn.id,
                {"approval_id": "a1", "call_id": "c2", "decision": "rejected", "reason": "later"},
                ts,
            ),
            NewEvent(
                "tool_output",
                turn.id,
                {
                    "call_id": "c3",
                    "output": {
                        "response_type": "text",
                        "friendly_name": "Mail draft",
                        "response": {"x": 1},
                        "display_as": [{"type": "text", "content": "Draft saved\nfor later"}],
                        "debug_info": {"secret": "internal"},
                    },
                    "current_agent": "Mail",
                },
                ts,
            ),
        ],
    )


async def test_export_markdown(api: Running, db: Database, alice: User) -> None:
    await seed_with_approval(db, alice.id)
    response = await api.client.get("/api/chats/c1/export", headers=alice.auth)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/markdown")
    assert (
        response.headers["content-disposition"] == 'attachment; filename="Coffee-shops-Lisbon.md"'
    )
    text = response.text
    assert text.startswith("# Coffee shops / Lisbon!\n")
    assert "## You · " in text and "Find **coffee** shops" in text
    assert "## Assistant\n\nTry *Blue Bottle*." in text
    assert "> **Searching the web**" in text  # the seeded search card, by name
    assert "> **Approval asked**: Send an email to bob@example.com" in text
    assert "> **Approval rejected** (later)" in text
    assert "> **Mail draft**: Draft saved for later" in text
    assert "internal" not in text  # debug_info never leaves
    assert text.index("## You") < text.index("## Assistant") < text.index("Approval asked")


async def test_export_json_is_the_stored_events(api: Running, db: Database, alice: User) -> None:
    await seed_with_approval(db, alice.id)
    response = await api.client.get(
        "/api/chats/c1/export", params={"format": "json"}, headers=alice.auth
    )
    assert response.status_code == 200
    assert response.headers["content-disposition"].endswith('filename="Coffee-shops-Lisbon.json"')
    document = response.json()
    assert document["chat"]["id"] == "c1" and document["chat"]["title"] == "Coffee shops / Lisbon!"
    replay = (await api.client.get("/api/chats/c1/events", headers=alice.auth)).json()["events"]
    assert document["events"] == replay
    assert [e["seq"] for e in document["events"]] == list(range(1, len(replay) + 1))
    assert "internal" not in response.text


async def test_export_refusals(api: Running, db: Database, alice: User, bob: User) -> None:
    await seed_chat(db, alice.id, "c1", [SeedTurn("hello")])
    bad = await api.client.get("/api/chats/c1/export", params={"format": "pdf"}, headers=alice.auth)
    assert bad.status_code == 400 and "markdown or json" in bad.json()["error"]["message"]
    for chat_id in ("c1", "missing"):
        foreign = await api.client.get(f"/api/chats/{chat_id}/export", headers=bob.auth)
        assert foreign.status_code == 404


async def test_untitled_export_is_named_after_the_id(
    api: Running, db: Database, alice: User
) -> None:
    await seed_chat(db, alice.id, "abc-123", [SeedTurn("hello")])
    response = await api.client.get("/api/chats/abc-123/export", headers=alice.auth)
    assert response.headers["content-disposition"] == 'attachment; filename="chat-abc-123.md"'
    assert response.text.startswith("# Untitled chat\n")


# ----------------------------------------------------------------------------- no empty chats


async def test_a_chat_without_a_prompt_is_not_listed_or_found(
    api: Running, db: Database, alice: User
) -> None:
    # Opened (the socket creates the row) but the send never reached the server.
    await ChatRepository(db, alice.id).get_or_create("opened")
    await ChatRepository(db, alice.id).set_title("opened", "Budget")
    await seed_chat(db, alice.id, "asked", [SeedTurn("budget please", status="failed")])
    assert await listed(api, alice) == ["asked"]
    assert await listed(api, alice, q="budget") == ["asked"]
    # It still exists for the socket that opened it, and is listed once it has a prompt.
    assert (await api.client.get("/api/chats/opened", headers=alice.auth)).status_code == 200
    await seed_chat(db, alice.id, "opened", [SeedTurn("now a question")])
    assert await listed(api, alice) == ["opened", "asked"]
