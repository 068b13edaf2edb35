"""Faults a real server process survives: kill -9, SIGTERM mid-turn, Redis down."""

from __future__ import annotations

import asyncio
import signal
import uuid
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from tests.ws.conftest import open_client

# Two agents, two tools, a streamed answer, and nothing that waits for an approval
# (tests/ws/test_approvals.py and test_approval_faults.py cover those).
MULTI_AGENT = "find sushi in Boston and show my account balances"


async def events_of(server: Any, chat_id: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=server.http) as http:
        return (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]


async def assert_clean_exit(server: Any) -> None:
    # uvicorn re-raises the signal it handled once shut down, as the shell expects.
    assert await server.wait() in (0, -signal.SIGTERM)
    assert "Finished server process" in server.log()
    assert "Traceback" not in server.log()


async def test_kill_9_mid_turn_loses_at_most_the_checkpoint_window(
        servers: Any, database_url: str) -> None:
    server = servers(database_url, offline_delta_delay=0.04)
    server.start()
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        seen = await client.until("llm_response_delta")
        for _ in range(15):  # ~600 ms of streaming: at least two checkpoints
            seen.append(await client.recv())
        server.kill()
    persisted_seen = [e for e in seen if e["seq"] is not None]
    streamed = "".join(e["delta"] for e in seen if e["type"] == "llm_response_delta")

    server.start()  # same database: start-up closes the interrupted turn
    async with open_client(server.ws_url(chat_id, after_seq=0), auto_approve=True) as client:
        replay = await client.until("end_of_stream")
    # Every event the client saw is there, then the turn is closed as failed.
    assert replay[: len(persisted_seen)] == persisted_seen
    assert replay[-1]["status"] == "failed"
    assert [e["seq"] for e in replay] == list(range(1, len(replay) + 1))
    async with httpx.AsyncClient(base_url=server.http) as http:
        turn = (await http.get(f"/api/chats/{chat_id}")).json()["turns"][0]
    assert turn["status"] == "failed"
    # The checkpointed text is what the user saw, less at most the last 250 ms of it.
    assert turn["final_text"] and streamed.startswith(turn["final_text"])
    assert len(streamed) - len(turn["final_text"]) <= 80  # ≈ 250 ms at 40 ms a word

    # The chat is usable again.
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        events = await client.turn("what are my account balances")
    assert events[-2]["status"] == "completed"


async def test_sigterm_lets_the_running_turn_finish_then_closes_with_1001(
        servers: Any, database_url: str) -> None:
    server = servers(database_url, offline_delta_delay=0.01, shutdown_grace_seconds=20)
    server.start()
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        await client.until("tool_call")
        server.terminate()
        events = await client.until("end_of_stream")
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                await client.recv()
    assert events[-1]["status"] == "completed"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    await assert_clean_exit(server)

    server.start()
    stored = await events_of(server, chat_id)
    assert [e["type"] for e in stored][-1] in ("end_of_stream", "suggested_prompts")
    assert "llm_response" in [e["type"] for e in stored]


async def test_sigterm_past_the_grace_period_cancels_and_persists(
        servers: Any, database_url: str) -> None:
    server = servers(database_url, offline_delta_delay=0.2, shutdown_grace_seconds=0.3)
    server.start()
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        await client.until("llm_response_delta")
        server.terminate()
        events = await client.until("end_of_stream")
    assert events[-1]["status"] == "cancelled"
    await assert_clean_exit(server)
    server.start()
    async with httpx.AsyncClient(base_url=server.http) as http:
        turn = (await http.get(f"/api/chats/{chat_id}")).json()["turns"][0]
    assert turn["status"] == "cancelled" and turn["final_text"]


async def test_redis_down_at_start_means_one_instance_with_a_warning(
        servers: Any, database_url: str) -> None:
    server = servers(database_url, redis_url="redis://127.0.0.1:1/0")
    server.start()
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        events = await client.turn("what's in my inbox")
    assert events[-2]["status"] == "completed"
    assert "redis unreachable" in server.log()
    assert "Traceback" not in server.log()


async def test_client_drop_mid_turn_does_not_stop_the_turn(
        servers: Any, database_url: str) -> None:
    server = servers(database_url, offline_delta_delay=0.01)
    server.start()
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        await client.until("tool_call")
    for _ in range(100):
        stored = await events_of(server, chat_id)
        if stored and stored[-1]["type"] == "suggested_prompts":
            break
        await asyncio.sleep(0.1)
    assert [e["type"] for e in stored][-2:] == ["end_of_stream", "suggested_prompts"]
    assert stored[-2]["status"] == "completed"
