"""Two real server processes on one PostgreSQL and one Redis behave as one server: the
tests that can share one pair of instances (``test_scale_out.py`` has those that need a
pair of their own)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.clients import open_client
from tests.support.db import MigratedDatabase, wipe
from tests.support.processes import ServerProcess
from tests.support.redis_server import reachable_redis
from tests.support.waiting import wait_until
from websocket.hub import channel_of

# Two agents, two tools, a streamed answer, and nothing that waits for an approval
# (tests/ws/test_approvals.py and test_approval_faults.py cover those).
MULTI_AGENT = "find sushi in Boston and show my account balances"
EPHEMERAL = {"llm_response_delta", "pong"}

# Run on PostgreSQL only: several processes on one SQLite file is not a deployment we offer.
pytestmark = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)


def persisted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] not in EPHEMERAL]


@pytest.fixture(scope="module")
async def pair(
    _migrated_database: MigratedDatabase, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[ServerProcess, ServerProcess]]:
    """Two instances for the whole module: starting a pair costs seconds of CPU, and each
    test has a chat of its own (a fresh id), so nothing one does is in another's way; none
    stops or breaks an instance. No test here takes ``database_url``, whose clean-up would
    delete the rows under the running pair (its local user among them); the pair's rows
    are deleted once it is stopped, as ``database_url`` does after each test."""
    redis_url = await reachable_redis()
    root = tmp_path_factory.mktemp("pair")
    env = {
        "SWITCHBOARD_DATABASE_URL": _migrated_database.url,
        "SWITCHBOARD_DATA_DIR": str(root / "data"),
        "SWITCHBOARD_LOG_LEVEL": "INFO",
        "SWITCHBOARD_REDIS_URL": redis_url,
        "SWITCHBOARD_OFFLINE_DELTA_DELAY": "0.01",
    }
    servers = [ServerProcess(env, root / f"server-{n}.log") for n in range(2)]
    try:
        for server in servers:
            server.start()
        yield servers[0], servers[1]
    finally:
        for server in servers:
            server.stop()
        await wipe(_migrated_database.admin)


async def test_sockets_on_both_instances_get_every_event_in_order(pair: Any) -> None:
    first, second = pair
    chat_id = uuid.uuid4().hex
    async with (
        open_client(first.ws_url(chat_id), auto_approve=True) as here,
        open_client(second.ws_url(chat_id), auto_approve=True) as there,
    ):
        for client in (here, there):
            await client.send({"type": "ping"})
            await client.until("pong")
        # A turn run by the first instance, then one run by the second.
        sent = await here.turn(MULTI_AGENT)
        seen = await there.until("suggested_prompts")
        assert [e for e in seen if e["type"] != "pong"] == sent
        sent = await there.turn("what are my account balances")
        seen = await here.until("suggested_prompts")
        assert [e for e in seen if e["type"] != "pong"] == sent
    async with httpx.AsyncClient(base_url=second.http) as http:
        stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
    assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
    assert len([e for e in stored if e["type"] == "end_of_stream"]) == 2


async def test_cancel_reaches_the_instance_running_the_turn(pair: Any) -> None:
    first, second = pair
    chat_id = uuid.uuid4().hex
    async with (
        open_client(first.ws_url(chat_id), auto_approve=True) as runner,
        open_client(second.ws_url(chat_id), auto_approve=True) as remote,
    ):
        await remote.send({"type": "ping"})
        await remote.until("pong")
        await runner.send({"type": "prompt", "text": "search the web for python asyncio"})
        await remote.until("llm_response_delta")
        await remote.send({"type": "cancel"})
        ended_there = (await remote.until("end_of_stream"))[-1]
        ended_here = (await runner.until("end_of_stream"))[-1]
    assert ended_there["status"] == ended_here["status"] == "cancelled"
    assert ended_there["seq"] == ended_here["seq"]


async def test_one_turn_at_a_time_across_instances(pair: Any) -> None:
    first, second = pair
    chat_id = uuid.uuid4().hex
    async with (
        open_client(first.ws_url(chat_id), auto_approve=True) as here,
        open_client(second.ws_url(chat_id), auto_approve=True) as there,
    ):
        await here.send({"type": "prompt", "text": MULTI_AGENT})
        await here.until("user_prompt")
        await there.send({"type": "prompt", "text": "what's in my inbox"})
        refused = [e for e in await there.until("error") if e["type"] == "error"][-1]
        assert refused["code"] == "turn_in_progress"
        await here.until("end_of_stream")
    async with httpx.AsyncClient(base_url=second.http) as http:
        turns = (await http.get(f"/api/chats/{chat_id}")).json()["turns"]
    assert [t["prompt"] for t in turns] == [MULTI_AGENT]


async def test_a_snapshot_left_behind_by_an_ended_turn_does_not_stall_a_resume(
    pair: Any, redis_url: str
) -> None:
    """An instance that could not tell Redis its turn ended (Redis was away at that moment,
    or the instance was killed) leaves the turn's snapshot behind for an hour. A socket
    resuming on another instance must still get everything stored after its ``after_seq``,
    not wait for frames of that long-ended turn."""
    import redis.asyncio as redis

    first, second = pair
    chat_id = uuid.uuid4().hex
    async with open_client(first.ws_url(chat_id), auto_approve=True) as client:
        earlier = await client.turn("what are my account balances")
        later = await client.turn(MULTI_AGENT)
    # What a lost end leaves: the earlier turn's state as its instance last wrote it.
    stale = {"turn_id": earlier[0]["turn_id"], "seq": earlier[0]["seq"], "msg": 0, "agent": ""}
    key = f"sb:turn:{channel_of('local', chat_id)}"
    client_ = redis.from_url(redis_url)
    try:
        await client_.hset(key, mapping=stale)
        resume_from = later[0]["seq"]  # the later turn's user_prompt
        async with open_client(second.ws_url(chat_id, after_seq=resume_from)) as client:
            resumed = await client.until("suggested_prompts")
        assert persisted(resumed) == persisted(later)[1:]

        # The stale snapshot is tidied away once found out (compare-and-delete).
        async def gone() -> bool:
            return await client_.exists(key) == 0

        await wait_until(gone, what="the stale snapshot deleted")
    finally:
        await client_.delete(key)
        await client_.aclose()
