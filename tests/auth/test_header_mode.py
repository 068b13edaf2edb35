"""``SWITCHBOARD_AUTH_MODE=header``: ``switchboard serve`` behind an authenticating proxy.

The "proxy" is a client connecting from 127.0.0.2 (all of 127.0.0.0/8 is loopback on
Linux); anything else connects from 127.0.0.1. The server runs as an operator starts it,
so the test also proves that the command keeps uvicorn from rewriting the peer address
from a client's ``X-Forwarded-For``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from app.cli import main
from storage.migrate import upgrade
from tests.support.processes import ServerProcess

PROXY = "127.0.0.2"
USER_HEADER = "X-Auth-Request-User"  # oauth2-proxy's, with --set-xauthrequest
EMAIL_HEADER = "X-Auth-Request-Email"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    # SQLite only: what is tested is the peer check, which no database takes part in.
    database_url = f"sqlite+aiosqlite:///{tmp_path}/header.db"
    upgrade(database_url)
    env = {
        "SWITCHBOARD_DATABASE_URL": database_url,
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "SWITCHBOARD_HOST": "127.0.0.1",
        "SWITCHBOARD_AUTH_MODE": "header",
        "SWITCHBOARD_TRUSTED_PROXIES": f"{PROXY}/32",
        "SWITCHBOARD_AUTH_USER_HEADER": USER_HEADER,
        "SWITCHBOARD_AUTH_EMAIL_HEADER": EMAIL_HEADER,
    }
    process = ServerProcess(env, tmp_path / "server.log")
    process.start()
    try:
        yield process
    finally:
        process.stop()


def client(server: ServerProcess, source: str, **headers: str) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(local_address=source)
    return httpx.AsyncClient(base_url=server.http, transport=transport, headers=headers, timeout=10)


async def test_the_proxy_s_user_header_signs_in(server: ServerProcess) -> None:
    headers = {USER_HEADER: "u-1234", EMAIL_HEADER: "grace@example.com"}
    async with client(server, PROXY, **headers) as proxy:
        me = await proxy.get("/api/me")
        again = await proxy.get("/api/me", headers={EMAIL_HEADER: "other@example.com"})
    assert me.status_code == 200, me.text
    assert me.json()["name"] == "grace@example.com"
    assert me.json()["auth_mode"] == "header"
    # The user is the header's subject; the e-mail only names a new user.
    assert again.json()["id"] == me.json()["id"]

    # The socket, through the proxy, with the header.
    url = f"ws://127.0.0.1:{server.port}/ws/chats/header-chat"
    async with connect(url, additional_headers=headers, local_addr=(PROXY, 0)) as socket:
        await socket.send(json.dumps({"type": "ping"}))
        assert json.loads(await socket.recv(decode=True))["type"] == "pong"


async def test_anyone_but_the_proxy_is_refused_even_with_the_header(
    server: ServerProcess,
) -> None:
    headers = {USER_HEADER: "u-1234"}
    async with client(server, "127.0.0.1", **headers) as direct:
        plain = await direct.get("/api/me")
        # uvicorn trusts X-Forwarded-For from 127.0.0.1 by default; serve turns that off.
        spoofed = await direct.get("/api/me", headers={"X-Forwarded-For": PROXY})
        metrics = await direct.get("/metrics")
    for response in (plain, spoofed, metrics):
        assert response.status_code == 401, response.text
        assert "only through its authenticating proxy" in response.headers["www-authenticate"]

    url = f"ws://127.0.0.1:{server.port}/ws/chats/header-chat"
    async with connect(url, additional_headers=headers) as socket:
        with pytest.raises(ConnectionClosed) as closed:
            await socket.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401

    # The proxy itself, without a user: it did not authenticate anyone.
    async with client(server, PROXY) as proxy:
        anonymous = await proxy.get("/api/me")
    assert anonymous.status_code == 401
    assert f"the authenticating proxy sent no {USER_HEADER}" in anonymous.json()["error"]["message"]


async def test_header_mode_without_the_proxy_addresses_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path}/x.db")
    monkeypatch.setenv("SWITCHBOARD_AUTH_MODE", "header")
    monkeypatch.delenv("SWITCHBOARD_TRUSTED_PROXIES", raising=False)
    assert await asyncio.to_thread(main, ["serve"]) == 2
    error = capsys.readouterr().err
    assert "SWITCHBOARD_TRUSTED_PROXIES" in error
    monkeypatch.setenv("SWITCHBOARD_TRUSTED_PROXIES", "proxy.internal")
    assert await asyncio.to_thread(main, ["serve"]) == 2
    assert "not an IP address or network" in capsys.readouterr().err
