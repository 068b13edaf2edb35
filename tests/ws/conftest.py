"""The socket tests' server: the real app on a free loopback port (``tests.support.servers``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from app.settings import Settings
from tests.support.servers import LiveServer, serve


@pytest.fixture
async def server(make_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    # A small delay between deltas gives tests time to drop, cancel and resume mid-turn.
    async with serve(make_settings(offline_delta_delay=0.002)) as live:
        yield live
