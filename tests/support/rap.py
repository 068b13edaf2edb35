"""A real Switchboard, a real RAP tool server and a scripted model, all on loopback.

``rap_stack(make_settings, **settings)`` starts, in this order: the fake model server
(scripted per test), the RAP tool server (``tests/fakes/rap_tool.py``) and Switchboard on a
port bound first, so its ``SWITCHBOARD_RAP_CALLBACK_URL`` is known to the tools before it
starts. Everything is real but the model's answers.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from app.settings import Settings
from tests.fakes.fake_service import serve_fake
from tests.fakes.model_server import FakeModelServer, running_model_server
from tests.fakes.rap_tool import RapToolServer
from tests.support.servers import LiveServer, loopback_socket, serve


@dataclass
class RapStack:
    live: LiveServer
    tool: RapToolServer
    model: FakeModelServer


def notes_server(tool: RapToolServer, **extra: Any) -> str:
    """``SWITCHBOARD_RAP_TOOLS`` for the fake tool server, named ``notes`` / agent ``Notes``."""
    return json.dumps([{"name": "notes", "url": tool.base_url, "display_name": "Notes", **extra}])


@asynccontextmanager
async def rap_stack(
    make_settings: Callable[..., Settings],
    *,
    secret: str | None = None,
    server: dict[str, Any] | None = None,
    **overrides: Any,
) -> AsyncIterator[RapStack]:
    """The stack, with ``secret`` shared by the tool server and its entry, ``server`` extra
    fields of that entry and ``overrides`` of Switchboard's settings."""
    tool = RapToolServer(secret=secret)
    async with running_model_server(FakeModelServer()) as model, serve_fake(tool):
        sock = loopback_socket()
        extra = dict(server or {})
        if secret is not None:
            extra.setdefault("secret", secret)
        values: dict[str, Any] = {
            "model": f"responses:fake-large@{model.base_url()}",
            "suggest_model": "offline",
            "model_timeout": 5,
            "model_call_timeout": 20,
            "rap_tools": notes_server(tool, **extra),
            "rap_callback_url": f"http://127.0.0.1:{sock.getsockname()[1]}",
        }
        values.update(overrides)
        try:
            async with serve(make_settings(**values), sock=sock) as live:
                yield RapStack(live, tool, model)
        finally:
            await tool.aclose()
