"""Real server processes (``switchboard serve``, ``tests.support.processes``) for faults and
scale-out, and Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from app.settings import Settings
from tests.fakes.tcp_proxy import TcpProxy
from tests.support.processes import ServerProcess
from tests.support.proxies import DroppingProxy, dropping_proxy
from tests.support.redis_server import reachable_redis


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
    ``TcpProxy`` the test cuts or stalls), for in-process servers (tests.support.servers)."""
    url = make_url(database_url).set(host="127.0.0.1", port=proxy.port)
    proxied = url.render_as_string(hide_password=False)

    def make(**overrides: Any) -> Settings:
        return make_settings(database_url=proxied, **overrides)

    return make


@pytest.fixture
async def redis_url() -> str:
    return await reachable_redis()


@pytest.fixture
async def redis_proxy(redis_url: str) -> AsyncIterator[tuple[DroppingProxy, str]]:
    """A proxy in front of the test Redis that the test cuts (``refusing``, ``drop()``),
    and the Redis URL through it for the servers it starts."""
    async with dropping_proxy(int(redis_url.rsplit(":", 1)[1].split("/")[0])) as proxy:
        yield proxy, f"redis://127.0.0.1:{proxy.port}/0"
