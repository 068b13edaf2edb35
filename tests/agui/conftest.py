"""Switchboard serving ``/ag-ui`` on loopback.

``offline`` runs the built-in offline model (deterministic, real connectors in demo mode,
the local user); ``tokened`` the same in token mode with two users, ``ada`` and ``bob``;
``scripted`` points every agent at ``tests/fakes/model_server.py`` so a test scripts the
model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from app.settings import Settings
from storage.users import UserRepository
from tests.fakes.model_server import FakeModelServer, running_model_server
from tests.support.servers import LiveServer, serve


@pytest.fixture
async def offline(make_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    async with serve(make_settings(suggest_model="offline")) as live:
        yield live


@pytest.fixture
async def tokened(make_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    """Token mode; ``live.tokens`` holds the tokens of ``ada`` and ``bob`` and
    ``live.tokens["<name>:id"]`` their user ids."""
    async with serve(make_settings(auth_mode="token", suggest_model="offline")) as live:
        users = UserRepository(live.services.db)
        for name in ("ada", "bob"):
            record, token = await users.create_user(name)
            live.tokens[name] = token
            live.tokens[f"{name}:id"] = record.id
        yield live


@pytest.fixture
async def fake_model() -> AsyncIterator[FakeModelServer]:
    async with running_model_server(FakeModelServer()) as server:
        yield server


@pytest.fixture
def scripted(
    make_settings: Callable[..., Settings], fake_model: FakeModelServer
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
