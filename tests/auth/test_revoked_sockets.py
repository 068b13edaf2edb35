"""A revoked token stops acting everywhere within the documented bound (issue 33, item 2).

docs/auth.md: a running server keeps a token's lookup for up to 30 seconds. An open
socket used to keep acting on the token it opened with for as long as it stayed open
(turns started 35, 40 and 65 s after a revoke, and a prompt superseded a pending
approval). Now every frame that acts is authorised anew, and every open socket's token
is looked at again every 15 s: revoked, the socket closes 4401 and nothing acts.

The 30 s are passed by moving the token cache's clock, never by waiting.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from app.settings import Settings
from storage.users import UserRepository
from tests.support.clients import open_client
from tests.support.servers import LiveServer, serve
from websocket.handler import SIGNED_OUT

EMAIL = "find sushi in Boston and email the list to bob@example.com"


@pytest.fixture
async def live(make_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    async with serve(make_settings(auth_mode="token")) as server:
        yield server


async def revoke(live: LiveServer, name: str, label: str = "initial") -> None:
    """Revoke the user's token as ``switchboard tokens revoke`` does, then let the token
    cache's 30 s pass."""
    users = UserRepository(live.services.db)
    [info] = [t for t in await users.list_tokens(name) if t.label == label]
    assert await users.revoke_token(info.id)
    cache = live.services.auth.token_cache
    later = time.monotonic() + cache.ttl + 1
    cache.clock = lambda: later


async def test_a_revoked_token_cannot_prompt_nor_supersede_a_pending_approval(
    live: LiveServer,
) -> None:
    users = UserRepository(live.services.db)
    alice, token = await users.create_user("alice")
    other = await users.create_token(alice.id, "laptop")
    chat_id = uuid.uuid4().hex
    async with open_client(live.ws_url(chat_id, token=token)) as client:
        await client.send({"type": "prompt", "text": EMAIL})
        asked = (await client.until("approval_required"))[-1]
        await revoke(live, "alice")
        await client.send({"type": "prompt", "text": "never mind, what's the weather?"})
        with pytest.raises(ConnectionClosed) as closed:
            await client.until("user_prompt")
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4401, SIGNED_OUT)
    # Nothing acted: the approval still waits, and the chat has its one turn.
    async with live.client(other) as http:
        pending = (await http.get("/api/approvals")).json()["approvals"]
        turns = (await http.get(f"/api/chats/{chat_id}")).json()["turns"]
    assert [a["approval_id"] for a in pending] == [asked["approval_id"]]
    assert len(turns) == 1


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "cancel"},
        {"type": "approval", "approval_id": "ap_x", "decision": "approve"},
        {"type": "regenerate", "turn_id": "t_x"},
        {"type": "resume", "after_seq": 0},
    ],
)
async def test_every_frame_that_acts_is_authorised_anew(
    live: LiveServer, frame: dict[str, object]
) -> None:
    _alice, token = await UserRepository(live.services.db).create_user("alice")
    async with connect(live.ws_url(uuid.uuid4().hex, token=token)) as socket:
        await socket.send(json.dumps({"type": "ping"}))
        assert json.loads(await socket.recv())["type"] == "pong"
        await revoke(live, "alice")
        await socket.send(json.dumps(frame))
        with pytest.raises(ConnectionClosed) as closed:
            await socket.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401


async def test_a_socket_that_only_listens_is_closed_by_the_next_check(live: LiveServer) -> None:
    users = UserRepository(live.services.db)
    _alice, alice_token = await users.create_user("alice")
    _bob, bob_token = await users.create_user("bob")
    async with (
        connect(live.ws_url(uuid.uuid4().hex, token=alice_token)) as alice,
        connect(live.ws_url(uuid.uuid4().hex, token=bob_token)) as bob,
    ):
        for socket in (alice, bob):  # both open and served
            await socket.send(json.dumps({"type": "ping"}))
            assert json.loads(await socket.recv())["type"] == "pong"
        connections = live.services.connections
        assert await connections.recheck() == 0  # every token still holds
        await revoke(live, "alice")
        assert await connections.recheck() == 1
        with pytest.raises(ConnectionClosed) as closed:
            await alice.recv()
        assert closed.value.rcvd is not None
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4401, SIGNED_OUT)
        # Bob's token was not revoked: his socket goes on (the cache's clock moved for
        # him too, so his token was looked up again).
        await bob.send(json.dumps({"type": "ping"}))
        assert json.loads(await bob.recv())["type"] == "pong"


async def test_an_open_responses_socket_stops_with_its_revoked_token(live: LiveServer) -> None:
    _alice, token = await UserRepository(live.services.db).create_user("alice")
    url = f"ws://127.0.0.1:{live.port}/v1/responses"
    create = {"type": "response.create", "model": "switchboard", "input": "hello"}
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as socket:
        await socket.send(json.dumps(create))
        while json.loads(await socket.recv())["type"] != "response.completed":
            pass
        await revoke(live, "alice")
        await socket.send(json.dumps(create))
        refusal = json.loads(await socket.recv())
        with pytest.raises(ConnectionClosed):
            await socket.recv()
    assert refusal["type"] == "error" and refusal["error"]["code"] == "unauthorized"
