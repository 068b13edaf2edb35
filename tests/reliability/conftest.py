"""Real server processes (``switchboard serve``) for faults and scale-out, and Redis."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from app.settings import Settings
from tests.browser.proxy import DroppingProxy, dropping_proxy
from tests.fakes.tcp_proxy import TcpProxy

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("SWITCHBOARD_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """``switchboard serve`` in its own process, as an operator would run it."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.port = free_port()
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, chat_id: str, **query: Any) -> str:
        params = "&".join(f"{key}={value}" for key, value in query.items())
        return f"ws://127.0.0.1:{self.port}/ws/chats/{chat_id}" + (f"?{params}" if params else "")

    def start(self) -> None:
        env = {**os.environ, **self.env, "SWITCHBOARD_PORT": str(self.port)}
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--no-migrate"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited at start-up:\n{self.log()[-3000:]}")
            try:
                if httpx.get(f"{self.http}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server did not become ready:\n{self.log()[-3000:]}")

    def kill(self) -> None:
        """kill -9: no shutdown code runs at all."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    async def wait(self, within: float = 30) -> int:
        assert self.process is not None
        deadline = time.monotonic() + within
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise TimeoutError("server did not exit")
            await asyncio.sleep(0.05)
        return self.process.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Any]:
    """A factory of server processes sharing one data dir; all stopped after the test."""
    started: list[ServerProcess] = []

    def make(database_url: str, **settings: Any) -> ServerProcess:
        env = {
            "SWITCHBOARD_DATABASE_URL": database_url,
            "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
            "SWITCHBOARD_LOG_LEVEL": "INFO",
        }
        env.update({f"SWITCHBOARD_{key.upper()}": str(value) for key, value in settings.items()})
        server = ServerProcess(env, tmp_path / f"server-{len(started)}.log")
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def proxied_settings(
    make_settings: Callable[..., Settings], database_url: str, proxy: TcpProxy
) -> Callable[..., Settings]:
    """Settings whose database is reached through the module's ``proxy`` fixture (a
    ``TcpProxy`` the test cuts or stalls), for in-process servers (tests.ws.conftest)."""
    url = make_url(database_url).set(host="127.0.0.1", port=proxy.port)
    proxied = url.render_as_string(hide_password=False)

    def make(**overrides: Any) -> Settings:
        return make_settings(database_url=proxied, **overrides)

    return make


@pytest.fixture
async def redis_url() -> AsyncIterator[str]:
    import redis.asyncio as redis

    client = redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        await asyncio.wait_for(client.ping(), 3)
    except Exception as exc:
        reason = f"Redis not reachable at {REDIS_URL}: {type(exc).__name__}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: Redis tests must run)")
        pytest.skip(reason)
    finally:
        await client.aclose()
    yield REDIS_URL


@pytest.fixture
async def redis_proxy(redis_url: str) -> AsyncIterator[tuple[DroppingProxy, str]]:
    """A proxy in front of the test Redis that the test cuts (``refusing``, ``drop()``),
    and the Redis URL through it for the servers it starts."""
    async with dropping_proxy(int(redis_url.rsplit(":", 1)[1].split("/")[0])) as proxy:
        yield proxy, f"redis://127.0.0.1:{proxy.port}/0"


async def readiness(server: Any) -> dict[str, Any]:
    """A server process's ``/readyz`` body."""
    async with httpx.AsyncClient(base_url=server.http) as http:
        body: dict[str, Any] = (await http.get("/readyz")).json()
        return body
