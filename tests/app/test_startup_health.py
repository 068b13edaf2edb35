"""Start-up checks, /healthz, /readyz, and the lifespan hooks."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import FrozenInstanceError, fields, replace
from pathlib import Path

import httpx
import pytest
from apptest import Running, make_settings

from app.main import create_app
from app.services import Services, StartupError
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
    services = api.services
    unreachable = Database(CLOSED_PORT_URL)
    # The services are built once and never changed: requests get a copy on another engine.
    api.state["services"] = replace(services, db=unreachable)
    try:
        started = time.monotonic()
        response = await api.client.get("/readyz")
        assert time.monotonic() - started < 5
    finally:
        api.state["services"] = services
        await unreachable.dispose()
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
    seen: list[Services] = []

    @asynccontextmanager
    async def hook(services: Services) -> AsyncIterator[None]:
        seen.append(services)
        calls.append("start")
        yield
        # Still before the engine is disposed: a turn runner can flush its writes here.
        assert await services.db.ping()
        assert not services.http.is_closed
        calls.append("stop")

    app = create_app(settings, lifespan_hooks=[hook])
    async with app.router.lifespan_context(app) as state:
        # The hook got the services the requests get, built whole before it ran.
        assert state is not None and state["services"] is seen[0]
        assert calls == ["start"]
    assert calls == ["start", "stop"]


async def test_services_are_built_whole_and_never_changed(api: Running) -> None:
    services = api.services
    # RAP and MCP runtimes exist only when their servers are configured.
    missing = [
        field.name
        for field in fields(services)
        if getattr(services, field.name) is None and field.name not in {"rap", "mcp"}
    ]
    assert missing == []
    with pytest.raises(FrozenInstanceError):
        services.db = services.db  # type: ignore[misc]


async def test_a_request_without_the_lifespan_state_is_told_why(settings: Settings) -> None:
    # A server that does not run the lifespan (uvicorn --lifespan off) gets a clear error.
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        with pytest.raises(RuntimeError, match="the app's lifespan has not run"):
            await client.get("/readyz")


def test_no_module_level_app() -> None:
    import app.main

    assert not hasattr(app.main, "app")
