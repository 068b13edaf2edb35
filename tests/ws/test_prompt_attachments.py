"""Prompt frames with attachment ids, on a real socket: the offline model acknowledges
them, the ``user_prompt`` event carries them (live and on reload), and every bad id is a
precise ``error`` that starts no turn."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from app.settings import Settings
from storage.attachments import AttachmentRepository
from storage.users import UserRepository
from tests.support.clients import open_client
from tests.support.files import png
from tests.support.servers import LiveServer, serve

NOTES = b"milk\neggs\nbread\n"


@dataclass
class Person:
    token: str

    def http(self, live: LiveServer) -> httpx.AsyncClient:
        return live.client(self.token)

    def ws(self, live: LiveServer, chat_id: str) -> tuple[str, dict[str, str]]:
        return live.ws_url(chat_id), {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
async def world(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[tuple[LiveServer, Person, Person]]:
    async with serve(make_settings(auth_mode="token", offline_delta_delay=0)) as live:
        users = UserRepository(live.services.db)
        tag = uuid.uuid4().hex[:6]
        _, alice = await users.create_user(f"alice-{tag}")
        _, bob = await users.create_user(f"bob-{tag}")
        yield live, Person(alice), Person(bob)


async def upload(live: LiveServer, who: Person, chat_id: str, name: str, data: bytes) -> str:
    async with who.http(live) as http:
        answer = await http.post(f"/api/chats/{chat_id}/attachments", files={"file": (name, data)})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


async def events_of(live: LiveServer, who: Person, chat_id: str) -> list[dict[str, Any]]:
    async with who.http(live) as http:
        return list((await http.get(f"/api/chats/{chat_id}/events")).json()["events"])


async def test_a_prompt_with_attachments_is_acknowledged_and_redrawn_on_reload(
    world: tuple[LiveServer, Person, Person],
) -> None:
    live, alice, _ = world
    chat = uuid.uuid4().hex
    image = png(64, 48)
    photo = await upload(live, alice, chat, "photo.png", image)
    notes = await upload(live, alice, chat, "list.txt", NOTES)
    url, headers = alice.ws(live, chat)
    async with open_client(url, additional_headers=headers) as client:
        events = await client.turn("what do you make of these?", attachments=[photo, notes])

    prompt = events[0]
    assert prompt["type"] == "user_prompt"
    assert prompt["attachments"] == [
        {
            "id": photo,
            "name": "photo.png",
            "content_type": "image/png",
            "size": len(image),
            "width": 64,
            "height": 48,
        },
        {
            "id": notes,
            "name": "list.txt",
            "content_type": "text/plain",
            "size": len(NOTES),
            "width": None,
            "height": None,
        },
    ]
    answer = next(event for event in events if event["type"] == "llm_response")["text"]
    assert answer.startswith(
        f"I received photo.png (PNG image, {len(image):,} bytes, 64×48) and "
        f"list.txt (text file, {len(NOTES)} bytes)."
    )
    assert events[-2]["type"] == "end_of_stream" and events[-2]["status"] == "completed"
    # A reload reads the same event back, and both count as sent by that turn.
    stored = await events_of(live, alice, chat)
    assert stored[0]["attachments"] == prompt["attachments"]
    repo = AttachmentRepository(live.services.db)
    sent = await repo.by_ids([photo, notes])
    assert {record.turn_id for record in sent.values()} == {prompt["turn_id"]}
    # The Markdown export names them.
    async with alice.http(live) as http:
        exported = (await http.get(f"/api/chats/{chat}/export")).text
    assert (
        f"> **Attached**: photo.png (image/png, {len(image):,} bytes); "
        f"list.txt (text/plain, {len(NOTES)} bytes)"
    ) in exported
    # A prompt without attachments has no such field (v1 clients see what they saw).
    async with open_client(url, additional_headers=headers) as client:
        plain = await client.turn("hello")
    assert "attachments" not in plain[0]


async def test_bad_attachment_ids_are_refused_and_start_no_turn(
    world: tuple[LiveServer, Person, Person],
) -> None:
    live, alice, bob = world
    chat, other_chat = uuid.uuid4().hex, uuid.uuid4().hex
    mine = await upload(live, alice, chat, "a.txt", b"mine")
    elsewhere = await upload(live, alice, other_chat, "b.txt", b"other chat")
    bobs = await upload(live, bob, uuid.uuid4().hex, "c.txt", b"bob's")
    cases = {
        "att_missing": "no attachment 'att_missing' in this chat",
        elsewhere: f"no attachment '{elsewhere}' in this chat",
        bobs: f"no attachment '{bobs}' in this chat",
    }
    url, headers = alice.ws(live, chat)
    async with open_client(url, additional_headers=headers) as client:
        for bad, words in cases.items():
            await client.send(
                {"type": "prompt", "text": "see attached", "attachments": [mine, bad]}
            )
            error = await client.recv()
            assert error["type"] == "error" and error["code"] == "invalid_request", error
            assert words in error["message"] and error["turn_id"] is None
        await client.send({"type": "prompt", "text": "twice", "attachments": [mine, mine]})
        error = await client.recv()
        assert error["message"] == f"attachment '{mine}' is listed twice"
        await client.send({"type": "prompt", "text": "bad", "attachments": "att_1"})
        error = await client.recv()
        assert error["message"].startswith("prompt.attachments must be a list")
        # The socket still works, and nothing above was stored.
        await client.send({"type": "ping"})
        assert (await client.recv())["type"] == "pong"
    assert await events_of(live, alice, chat) == []
    unsent = await AttachmentRepository(live.services.db).by_ids([mine, elsewhere, bobs])
    assert all(record.turn_id is None for record in unsent.values())


async def test_a_regenerated_or_edited_prompt_sends_its_files_again(
    world: tuple[LiveServer, Person, Person],
) -> None:
    live, alice, _ = world
    chat = uuid.uuid4().hex
    image = png(32, 20)
    photo = await upload(live, alice, chat, "photo.png", image)
    acknowledged = f"I received photo.png (PNG image, {len(image):,} bytes, 32×20)."
    url, headers = alice.ws(live, chat)
    async with open_client(url, additional_headers=headers) as client:
        first = await client.turn("what is this?", attachments=[photo])
        old = first[0]["turn_id"]
        await client.send({"type": "regenerate", "turn_id": old, "client_message_id": "again"})
        again = await client.decide_until_end()
        prompt = next(e for e in again if e["type"] == "user_prompt")
        await client.send(
            {
                "type": "edit",
                "turn_id": prompt["turn_id"],
                "prompt": "and what colour is it?",
                "client_message_id": "edited",
            }
        )
        edited = await client.decide_until_end()

    for events in (again, edited):
        shown = next(e for e in events if e["type"] == "user_prompt")
        assert shown["attachments"] == first[0]["attachments"]
        answer = next(e for e in events if e["type"] == "llm_response")["text"]
        assert answer.startswith(acknowledged), answer
    # A reload redraws the files under the replacing prompts too.
    stored = [e for e in await events_of(live, alice, chat) if e["type"] == "user_prompt"]
    assert [e.get("attachments") for e in stored] == [first[0]["attachments"]] * 3
