"""A real Switchboard, a real RAP tool server and a scripted model, all on loopback.

``rap_stack(**settings)`` starts, in this order: the fake model server (``fake_model``,
scripted per test), the RAP tool server (``tool``, ``tests/fakes/rap_tool.py``) and
Switchboard on a port chosen first, so its ``SWITCHBOARD_RAP_CALLBACK_URL`` is known to
the tools before it starts. Everything is real but the model's answers.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn

from app.main import create_app
from app.settings import Settings
from tests.fakes.fake_service import serve_fake
from tests.fakes.model_server import FakeModelServer, running_model_server
from tests.fakes.rap_tool import RapToolServer
from tests.waiting import wait_started
from tests.ws.conftest import LiveServer, make_settings  # noqa: F401 - fixture re-exported


@asynccontextmanager
async def serve_on(sock: socket.socket, settings: Settings) -> AsyncIterator[LiveServer]:
    """``tests.ws.conftest.serve`` on a socket bound beforehand."""
    app = create_app(settings)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await wait_started(lambda: server.started, task, what="the app server to start")
    try:
        yield LiveServer(settings=settings, port=sock.getsockname()[1], app=app)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)
        sock.close()


@dataclass
class RapStack:
    live: LiveServer
    tool: RapToolServer
    model: FakeModelServer


def notes_server(tool: RapToolServer, **extra: Any) -> str:
    """``SWITCHBOARD_RAP_TOOLS`` for the fake tool server, named ``notes`` / agent ``Notes``."""
    return json.dumps([{"name": "notes", "url": tool.base_url, "display_name": "Notes", **extra}])


@pytest.fixture
def rap_stack(
    make_settings: Callable[..., Settings],  # noqa: F811 - the fixture
) -> Callable[..., Any]:
    @asynccontextmanager
    async def start(
        *, secret: str | None = None, server: dict[str, Any] | None = None, **overrides: Any
    ) -> AsyncIterator[RapStack]:
        tool = RapToolServer(secret=secret)
        async with running_model_server(FakeModelServer()) as model, serve_fake(tool):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
            extra = dict(server or {})
            if secret is not None:
                extra.setdefault("secret", secret)
            values: dict[str, Any] = {
                "model": f"responses:fake-large@{model.base_url()}",
                "suggest_model": "offline",
                "model_timeout": 5,
                "model_call_timeout": 20,
                "rap_tools": notes_server(tool, **extra),
                "rap_callback_url": f"http://127.0.0.1:{port}",
            }
            values.update(overrides)
            try:
                async with serve_on(sock, make_settings(**values)) as live:
                    yield RapStack(live, tool, model)
            finally:
                await tool.aclose()

    return start
