"""uvicorn's WebSocket protocol (the websockets sans-I/O one, uvicorn's default), lighter
per open socket.

An idle socket is mostly memory: 10,000 of them must fit in well under 512 MiB (issue
21, ``bench/idle.py``). uvicorn's protocol keeps, for the socket's whole life, an
``asyncio.Queue`` and an ``asyncio.Event`` that allocate four deques while empty, and the
parsed handshake (the request's and the response's headers), which nothing reads once
the socket is accepted. This subclass swaps the queue and the event for the lean ones of
``websocket.lean`` and drops the handshake once it is answered: some 8 KiB less per idle
socket. Everything else, framing, keepalive pings, flow control and closing, is uvicorn's.

It also keeps the frames out of the log. uvicorn gives the websockets library its own
``uvicorn.error`` logger, on which the library, at DEBUG, logs every frame it sends or
receives (the person's prompts, the starts of tool outputs) and the handshake's headers;
they reach no log at any level. uvicorn's own lines on that logger stay.

``switchboard serve`` passes it to uvicorn as ``ws=``; so do the test servers.
"""

from __future__ import annotations

from typing import Any

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from websocket.lean import LeanEvent, LeanQueue


class LeanWebSocketProtocol(WebSocketsSansIOProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # websockets decides here, once, whether it logs at DEBUG: its DEBUG lines are
        # this socket's frames, handshake headers and state changes.
        self.conn.debug = False
        # Same calls as uvicorn makes on them: put_nowait/get/empty, set/clear/wait.
        self.queue = LeanQueue()  # type: ignore[assignment]
        self.writable = LeanEvent(True)  # type: ignore[assignment]

    async def send(self, message: ASGISendEvent) -> None:
        await super().send(message)
        if self.handshake_complete and message["type"] == "websocket.accept":
            # Read only while answering the handshake: the scope has its own copy of the
            # request's headers. websockets' parser keeps the request too (a local of its
            # generator, for the connection's life), hence the emptied headers.
            attributes = vars(self)
            request = attributes.pop("request", None)
            if request is not None:
                request.headers.clear()
            attributes.pop("response", None)
