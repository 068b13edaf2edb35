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
from tests.support.processes import ServerProcess

AUTH_MODES = ["local", "token"]


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
    headers = {}
    if mode == "token":
        headers["Authorization"] = f"Bearer {asyncio.run(_user_token(url))}"
    process.start()
    return ApiServer(mode, process, headers)


@pytest.fixture(scope="module", params=AUTH_MODES)
def api_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ApiServer]:
    server = start_api_server(request.param, tmp_path_factory.mktemp(f"api-{request.param}"))
    try:
        yield server
    finally:
        server.process.stop()
