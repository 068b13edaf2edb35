"""Every 401 says how to authenticate (``WWW-Authenticate``), on every API of the server,
and ``/metrics`` needs a credential outside local mode."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import httpx

from app.settings import Settings
from storage.migrate import upgrade
from storage.users import UserRepository
from tests.support.processes import ServerProcess, free_port
from tests.support.servers import serve

# One route of each API that needs a user.
SIGNED_IN_ROUTES = [
    ("GET", "/api/me"),
    ("GET", "/api/chats"),
    ("GET", "/api/approvals"),
    ("GET", "/api/connectors"),
    ("POST", "/v1/responses"),
    ("POST", "/ag-ui"),
    ("GET", "/metrics"),
]


async def test_every_401_carries_www_authenticate(make_settings: Callable[..., Settings]) -> None:
    async with serve(make_settings(auth_mode="token")) as live:
        async with live.client() as anonymous:
            for method, path in SIGNED_IN_ROUTES:
                response = await anonymous.request(method, path, json={})
                assert response.status_code == 401, (path, response.text)
                # No credential sent: the challenge alone, no error (RFC 6750 §3.1).
                assert response.headers["www-authenticate"] == 'Bearer realm="switchboard"', path
        async with live.client("sb_revoked-or-never-issued") as wrong:
            for method, path in SIGNED_IN_ROUTES:
                response = await wrong.request(method, path, json={})
                assert response.status_code == 401, path
                assert response.headers["www-authenticate"] == (
                    'Bearer realm="switchboard", error="invalid_token", '
                    'error_description="the token is unknown or was revoked"'
                ), path


async def test_metrics_need_a_token_outside_local_mode(
    make_settings: Callable[..., Settings],
) -> None:
    async with serve(make_settings(auth_mode="token")) as live:
        _user, token = await UserRepository(live.services.db).create_user("scraper")
        async with live.client() as anonymous:
            refused = await anonymous.get("/metrics")
        async with live.client(token) as scraper:
            allowed = await scraper.get("/metrics")
    assert refused.status_code == 401
    assert "switchboard_sockets_open" not in refused.text
    assert refused.json()["error"]["code"] == "unauthorized"
    assert allowed.status_code == 200
    assert "switchboard_sockets_open" in allowed.text


async def test_metrics_stay_open_in_local_mode(make_settings: Callable[..., Settings]) -> None:
    async with serve(make_settings(auth_mode="local")) as live, live.client() as anonymous:
        response = await anonymous.get("/metrics")
    assert response.status_code == 200
    assert "switchboard_sockets_open" in response.text


async def test_metrics_on_their_own_address_need_no_token_and_serve_nothing_else(
    tmp_path: Path,
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path}/metrics.db"
    await asyncio.to_thread(upgrade, database_url)
    metrics_port = free_port()
    server = ServerProcess(
        {
            "SWITCHBOARD_DATABASE_URL": database_url,
            "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
            "SWITCHBOARD_HOST": "127.0.0.1",
            "SWITCHBOARD_AUTH_MODE": "token",
            "SWITCHBOARD_METRICS_ADDRESS": f"127.0.0.1:{metrics_port}",
        },
        tmp_path / "server.log",
    )
    await asyncio.to_thread(server.start)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{metrics_port}") as scraper:
            scraped = await scraper.get("/metrics")
            other = await scraper.get("/api/chats")
        async with httpx.AsyncClient(base_url=server.http) as anonymous:
            main_metrics = await anonymous.get("/metrics")
    finally:
        server.stop()
    assert scraped.status_code == 200
    assert "switchboard_sockets_open" in scraped.text
    assert other.status_code == 404
    assert main_metrics.status_code == 401
    assert main_metrics.headers["www-authenticate"] == 'Bearer realm="switchboard"'
