"""The real surroundings a tool runs in under the kit: a migrated SQLite database with one
user and the real accounts store, the app's HTTP client and a demo state; and, for the
live-failure test, a loopback server that fails every request."""

from __future__ import annotations

import asyncio
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from cryptography.fernet import Fernet, MultiFernet

from connectors.context import ChatContext, DemoStore
from connectors.service_http import new_client
from connectors.settings import ConnectorSettings

__all__ = ["Harness", "closed_port", "failing_server", "fill_base_url", "harness", "secret_values"]

_TEMPLATE: dict[str, Path] = {}  # the migrated template database, made once per process


async def _template_database() -> Path:
    if "path" not in _TEMPLATE:
        from storage.migrate import upgrade

        directory = await asyncio.to_thread(tempfile.mkdtemp, prefix="switchboard-kit-")
        path = Path(directory) / "template.db"
        await asyncio.to_thread(upgrade, f"sqlite+aiosqlite:///{path}")
        _TEMPLATE["path"] = path
    return _TEMPLATE["path"]


@dataclass
class Harness:
    """A user with a real accounts store, the app's HTTP client and a demo state."""

    settings: ConnectorSettings
    accounts: Any  # storage.accounts.AccountRepository
    http: httpx.AsyncClient
    user_id: str
    demo: DemoStore

    def context(self, settings: ConnectorSettings | None = None) -> ChatContext:
        return ChatContext(
            user_id=self.user_id,
            chat_id="chat-contract",
            turn_id="turn-contract",
            settings=settings or self.settings,
            demo=self.demo.for_user(self.user_id),
            accounts=self.accounts,
            http=self.http,
        )


@asynccontextmanager
async def harness(settings: ConnectorSettings | None = None) -> AsyncIterator[Harness]:
    """A fresh copy of the migrated template database with one user."""
    from storage.accounts import AccountRepository
    from storage.engine import Database
    from storage.users import UserRepository

    # Files off the loop: the kit holds the loop to what it asks of the tools.
    directory = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="switchboard-kit-"))
    path = directory / "kit.db"
    await asyncio.to_thread(shutil.copyfile, await _template_database(), path)
    db = Database(f"sqlite+aiosqlite:///{path}")
    http = new_client()
    try:
        user, _token = await UserRepository(db).create_user("contract")
        fernet = MultiFernet([Fernet(Fernet.generate_key())])
        yield Harness(
            settings or ConnectorSettings(),
            AccountRepository(db, user.id, fernet),
            http,
            user.id,
            DemoStore(),
        )
    finally:
        await http.aclose()
        await db.dispose()
        await asyncio.to_thread(shutil.rmtree, directory, ignore_errors=True)


@asynccontextmanager
async def failing_server() -> AsyncIterator[str]:
    """A loopback HTTP server that answers every request with 503 and a JSON error."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            body = b'{"error": {"code": 503, "message": "service unavailable"}}'
            writer.write(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json"
                b"\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


def closed_port() -> str:
    """A loopback URL nothing listens on (the port was free a moment ago)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def fill_base_url(value: Any, base_url: str) -> Any:
    """``value`` with ``{base_url}`` replaced in every string, however deep."""
    if isinstance(value, str):
        return value.replace("{base_url}", base_url)
    if isinstance(value, dict):
        return {key: fill_base_url(item, base_url) for key, item in value.items()}
    if isinstance(value, list):
        return [fill_base_url(item, base_url) for item in value]
    return value


def secret_values(value: Any) -> list[str]:
    """String values long enough to be keys or tokens (URLs and short words excluded)."""
    if isinstance(value, str):
        return [value] if len(value) >= 8 and "://" not in value and " " not in value else []
    if isinstance(value, dict):
        return [s for item in value.values() for s in secret_values(item)]
    if isinstance(value, list | tuple):
        return [s for item in value for s in secret_values(item)]
    return []
