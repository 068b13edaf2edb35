"""A deleted chat's id is free for anyone: no socket left open on it may see or write the
chat that takes the id next, on this instance or another."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from app.settings import Settings
from storage.engine import Database
from storage.users import UserRepository
from tests.support.clients import Client, open_client
from tests.support.servers import serve

# Two agents, two tools, a streamed answer, and nothing that waits for an approval
# (tests/ws/test_approvals.py and test_approval_faults.py cover those).
MULTI_AGENT = "find sushi in Boston and show my account balances"


async def closed_with(client: Client) -> tuple[int, str]:
    """Read until the server closes the socket; its close code and reason."""
    with pytest.raises(ConnectionClosed) as closed:
        for _ in range(100):
            await client.recv(within=10)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code, closed.value.rcvd.reason


async def subscribed(client: Client) -> None:
    await client.send({"type": "ping"})
    await client.until("pong")


async def test_deleting_a_chat_closes_its_sockets_and_the_id_starts_clean(
    make_settings: Callable[..., Settings], db: Database
) -> None:
    users = UserRepository(db)
    (_, alice), (_, bob) = await users.create_user("alice"), await users.create_user("bob")
    chat_id = uuid.uuid4().hex
    async with serve(make_settings(auth_mode="token")) as live:
        async with (
            open_client(live.ws_url(chat_id, token=alice), auto_approve=True) as stale,
            open_client(live.ws_url(chat_id, token=alice), auto_approve=True) as other_tab,
        ):
            await stale.turn("what are my account balances")
            await subscribed(other_tab)
            async with live.client(alice) as http:
                assert (await http.delete(f"/api/chats/{chat_id}")).status_code == 204
            for socket in (stale, other_tab):
                assert await closed_with(socket) == (4403, "chat deleted")

        # Bob takes the id: a chat of his own, with nothing of Alice's in it.
        async with open_client(
            live.ws_url(chat_id, token=bob, after_seq=0), auto_approve=True
        ) as client:
            events = await client.turn(MULTI_AGENT)
        assert events[0]["type"] == "user_prompt" and events[0]["seq"] == 1
        async with live.client(bob) as http:
            stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
            assert [e["text"] for e in stored if e["type"] == "user_prompt"] == [MULTI_AGENT]
        # And Alice can no longer open it.
        async with open_client(live.ws_url(chat_id, token=alice), auto_approve=True) as refused:
            assert await closed_with(refused) == (4403, "not your chat")


# ---------------------------------------------------------------------- several instances

scale_out = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)


@scale_out
async def test_a_delete_on_one_instance_closes_sockets_on_another(
    servers: Any, database_url: str, redis_url: str
) -> None:
    first = servers(database_url, redis_url=redis_url)
    second = servers(database_url, redis_url=redis_url)
    first.start()
    second.start()
    chat_id = uuid.uuid4().hex
    async with open_client(second.ws_url(chat_id), auto_approve=True) as there:
        await there.turn("what are my account balances")
        async with httpx.AsyncClient(base_url=first.http) as http:
            assert (await http.delete(f"/api/chats/{chat_id}")).status_code == 204
        assert await closed_with(there) == (4403, "chat deleted")


@scale_out
async def test_a_turn_whose_instance_died_ends_for_the_sockets_watching_it(
    servers: Any, database_url: str, redis_url: str
) -> None:
    first = servers(
        database_url, redis_url=redis_url, offline_delta_delay=0.05, turn_lease_seconds=1
    )
    second = servers(database_url, redis_url=redis_url, turn_lease_seconds=1)
    first.start()
    second.start()
    chat_id = uuid.uuid4().hex
    async with (
        open_client(first.ws_url(chat_id), auto_approve=True) as runner,
        open_client(second.ws_url(chat_id), auto_approve=True) as watcher,
    ):
        await subscribed(watcher)
        await runner.send({"type": "prompt", "text": MULTI_AGENT})
        await watcher.until("llm_response_delta")
        first.kill()
        # Nobody sends anything: the other instance notices the lease is gone.
        ended = (await watcher.until("end_of_stream", within=15))[-1]
    assert ended["status"] == "failed"
