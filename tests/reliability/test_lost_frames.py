"""Frames another instance published that never arrived (a failed Redis publish, a
subscription that reconnected) are caught up from storage: a socket still sees every seq
once and in order."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import orjson
import pytest
import redis.asyncio as redis

from storage.engine import Database
from storage.events import EventStore
from storage.records import NewEvent
from tests.support.clients import Client, open_client
from websocket.hub import channel_of
from websocket.protocol import encode, now_ts

pytestmark = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)


async def written_elsewhere(db: Database, chat_id: str, turn_id: str, count: int) -> list[Any]:
    """Events persisted as another instance would, without publishing them."""
    return await EventStore(db).append(
        chat_id,
        [
            NewEvent("suggested_prompts", turn_id, {"prompts": [f"idea {n}"]}, now_ts())
            for n in range(count)
        ],
    )


async def watching(server: Any, chat_id: str, client: Client) -> tuple[str, str, int]:
    """Run a turn on ``server``; the channel, the turn id and the last seq."""
    events = await client.turn("what are my account balances")
    async with httpx.AsyncClient(base_url=server.http) as http:
        user_id = (await http.get("/api/me")).json()["id"]
    return channel_of(user_id, chat_id), events[0]["turn_id"], events[-1]["seq"]


async def test_a_gap_in_the_published_seqs_is_filled_from_storage(
    servers: Any, database_url: str, redis_url: str, db: Database
) -> None:
    server = servers(database_url, redis_url=redis_url)
    server.start()
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id, after_seq=0), auto_approve=True) as client:
        channel, turn_id, last = await watching(server, chat_id, client)
        records = await written_elsewhere(db, chat_id, turn_id, 3)
        # Only the last batch reaches Redis: the first two were lost on the way.
        newest = records[-1]
        message = {
            "o": "another-instance",
            "f": [[newest.seq, encode(newest.to_wire()), None, None, False, None]],
        }
        async with redis.from_url(redis_url) as client_redis:
            # The server's own channel for the chat (websocket.cluster.watcher_channel).
            names = await client_redis.pubsub_channels(f"sb:chat:{channel}@*")
            assert len(names) == 1, names
            await client_redis.publish(names[0], orjson.dumps(message))
        got = [await client.recv() for _ in records]
    assert [e["seq"] for e in got] == [last + 1, last + 2, last + 3]
    assert [e["prompts"] for e in got] == [["idea 0"], ["idea 1"], ["idea 2"]]


async def test_after_the_subscription_reconnects_the_socket_catches_up(
    servers: Any, database_url: str, redis_url: str, db: Database
) -> None:
    server = servers(database_url, redis_url=redis_url)
    server.start()
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id, after_seq=0), auto_approve=True) as client:
        _, turn_id, last = await watching(server, chat_id, client)
        # Published while the server's subscription was down: nobody heard it.
        records = await written_elsewhere(db, chat_id, turn_id, 2)
        async with redis.from_url(redis_url) as client_redis:
            assert await client_redis.client_kill_filter(_type="pubsub") >= 1
        got = [await client.recv(within=15) for _ in records]
    assert [e["seq"] for e in got] == [last + 1, last + 2]
