"""Real uvicorn servers on free loopback ports, run in the test's own event loop.

``running_uvicorn`` is how every in-process test server starts (the app, the fake outside
services, the fake model server): on a socket bound here, and ready once uvicorn says it
``started``, never after a guessed delay. ``serve`` runs the real Switchboard app on it.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn

from app.main import create_app
from app.services import Services
from app.settings import Settings
from app.ws_protocol import LeanWebSocketProtocol
from tests.support.waiting import wait_started


def loopback_socket(port: int = 0) -> socket.socket:
    """A TCP socket bound to a loopback port (a free one unless ``port`` is given, which
    may still hold closed connections in TIME_WAIT), for a server to listen on.

    Bind it first when a server's own URL must be known before it starts (RAP tools are
    told Switchboard's callback URL).
    """
    # IPPROTO_TCP, not 0: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say
    # they are TCP, and accepted ones inherit this. Left on, uvicorn's second write of a
    # response (the body after the head) waits out the client's delayed ACK: 40 ms a call.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


@asynccontextmanager
async def running_uvicorn(
    app: Any, *, what: str, sock: socket.socket | None = None, **options: Any
) -> AsyncIterator[int]:
    """Serve ``app`` with uvicorn for the block; yields the port.

    ``sock``: a socket from ``loopback_socket()`` (a fresh one when omitted), closed at the
    end. ``options`` go to ``uvicorn.Config`` (``log_level`` is ``warning`` unless given).
    ``what`` names the server in the error when it does not start.
    """
    sock = sock if sock is not None else loopback_socket()
    config = uvicorn.Config(app, **{"log_level": "warning", **options})
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await wait_started(lambda: server.started, task, what=f"{what} to start")
    try:
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)
        sock.close()


class LoopbackUrls:
    """The HTTP base and chat socket URLs of a server on a loopback ``port``."""

    port: int

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, chat_id: str, **query: Any) -> str:
        params = "&".join(f"{key}={value}" for key, value in query.items())
        return f"ws://127.0.0.1:{self.port}/ws/chats/{chat_id}" + (f"?{params}" if params else "")


@dataclass
class LiveServer(LoopbackUrls):
    settings: Settings
    port: int
    app: Any
    services: Services
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, token: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.http, headers=headers, timeout=10)


@asynccontextmanager
async def serve(
    settings: Settings, hooks: tuple[Any, ...] = (), *, sock: socket.socket | None = None
) -> AsyncIterator[LiveServer]:
    """The real app (``create_app``, its lifespan and ``hooks``) on a loopback port.

    uvicorn's own frame limit is four times the app's, so the app's limit is the one a
    client meets (``switchboard serve`` sets uvicorn's to the app's).
    """
    started: list[Services] = []

    @asynccontextmanager
    async def keep(services: Services) -> AsyncIterator[None]:
        started.append(services)  # the services the lifespan built, for the tests to read
        yield

    app = create_app(settings, lifespan_hooks=(*hooks, keep))
    async with running_uvicorn(
        app,
        what="the app server",
        sock=sock,
        lifespan="on",
        ws=LeanWebSocketProtocol,  # as ``switchboard serve`` runs it
        ws_max_size=settings.max_frame_bytes * 4,
    ) as port:
        yield LiveServer(settings=settings, port=port, app=app, services=started[0])
