"""Bad frames get clear errors and lose nothing; connection refusals use §1's close codes."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from tests.support.clients import open_client
from tests.support.servers import LiveServer, serve


def new_chat() -> str:
    return uuid.uuid4().hex


@pytest.mark.parametrize(
    "frame, fragment",
    [
        ("[1, 2]", "JSON object"),
        ("42", "JSON object"),
        ('{"type": "dance"}', "dance"),
        ('{"type": "prompt"}', "text"),
        ('{"type": "prompt", "text": ""}', "text"),
        ('{"type": "prompt", "text": "hi", "colour": "red"}', "colour"),
        (
            '{"type": "prompt", "text": "hi", "client_message_id": "' + "x" * 65 + '"}',
            "client_message_id",
        ),
        ('{"type": "resume", "after_seq": -1}', "after_seq"),
        ('{"type": "prompt", "text": "' + "a" * 32_001 + '"}', "text"),
    ],
)
async def test_malformed_frames_get_invalid_request_and_the_socket_stays_open(
    server: LiveServer, frame: str, fragment: str
) -> None:
    async with open_client(server.ws_url(new_chat())) as client:
        await client.send(frame)
        error = await client.recv()
        assert error["type"] == "error" and error["code"] == "invalid_request"
        assert fragment in error["message"]
        assert error["seq"] is None and error["retryable"] is False
        await client.send({"type": "ping"})
        assert (await client.recv())["type"] == "pong"


async def test_oversize_frame_closes_with_1009(server: LiveServer) -> None:
    async with open_client(server.ws_url(new_chat())) as client:
        await client.send("x" * (server.settings.max_frame_bytes + 1))
        with pytest.raises(ConnectionClosed) as closed:
            await client.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


async def test_plain_text_frame_is_a_prompt(server: LiveServer) -> None:
    async with open_client(server.ws_url(new_chat())) as client:
        await client.send("what are my account balances")
        events = await client.until("end_of_stream")
    assert events[0]["type"] == "user_prompt"
    assert events[0]["text"] == "what are my account balances"
    assert events[-1]["status"] == "completed"


async def test_cancel_with_nothing_running_is_an_error(server: LiveServer) -> None:
    async with open_client(server.ws_url(new_chat())) as client:
        await client.send({"type": "cancel"})
        error = await client.recv()
    assert error["code"] == "invalid_request"


@pytest.mark.parametrize("path, code", [("bad%20id", 4400), ("x" * 65, 4400)])
async def test_bad_chat_ids_are_refused(server: LiveServer, path: str, code: int) -> None:
    url = f"ws://127.0.0.1:{server.port}/ws/chats/{path}"
    async with open_client(url) as client:
        with pytest.raises(ConnectionClosed) as closed:
            await client.recv()
    assert closed.value.rcvd.code == code


async def test_bad_after_seq_is_refused(server: LiveServer) -> None:
    async with open_client(server.ws_url(new_chat(), after_seq="abc")) as client:
        with pytest.raises(ConnectionClosed) as closed:
            await client.recv()
    assert closed.value.rcvd.code == 4400


async def test_foreign_origin_is_refused(server: LiveServer) -> None:
    async with open_client(
        server.ws_url(new_chat()), additional_headers={"Origin": "http://evil.example"}
    ) as client:
        with pytest.raises(ConnectionClosed) as closed:
            await client.recv()
    assert closed.value.rcvd.code == 4403


async def test_own_origin_is_accepted(server: LiveServer) -> None:
    origin = f"http://127.0.0.1:{server.port}"
    async with open_client(
        server.ws_url(new_chat()), additional_headers={"Origin": origin}
    ) as client:
        await client.send({"type": "ping"})
        assert (await client.recv())["type"] == "pong"


async def test_token_mode_refuses_strangers_and_other_users_chats(make_settings: Any) -> None:
    from storage.users import UserRepository

    async with serve(make_settings(auth_mode="token")) as live:
        users = UserRepository(live.services.db)
        _, alice = await users.create_user(f"alice-{new_chat()[:8]}")
        _, bob = await users.create_user(f"bob-{new_chat()[:8]}")
        chat_id = new_chat()

        async with open_client(live.ws_url(chat_id)) as anonymous:
            with pytest.raises(ConnectionClosed) as closed:
                await anonymous.recv()
        assert closed.value.rcvd.code == 4401

        async with open_client(live.ws_url(chat_id, token="sb_wrong")) as wrong:
            with pytest.raises(ConnectionClosed) as closed:
                await wrong.recv()
        assert closed.value.rcvd.code == 4401

        headers = {"Authorization": f"Bearer {alice}"}
        async with open_client(live.ws_url(chat_id), additional_headers=headers) as owner:
            events = await owner.turn("what's in my inbox")
        assert events[0]["type"] == "user_prompt"

        async with open_client(live.ws_url(chat_id, token=bob)) as intruder:
            with pytest.raises(ConnectionClosed) as closed:
                await intruder.recv()
        assert closed.value.rcvd.code == 4403
        async with open_client(live.ws_url(chat_id, token=bob, after_seq=0)) as intruder:
            with pytest.raises(ConnectionClosed) as closed:
                await intruder.recv()
        assert closed.value.rcvd.code == 4403
        # Nothing of Alice's chat reached Bob, and her chat is intact.
        async with live.client(alice) as http:
            stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
        assert [e["type"] for e in stored][0] == "user_prompt"
        assert json.dumps(stored).count('"user_prompt"') == 1


async def test_connections_per_user_are_limited(make_settings: Any) -> None:
    async with serve(make_settings(max_connections_per_user=2)) as live:
        chat_id = new_chat()
        async with open_client(live.ws_url(chat_id)), open_client(live.ws_url(chat_id)):
            async with open_client(live.ws_url(chat_id)) as third:
                with pytest.raises(ConnectionClosed) as closed:
                    await third.recv()
        assert closed.value.rcvd.code == 4429
