"""An idle socket keeps only what it needs (issue 21: 10,000 idle sockets well under
512 MiB, ``bench/idle.py``): no handshake once accepted, no queue storage while empty."""

from __future__ import annotations

import uuid

from app.ws_protocol import LeanWebSocketProtocol
from tests.support.clients import open_client
from tests.support.servers import LiveServer


async def test_an_idle_socket_keeps_no_handshake_and_no_queue_storage(
    server: LiveServer,
) -> None:
    chat_id = uuid.uuid4().hex
    async with open_client(server.ws_url(chat_id)) as client:
        # A frame each way: both queues have held something, and are empty again.
        await client.send({"type": "ping"})
        assert (await client.recv())["type"] == "pong"

        (session,) = [s for s in server.services.connections._sessions if s.chat_id == chat_id]
        protocol = session.websocket._receive.__self__  # uvicorn's, as handler._cut finds it
        assert isinstance(protocol, LeanWebSocketProtocol)
        assert not hasattr(protocol, "request") and not hasattr(protocol, "response")
        assert protocol.queue._items is None  # the ping was taken
        assert session.subscription is not None
        assert session.subscription._queue._items is None  # the pong was sent

        await client.send({"type": "ping"})  # and the socket still answers
        assert (await client.recv())["type"] == "pong"
