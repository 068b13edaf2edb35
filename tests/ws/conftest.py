"""The socket tests' server: the real app on a free loopback port (``tests.support.servers``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from app.settings import Settings
from tests.fakes.model_server import FakeModelServer, running_model_server
from tests.support.servers import LiveServer, serve


@pytest.fixture
async def server(make_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    # A small delay between deltas gives tests time to drop, cancel and resume mid-turn.
    async with serve(make_settings(offline_delta_delay=0.002)) as live:
        yield live


@pytest.fixture
async def fake_model() -> AsyncIterator[FakeModelServer]:
    """The scripted model server (``tests/fakes/model_server.py``)."""
    async with running_model_server(FakeModelServer()) as model:
        yield model


@pytest.fixture
async def scripted_server(
    make_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> AsyncIterator[LiveServer]:
    """The real app with every agent on ``fake_model`` (suggestions and titles offline)."""
    settings = make_settings(
        model=f"responses:fake-large@{fake_model.base_url()}",
        suggest_model="offline",
        model_timeout=5,
        model_call_timeout=20,
        model_max_retries=0,
    )
    async with serve(settings) as live:
        yield live
