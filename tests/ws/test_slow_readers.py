"""Sockets that cannot keep up are closed, whatever fills their queue (issue 15).

Each socket's queue is bounded by bytes as well as frames (``websocket.hub``): a fast model
coalesces its deltas into few large frames. A socket past the bound is closed with 1011
"too slow: reconnect and resume", even when its sender is stuck writing to a peer that
stopped reading; such a peer can never take the close frame, so the connection is cut.
The tests make the bound small, so that a few turns with long prompts pass it, and the
server's send buffers small too: left to grow, the kernel's take a few MB on loopback
before anything stays in the queue, a dozen turns more for nothing.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections.abc import Callable

import pytest
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosedError
from websockets.http11 import Response
from websockets.uri import parse_uri

from app.settings import Settings
from tests.support.clients import open_client
from tests.support.logs import capture_logs
from tests.support.servers import loopback_socket, serve
from tests.support.waiting import wait_until
from websocket import hub
from websocket.handler import CLOSE_TIMEOUT

pytestmark = pytest.mark.parametrize("_migrated_database", ["sqlite"], indirect=True)

# Echoed in the turn's user_prompt event, and nowhere else (no tool is called), so a turn
# is about 500 KB of frames, the largest one first.
PROMPT = "hello " + "x" * 500_000
QUEUE_BYTES = 1024 * 1024
# Enough bytes to fill the kernel's socket buffers and then the queue many times over.
MAX_TURNS = 48
# A small receive window (set before connecting): the client's kernel holds next to
# nothing for it, so what the server sends piles up on the server's side.
RCVBUF = 4096
# The server's send buffer (set on its listening socket; accepted sockets inherit it):
# fixed rather than grown by the kernel up to net.ipv4.tcp_wmem's 4 MB, so the queue
# fills after a few turns.
SNDBUF = 64 * 1024


class StalledReader:
    """A WebSocket client on a raw socket that reads the handshake and then nothing."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    @classmethod
    async def connect(cls, url: str) -> StalledReader:
        loop = asyncio.get_running_loop()
        uri = parse_uri(url)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        sock.setblocking(False)
        await loop.sock_connect(sock, (uri.host, uri.port))
        protocol = ClientProtocol(uri)
        protocol.send_request(protocol.connect())
        for data in protocol.data_to_send():
            await loop.sock_sendall(sock, data)
        # One byte at a time: nothing the server sends after the handshake is read.
        while not (events := protocol.events_received()):
            protocol.receive_data(await loop.sock_recv(sock, 1))
        response = events[0]
        assert isinstance(response, Response) and response.status_code == 101, response
        return cls(sock)

    async def until_closed(self) -> None:
        """Read whatever is left until the connection ends."""
        loop = asyncio.get_running_loop()
        try:
            while await loop.sock_recv(self.sock, 65536):
                pass
        except ConnectionResetError:
            pass  # cut: what was still on the way is lost, and resumed from storage

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def small_queues(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub, "MAX_QUEUED_BYTES", QUEUE_BYTES)


@pytest.fixture
def long_prompts(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(
        offline_delta_delay=0, max_prompt_chars=len(PROMPT), prompts_per_minute=1000
    )


async def test_a_socket_that_stops_reading_is_cut_once_its_queue_passes_the_bound(
    long_prompts: Settings, small_queues: None
) -> None:
    sock = loopback_socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
    async with serve(long_prompts, sock=sock) as live:
        connections = live.services.connections
        url = live.ws_url(uuid.uuid4().hex)
        with capture_logs(logging.WARNING) as logs:
            stalled = await StalledReader.connect(url)
            try:
                # Another tab on the same chat drives turns, and reads everything.
                async with open_client(url) as driver:
                    for _ in range(MAX_TURNS):
                        if connections.total == 1:
                            break
                        events = await driver.turn(PROMPT)
                        assert events[-2]["status"] == "completed", events[-2]
                    await wait_until(
                        lambda: connections.total == 1,
                        within=CLOSE_TIMEOUT + 10,
                        what="the server to drop the socket that stopped reading",
                    )
                async with asyncio.timeout(10):
                    await stalled.until_closed()
            finally:
                stalled.close()
        assert not logs.errors(), logs.describe(logs.errors())
        # Closed as too slow, and cut: its close frame could not get through.
        assert [r.getMessage() for r in logs.records if r.name == "switchboard.socket"] == [
            "socket too slow, closing",
            "socket not reading, connection cut",
        ]


async def test_a_socket_past_the_bound_that_still_reads_gets_the_reason(
    long_prompts: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Any backlog passes this bound: a second frame published before the sender has taken
    # the first from the queue. Turns rarely make one any more (a streamed delta goes out
    # on its own, websocket/writer.py), so after a turn the backlog is what one batch of
    # a writer's committed events makes: two frames in one publish.
    monkeypatch.setattr(hub, "MAX_QUEUED_BYTES", 1)
    async with serve(long_prompts) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            with pytest.raises(ConnectionClosedError) as closed:
                await client.turn("hello")
                (channel,) = live.services.hub.watched_channels()
                backlog = [hub.Frame(None, '{"type":"pong"}') for _ in range(2)]
                live.services.hub.publish(channel, backlog)
                while True:
                    await client.recv()
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
        1011,
        "too slow: reconnect and resume",
    )
