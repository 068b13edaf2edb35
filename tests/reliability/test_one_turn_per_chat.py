"""One turn per chat across real server processes, with or without Redis.

Who runs a turn is a fact in the database (a lease its runner renews), so a second server
on the same database, by mistake or in a rolling restart, never closes a live turn; a dead
server's turn ends unprompted once its lease expires; a server that cannot reach Redis
stays a cluster member that reconnects; and a stop reaches the turn through the database
when Redis cannot carry it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from typing import Any

import httpx

from tests.reliability.orphans import LEASE, stored_events
from tests.support.chat_log import check_chat_log
from tests.support.clients import open_client
from tests.support.processes import ROOT, readiness
from tests.support.proxies import DroppingProxy
from tests.support.waiting import wait_until

MULTI_AGENT = "find sushi in Boston and show my account balances"


async def test_a_second_server_never_touches_the_first_ones_running_turn(
    servers: Any, database_url: str
) -> None:
    first = servers(database_url, offline_delta_delay=0.05, turn_lease_seconds=LEASE)
    await asyncio.to_thread(first.start)
    chat_id = uuid.uuid4().hex
    async with open_client(first.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        await client.until("llm_response_delta")
        # A second `make run` by mistake: the port is taken, so it stops before it
        # touches the database.
        busy = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "app.cli", "serve", "--no-migrate"],
            cwd=ROOT,
            env={**first.env, "SWITCHBOARD_PORT": str(first.port)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert busy.returncode == 1, busy.stderr
        assert f"port {first.port} on 127.0.0.1 is already in use" in busy.stderr
        assert f"make run PORT={first.port + 1}" in busy.stderr
        assert "Traceback" not in busy.stderr
        # A second server on another port, same database, no Redis (a rolling restart).
        second = servers(database_url, turn_lease_seconds=LEASE)
        await asyncio.to_thread(second.start)
        end = (await client.until("end_of_stream"))[-1]
    assert end["status"] == "completed"
    log = check_chat_log(await stored_events(second, chat_id))
    assert list(log.ends.values()) == ["completed"]

    # The first server dies mid-turn: its turn ends, unprompted, once its lease expired.
    chat_id = uuid.uuid4().hex
    async with open_client(first.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        await client.until("llm_response_delta")
        first.kill()
    async with open_client(second.ws_url(chat_id, after_seq=0), auto_approve=True) as watcher:
        ended = (await watcher.until("end_of_stream", within=60))[-1]
        assert ended["status"] == "failed"
        after = await watcher.turn("what are my account balances")  # the chat works again
    assert [e["status"] for e in after if e["type"] == "end_of_stream"] == ["completed"]
    check_chat_log(await stored_events(second, chat_id))


async def test_a_server_that_starts_without_redis_keeps_trying_and_says_so(
    servers: Any, database_url: str, redis_url: str, redis_proxy: tuple[DroppingProxy, str]
) -> None:
    proxy, via_proxy = redis_proxy
    proxy.refusing = True
    late = servers(database_url, redis_url=via_proxy)
    await asyncio.to_thread(late.start)  # serving, degraded
    async with httpx.AsyncClient(base_url=late.http) as http:
        ready = await http.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"status": "degraded", "database": "ok", "redis": "unreachable"}
        proxy.refusing = False

        async def reconnected() -> bool:  # by itself, with a backoff of at most 5 s
            return (await readiness(late))["status"] == "ok"

        await wait_until(reconnected, what="the server back in cluster mode")
        assert (await http.get("/readyz")).json() == {
            "status": "ok",
            "database": "ok",
            "redis": "ok",
        }
    # Still a cluster member: another instance's sockets see its turns live.
    other = servers(database_url, redis_url=redis_url)
    await asyncio.to_thread(other.start)
    chat_id = uuid.uuid4().hex
    async with (
        open_client(other.ws_url(chat_id), auto_approve=True) as watcher,
        open_client(late.ws_url(chat_id), auto_approve=True) as client,
    ):
        await watcher.send({"type": "ping"})
        await watcher.until("pong")
        await client.send({"type": "prompt", "text": "what are my account balances"})
        seen = await watcher.until("end_of_stream")
    assert seen[-1]["status"] == "completed"


async def test_a_cancel_reaches_another_instance_while_redis_is_down(
    servers: Any, database_url: str, redis_proxy: tuple[DroppingProxy, str]
) -> None:
    proxy, via_proxy = redis_proxy
    runner = servers(
        database_url, redis_url=via_proxy, offline_delta_delay=0.2, turn_lease_seconds=LEASE
    )
    remote = servers(database_url, redis_url=via_proxy, turn_lease_seconds=LEASE)
    await asyncio.to_thread(runner.start)
    await asyncio.to_thread(remote.start)
    chat_id = uuid.uuid4().hex
    async with open_client(runner.ws_url(chat_id), auto_approve=True) as here:
        await here.send({"type": "prompt", "text": MULTI_AGENT})
        await here.until("llm_response_delta")
        proxy.refusing = True
        proxy.drop()  # Redis is gone for both instances
        async with open_client(remote.ws_url(chat_id), auto_approve=True) as there:
            await there.send({"type": "cancel"})
            await there.send({"type": "ping"})  # handled after the cancel, in order
            replies = await there.until("pong")
        assert not [e for e in replies if e["type"] == "error"], replies
        end = (await here.until("end_of_stream", within=60))[-1]
    assert end["status"] == "cancelled"
    check_chat_log(await stored_events(runner, chat_id))
