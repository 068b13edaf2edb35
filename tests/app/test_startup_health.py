"""Start-up checks, /healthz, /readyz, and the lifespan hooks."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from apptest import Running, make_settings

from app.main import StartupError, create_app
from app.services import Services
from app.settings import Settings
from storage.engine import Database

# Nothing listens on port 1: connections are refused at once, no timeout to wait for.
CLOSED_PORT_URL = "postgresql+asyncpg://postgres:pw@127.0.0.1:1/switchboard"


async def test_healthz(api: Running) -> None:
    response = await api.client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_ok(api: Running) -> None:
    response = await api.client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


async def test_readyz_503_when_database_unreachable(api: Running) -> None:
    services: Services = api.services
    real = services.db
    services.db = Database(CLOSED_PORT_URL)
    try:
        started = time.monotonic()
        response = await api.client.get("/readyz")
        assert time.monotonic() - started < 5
    finally:
        await services.db.dispose()
        services.db = real
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "unavailable"}
    # Liveness does not depend on the database.
    assert (await api.client.get("/healthz")).status_code == 200


async def test_startup_refuses_unmigrated_database(tmp_path: Path) -> None:
    settings = make_settings(f"sqlite+aiosqlite:///{tmp_path}/fresh.db", tmp_path)
    app = create_app(settings)
    with pytest.raises(StartupError, match=r"database is not migrated: run `switchboard migrate`"):
        async with app.router.lifespan_context(app):
            pass


async def test_startup_reports_unreachable_database(tmp_path: Path) -> None:
    app = create_app(make_settings(CLOSED_PORT_URL, tmp_path))
    with pytest.raises(StartupError, match="cannot reach the database") as caught:
        async with app.router.lifespan_context(app):
            pass
    assert "SWITCHBOARD_DATABASE_URL" in str(caught.value)
    assert ":pw@" not in str(caught.value)  # the password is masked


async def test_lifespan_hooks_run_inside_the_services_lifetime(settings: Settings) -> None:
    calls: list[str] = []

    @asynccontextmanager
    async def hub_hook(services: Services) -> AsyncIterator[None]:
        services.hub = "hub"
        calls.append("start")
        yield
        # Still before the engine is disposed: a turn runner can flush its writes here.
        assert await services.db.ping()
        calls.append("stop")

    app = create_app(settings, lifespan_hooks=[hub_hook])
    async with app.router.lifespan_context(app):
        assert app.state.services.hub == "hub"
        assert calls == ["start"]
    assert calls == ["start", "stop"]


def test_no_module_level_app() -> None:
    import app.main

    assert not hasattr(app.main, "app")
