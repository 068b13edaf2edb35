"""A real uvicorn server on a free loopback port, and a small socket client for tests."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from websockets.asyncio.client import ClientConnection, connect

from app.main import create_app
from app.settings import Settings, load_settings
from tests.waiting import wait_started


@dataclass
class LiveServer:
    settings: Settings
    port: int
    app: Any
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, chat_id: str, **query: Any) -> str:
        params = "&".join(f"{key}={value}" for key, value in query.items())
        return f"ws://127.0.0.1:{self.port}/ws/chats/{chat_id}" + (f"?{params}" if params else "")

    def client(self, token: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.http, headers=headers, timeout=10)

    @property
    def services(self) -> Any:
        return self.app.state.services


@asynccontextmanager
async def serve(settings: Settings, hooks: tuple[Any, ...] = ()) -> AsyncIterator[LiveServer]:
    app = create_app(settings, lifespan_hooks=hooks)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", ws_max_size=settings.max_frame_bytes * 4
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await wait_started(lambda: server.started, task, what="the app server to start")
    try:
        yield LiveServer(settings=settings, port=port, app=app)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)
        sock.close()


@pytest.fixture
def make_settings(database_url: str, tmp_path: Path) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {"database_url": database_url, "data_dir": tmp_path / "data"}
        values.update(overrides)
        return load_settings(**values)

    return make


@pytest.fixture
async def server(make_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    # A small delay between deltas gives tests time to drop, cancel and resume mid-turn.
    async with serve(make_settings(offline_delta_delay=0.002)) as live:
        yield live


class Client:
    """A websockets client that decodes events and keeps everything it received.

    ``auto_approve``: approve every approval request as it arrives (PROTOCOL §3a), as a
    person clicking Approve would, for tests about something else than approvals.
    """

    def __init__(self, connection: ClientConnection, auto_approve: bool = False) -> None:
        self.connection = connection
        self.auto_approve = auto_approve
        self.events: list[dict[str, Any]] = []

    async def send(self, frame: dict[str, Any] | str) -> None:
        await self.connection.send(frame if isinstance(frame, str) else json.dumps(frame))

    async def recv(self, within: float = 10) -> dict[str, Any]:
        event = json.loads(await asyncio.wait_for(self.connection.recv(), within))
        self.events.append(event)
        if self.auto_approve and event["type"] == "approval_required":
            await self.decide(event["approval_id"])
        return event

    async def until(self, type_: str, within: float = 20) -> list[dict[str, Any]]:
        """Receive until an event of ``type_``; return the events received on the way."""
        received = []
        async with asyncio.timeout(within):
            while True:
                event = await self.recv(within)
                received.append(event)
                if event["type"] == type_:
                    return received

    async def turn(self, text: str, *, approve: bool = True, **fields: Any) -> list[dict[str, Any]]:
        """Send a prompt and return every event up to its suggested prompts, deciding each
        approval it asks for as ``approve`` says (PROTOCOL §3a), as a person would."""
        await self.send({"type": "prompt", "text": text, **fields})
        events = await self.decide_until_end(approve)
        if events[-1]["status"] == "completed":
            events += await self.until("suggested_prompts")
        return events

    async def decide_until_end(
        self, approve: bool = True, within: float = 20
    ) -> list[dict[str, Any]]:
        """Receive until ``end_of_stream``, approving (or rejecting) each request."""
        received = []
        async with asyncio.timeout(within):
            while True:
                event = await self.recv(within)
                received.append(event)
                if event["type"] == "approval_required" and not self.auto_approve:
                    await self.decide(event["approval_id"], approve)
                if event["type"] == "end_of_stream":
                    return received

    async def decide(
        self, approval_id: str, approve: bool = True, reason: str | None = None
    ) -> None:
        await self.send(
            {
                "type": "approval",
                "approval_id": approval_id,
                "decision": "approve" if approve else "reject",
                "reason": reason,
            }
        )


@asynccontextmanager
async def open_client(
    url: str, *, auto_approve: bool = False, **kwargs: Any
) -> AsyncIterator[Client]:
    async with connect(url, open_timeout=10, **kwargs) as connection:
        yield Client(connection, auto_approve)
