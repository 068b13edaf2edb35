"""A real Switchboard and a real MCP server (``tests/mcp/notes_server.py``), over stdio or
streamable HTTP (``tests.support.mcp``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from tests.support.mcp import Notes, mcp_app, notes_server


@pytest.fixture(params=["stdio", "http"])
async def notes(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Notes]:
    """The notes server, once over each transport. A call's timeout holds a restart
    of the server (a Python process) however loaded the machine is."""
    async with notes_server(request.param, tmp_path, timeout=60) as server:
        yield server


@pytest.fixture
def app(make_settings: Callable[..., Settings]) -> Callable[..., Any]:
    """``app(servers, model=…, **settings)``: ``tests.support.mcp.mcp_app`` on the test's
    database."""
    return partial(mcp_app, make_settings)
