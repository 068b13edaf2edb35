"""PostgreSQL going away and coming back, under a running server.

The shared PostgreSQL service is never touched: the app reaches it through a ``TcpProxy``
(tests/fakes/tcp_proxy.py), and stopping the proxy is the outage: every connection is
reset and new ones are refused, as when the database restarts.

What the server must do (issue 9): ``/readyz`` answers 503 while the database is down; a
prompt gets a clear, retryable ``server_error`` and the socket stays open, with no stack
trace or database detail in anything the client sees; once the database is back the same
socket's next prompt works (the pool pre-pings and reconnects). A turn cut off mid-way
ends with ``error`` + ``end_of_stream`` ``failed`` when the database comes back within the
writer's retry window, and loses none of its events: those the database could not take
are kept by the writer and written then.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable

import pytest
from sqlalchemy.engine import make_url

from app.settings import Settings
from tests.fakes.tcp_proxy import TcpProxy
from tests.support.clients import open_client
from tests.support.logs import CapturedLogs, capture_logs
from tests.support.servers import LiveServer, serve
from tests.support.waiting import wait_until
from websocket.protocol import validate_server_event

pytestmark = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)

# Two agents, two tools, a streamed answer, and nothing that waits for an approval
# (tests/ws/test_approvals.py and test_approval_faults.py cover those).
MULTI_AGENT = "find sushi in Boston and show my account balances"
# What no client-visible text may contain: stack traces, driver or SQL details, addresses.
LEAKS = (
    "Traceback",
    'File "',
    "asyncpg",
    "sqlalchemy",
    "SELECT",
    "INSERT",
    "UPDATE",
    "postgres",
    "127.0.0.1",
    "Connection refused",
    "Errno",
)


@pytest.fixture
async def proxy(database_url: str) -> AsyncIterator[TcpProxy]:
    url = make_url(database_url)
    async with TcpProxy(url.host or "127.0.0.1", url.port or 5432) as running:
        yield running


def assert_no_leak(texts: list[str]) -> None:
    for text in texts:
        for leak in LEAKS:
            assert leak not in text, f"{leak!r} reached the client: {text}"


def assert_no_crash(logs: CapturedLogs) -> None:
    """Errors are expected in the log during an outage; unhandled ones are not."""
    crashes = [
        r
        for r in logs.errors()
        if r.name.startswith(("uvicorn", "asyncio")) or "never retrieved" in r.getMessage()
    ]
    assert not crashes, logs.describe(crashes)


def writer_gave_up(logs: CapturedLogs) -> bool:
    # websocket.writer logs this (with the exception) once its quick retries are spent.
    return any(record.getMessage() == "event write failed" for record in logs.errors())


async def ready_status(live: LiveServer) -> int:
    async with live.client() as http:
        return (await http.get("/readyz")).status_code


async def test_readyz_follows_the_database(
    proxied_settings: Callable[..., Settings], proxy: TcpProxy
) -> None:
    async with serve(proxied_settings()) as live:
        with capture_logs(logging.WARNING) as logs:
            assert await ready_status(live) == 200
            await proxy.stop()
            async with asyncio.timeout(10):  # a refused connection answers at once
                assert await ready_status(live) == 503
            await proxy.start()
            assert await ready_status(live) == 200
        assert_no_crash(logs)


async def test_prompt_while_down_is_a_retryable_server_error_then_works(
    proxied_settings: Callable[..., Settings], proxy: TcpProxy
) -> None:
    async with serve(proxied_settings()) as live:
        with capture_logs(logging.WARNING) as logs:
            chat_id = uuid.uuid4().hex
            async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
                first = await client.turn("what's in my inbox")
                assert first[-2]["status"] == "completed"

                await proxy.stop()
                await client.send({"type": "prompt", "text": "and my balances?"})
                error = await client.recv(within=15)
                validate_server_event(error)
                assert error["type"] == "error" and error["code"] == "server_error", error
                assert error["retryable"] is True and error["seq"] is None
                await client.send({"type": "ping"})
                assert (await client.recv())["type"] == "pong"  # the socket stays open
                async with live.client() as http:
                    listing = await http.get("/api/chats")
                assert listing.status_code == 503 and listing.headers["retry-after"]
                assert listing.json()["error"]["code"] == "server_error"
                assert_no_leak([json.dumps(error), listing.text])

                await proxy.start()
                second = await client.turn("and my balances?")
            assert second[0]["type"] == "user_prompt"
            assert second[0]["seq"] == first[-1]["seq"] + 1  # nothing half-written
            assert second[-2]["status"] == "completed"
            assert await ready_status(live) == 200
        assert_no_crash(logs)


async def test_outage_mid_turn_ends_the_turn_and_loses_no_event(
    proxied_settings: Callable[..., Settings], proxy: TcpProxy
) -> None:
    async with serve(proxied_settings(offline_delta_delay=0.03)) as live:
        with capture_logs(logging.WARNING) as logs:
            chat_id = uuid.uuid4().hex
            async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
                await client.send({"type": "prompt", "text": MULTI_AGENT})
                seen = await client.until("llm_response_delta")
                await proxy.stop()
                # The database stays away until the writer has given up on it (after its
                # quick retries), which stops the turn; frames are published only once
                # stored, so the socket goes quiet meanwhile, but for what was committed.
                await wait_until(
                    lambda: writer_gave_up(logs), what="the event writer to give up on the database"
                )
                await proxy.start()
                held_from = len(seen)
                seen += await client.until("end_of_stream", within=30)
                # What the turn produced while its writes failed was held, not dropped.
                assert any(e["type"] == "llm_response_delta" for e in seen[held_from:])
                await client.send({"type": "ping"})
                seen += await client.until("pong")

                assert seen[-2]["type"] == "end_of_stream" and seen[-2]["status"] == "failed"
                errors = [e for e in seen if e["type"] == "error"]
                assert len(errors) == 1 and errors[0]["code"] == "server_error", errors
                assert errors[0]["retryable"] is True and errors[0]["seq"] is not None
                assert_no_leak([json.dumps(e) for e in seen])
                for event in seen:
                    validate_server_event(event)

                # Everything the client saw is stored, gap-free, in the order it saw it.
                async with live.client() as http:
                    stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
                    turn = (await http.get(f"/api/chats/{chat_id}")).json()["turns"][0]
                live_persisted = [e for e in seen if e["seq"] is not None]
                assert stored == live_persisted
                assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
                assert turn["status"] == "failed"
                # The stored text is the message as far as the client saw it stream.
                last_message = max(
                    (i for i, e in enumerate(seen) if e["type"] == "llm_response"), default=-1
                )
                streamed = "".join(
                    e["delta"]
                    for e in seen[last_message + 1 :]
                    if e["type"] == "llm_response_delta"
                )
                assert streamed and turn["final_text"] == streamed

                # The chat is usable again on the same socket.
                after = await client.turn("what are my account balances")
                assert after[0]["seq"] == stored[-1]["seq"] + 1
                assert after[-2]["status"] == "completed"
        assert_no_crash(logs)
