"""Fixtures for the OpenAPI tests: ``switchboard serve`` in its own process (real uvicorn)
in local mode and in token mode, each on its own SQLite file, with a signed-in user's
headers for the token one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from storage.engine import Database
from storage.migrate import upgrade
from storage.users import UserRepository
from tests.support.clients import open_client
from tests.support.processes import ServerProcess

AUTH_MODES = ["local", "token"]
# Data for the generated calls to find (schemathesis follows GET /api/chats to the chat
# ids): a finished turn, and one paused for the person's approval of an email.
FINISHED_CHAT = "seeded-finished"
PAUSED_CHAT = "seeded-paused"
EMAIL = "find sushi in Boston and email the list to bob@example.com"


@dataclass
class ApiServer:
    mode: str
    process: ServerProcess
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def http(self) -> str:
        return self.process.http

    def log(self) -> str:
        return self.process.log()


async def _user_token(url: str) -> str:
    db = Database(url)
    try:
        _, token = await UserRepository(db).create_user("schemathesis")
    finally:
        await db.dispose()
    return token


async def seed(server: ApiServer, token: str | None) -> None:
    query = {"token": token} if token else {}
    async with open_client(server.process.ws_url(FINISHED_CHAT, **query)) as client:
        await client.turn("hello")
    async with open_client(server.process.ws_url(PAUSED_CHAT, **query)) as client:
        await client.send({"type": "prompt", "text": EMAIL})
        await client.until("approval_required", within=60)


def start_api_server(mode: str, root: Path) -> ApiServer:
    url = f"sqlite+aiosqlite:///{root / 'switchboard.db'}"
    upgrade(url)
    env = {
        "SWITCHBOARD_DATABASE_URL": url,
        "SWITCHBOARD_DATA_DIR": str(root / "data"),
        "SWITCHBOARD_SECRET_KEY": Fernet.generate_key().decode(),
        "SWITCHBOARD_AUTH_MODE": mode,
        "SWITCHBOARD_MODEL": "offline",
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
    }
    process = ServerProcess(env, root / "server.log")
    token = asyncio.run(_user_token(url)) if mode == "token" else None
    process.start()
    server = ApiServer(mode, process, {"Authorization": f"Bearer {token}"} if token else {})
    asyncio.run(seed(server, token))
    return server


@pytest.fixture(scope="module", params=AUTH_MODES)
def api_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ApiServer]:
    server = start_api_server(request.param, tmp_path_factory.mktemp(f"api-{request.param}"))
    try:
        yield server
    finally:
        server.process.stop()
