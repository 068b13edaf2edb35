"""Faults a real server process survives: kill -9, SIGTERM mid-turn, Redis down."""

from __future__ import annotations

import itertools
import signal
import uuid
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from tests.reliability.orphans import LEASE
from tests.support.clients import open_client
from tests.support.waiting import wait_until

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


# The offline model streams its one-message answer to MULTI_AGENT (~40 words) a word per
# delta, DELTA_DELAY apart: four seconds, of which the kill test reads the first WORDS_READ,
# leaving seconds of streaming after the kill on any machine, however busy.
DELTA_DELAY = 0.1
WORDS_READ = 16
# websocket.writer.EventWriter stores the text being streamed at least this often
# (docs/reliability.md: "the checkpoint window").
CHECKPOINT_INTERVAL = 0.25
# After a checkpoint commits, the writer publishes deltas without storing them for at most
# CHECKPOINT_INTERVAL: one frame for what queued up during the commit, then one frame per
# wake-up, and it only wakes for a new word (at most one per DELTA_DELAY). Counted in
# frames, not seconds or characters, the window does not stretch when a busy machine makes
# a commit slow.
WINDOW_FRAMES = 1 + int(CHECKPOINT_INTERVAL / DELTA_DELAY) + 1


async def test_kill_9_mid_turn_loses_at_most_the_checkpoint_window(
    servers: Any, database_url: str
) -> None:
    server = servers(database_url, offline_delta_delay=DELTA_DELAY, turn_lease_seconds=LEASE)
    server.start()
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        seen = await client.until("llm_response_delta")
        while len(streamed_text(seen).split()) < WORDS_READ:  # several checkpoint windows
            seen.append(await client.recv())
        server.kill()
    assert "llm_response" not in [e["type"] for e in seen], "the message ended before the kill"
    persisted_seen = [e for e in seen if e["seq"] is not None]
    read = [e["delta"] for e in seen if e["type"] == "llm_response_delta"]
    streamed = "".join(read)

    server.env["SWITCHBOARD_OFFLINE_DELTA_DELAY"] = "0"  # the rest needs no pace
    server.start()  # same database: the dead process's lease expires, then its turn ends
    async with open_client(server.ws_url(chat_id, after_seq=0), auto_approve=True) as client:
        replay = await client.until("end_of_stream", within=60)
    # Every event the client saw is there, then the turn is closed as failed.
    assert replay[: len(persisted_seen)] == persisted_seen
    assert replay[-1]["status"] == "failed"
    assert [e["seq"] for e in replay] == list(range(1, len(replay) + 1))
    async with httpx.AsyncClient(base_url=server.http) as http:
        turn = (await http.get(f"/api/chats/{chat_id}")).json()["turns"][0]
    assert turn["status"] == "failed"

    # The whole answer, from the same prompt in a new chat (the offline model is
    # deterministic): what the client read and what was stored are both beginnings of it.
    async with open_client(server.ws_url(uuid.uuid4().hex), auto_approve=True) as client:
        complete = await client.turn(MULTI_AGENT)
    [answer] = [e["text"] for e in complete if e["type"] == "llm_response"]
    stored = turn["final_text"]
    assert answer.startswith(streamed), (streamed, answer)
    assert stored and answer.startswith(stored), (stored, answer)
    # The server stores a checkpoint before it sends its frames, so it may have stored more
    # than the client read; what it lost of the text the client read is at most the frames
    # it sent since its last checkpoint. Twice the window allows for words that reach the
    # writer in a burst after a stall; a text stored once and never again would lose more.
    ends = list(itertools.accumulate(len(delta) for delta in read))
    unsaved = [delta for delta, end in zip(read, ends, strict=True) if end > len(stored)]
    assert len(unsaved) <= 2 * WINDOW_FRAMES, (
        f"{len(unsaved)} frames the client read ({len(streamed) - len(stored)} characters) "
        f"were never checkpointed: {unsaved}"
    )

    # The chat is usable again.
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        events = await client.turn("what are my account balances")
    assert events[-2]["status"] == "completed"


def streamed_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "llm_response_delta")


async def test_sigterm_lets_the_running_turn_finish_then_closes_with_1001(
    servers: Any, database_url: str
) -> None:
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
    servers: Any, database_url: str
) -> None:
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


async def test_redis_down_at_start_serves_degraded_with_a_warning(
    servers: Any, database_url: str
) -> None:
    server = servers(database_url, redis_url="redis://127.0.0.1:1/0")
    server.start()
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        events = await client.turn("what's in my inbox")
    assert events[-2]["status"] == "completed"
    assert "redis unreachable" in server.log()
    # The socket's close unsubscribes its chat, which fails while Redis is down: an
    # expected state, worth a line but not a traceback.
    await wait_until(
        lambda: "redis command failed" in server.log(), what="the unsubscribe to be tried"
    )
    assert "Traceback" not in server.log()


async def test_client_drop_mid_turn_does_not_stop_the_turn(servers: Any, database_url: str) -> None:
    server = servers(database_url, offline_delta_delay=0.01)
    server.start()
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        await client.until("tool_call")

    async def ended() -> list[dict[str, Any]] | None:
        stored = await events_of(server, chat_id)
        last = stored[-1] if stored else {}
        # A completed turn ends with its suggestions, any other with its end_of_stream.
        if last.get("type") == "suggested_prompts" or (
            last.get("type") == "end_of_stream" and last["status"] != "completed"
        ):
            return stored
        return None

    # Nobody is connected: the stored events are the only way to watch the turn go on.
    stored = await wait_until(ended, what="the turn to end without its socket")
    assert [e["type"] for e in stored][-2:] == ["end_of_stream", "suggested_prompts"]
    assert stored[-2]["status"] == "completed"
