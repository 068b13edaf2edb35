"""Switchboard serving ``/v1/responses`` on loopback, and the official ``openai`` client.

``offline`` runs the built-in offline model (deterministic, real connectors in demo mode);
``scripted`` points every agent at ``tests/fakes/model_server.py`` so a test scripts the
model and reads exactly what Switchboard sent it. The official ``openai`` client on a
server is ``tests.support.clients.client_for``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from app.settings import Settings
from tests.fakes.model_server import FakeModelServer, running_model_server
from tests.support.servers import LiveServer, serve


@pytest.fixture
async def offline(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[LiveServer]:
    async with serve(make_settings(suggest_model="offline")) as live:
        yield live


@pytest.fixture
async def fake_model() -> AsyncIterator[FakeModelServer]:
    async with running_model_server(FakeModelServer()) as server:
        yield server


@pytest.fixture
def scripted(
    make_settings: Callable[..., Settings],
    fake_model: FakeModelServer,
) -> Callable[..., Any]:
    """``serve`` with every agent on the fake model (suggestions and titles offline)."""

    def start(**overrides: Any) -> Any:
        values: dict[str, Any] = {
            "model": f"responses:fake-large@{fake_model.base_url()}",
            "suggest_model": "offline",
            "model_timeout": 5,
            "model_call_timeout": 20,
            "model_max_retries": 0,
        }
        values.update(overrides)
        return serve(make_settings(**values))

    return start
