"""PostgreSQL hanging (not refusing) under a running server.

A hang is the harder outage: nothing fails, every read just waits. The app reaches the
shared PostgreSQL through a ``HangingProxy``; ``hang()`` stops it moving bytes while every
connection stays open and new ones are accepted, as when the database host stops answering.

What the server must do (issue 15): ``/readyz`` answers 503 within its own timeout, however
long the driver takes to give up on the probe it abandoned (it took 5 s of 3: ``wait_for``
waited for SQLAlchemy's graceful close of the hung connection), and nothing the abandoned
probe leaves behind is logged as "Task exception was never retrieved" (that close, shielded,
when the probe was cancelled a second time, by the ping's own timeout).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import AsyncIterator, Callable

import pytest
from sqlalchemy.engine import make_url

from app.main import READY_TIMEOUT
from app.settings import Settings
from tests.fakes.tcp_proxy import TcpProxy
from tests.support.logs import capture_logs
from tests.support.servers import LiveServer, serve
from tests.support.waiting import wait_until

pytestmark = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)

# How much later than its timeout /readyz may answer: the event loop's own latency, not
# the driver's.
MARGIN = 1.5


class HangingProxy(TcpProxy):
    """A ``TcpProxy`` that can hang: ``hang()`` stops every byte, both ways, on the open
    connections and on those accepted afterwards, and closes none of them."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        super().__init__(upstream_host, upstream_port)
        self._flowing = asyncio.Event()
        self._flowing.set()

    def hang(self) -> None:
        self._flowing.clear()
        for writer in self._writers:
            writer.transport.pause_reading()

    async def stop(self) -> None:
        self._flowing.set()  # the connections accepted while hung end with the rest
        await super().stop()

    async def _serve(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        # Accepted (the client's connect succeeds) and then never answered.
        await self._flowing.wait()
        if not self.running:
            client_writer.transport.abort()
            return
        await super()._serve(client_reader, client_writer)


@pytest.fixture
async def proxy(database_url: str) -> AsyncIterator[HangingProxy]:
    url = make_url(database_url)
    async with HangingProxy(url.host or "127.0.0.1", url.port or 5432) as running:
        yield running


async def timed_ready_status(live: LiveServer) -> tuple[int, float]:
    async with live.client() as http:
        started = time.monotonic()
        status = (await http.get("/readyz", timeout=READY_TIMEOUT + 30)).status_code
        return status, time.monotonic() - started


async def test_readyz_answers_within_its_timeout_while_the_database_hangs(
    proxied_settings: Callable[..., Settings], proxy: HangingProxy
) -> None:
    async with serve(proxied_settings()) as live:
        with capture_logs(logging.WARNING) as logs:
            assert (await timed_ready_status(live))[0] == 200  # a pooled connection now
            before = asyncio.all_tasks()
            proxy.hang()
            # Twice: the pooled connection's pre-ping hangs, then a new connection does.
            for _ in range(2):
                status, took = await timed_ready_status(live)
                assert status == 503
                assert took < READY_TIMEOUT + MARGIN, f"/readyz took {took:.1f} s"
            await proxy.stop()  # the hung connections are reset: what waits on them ends
            await wait_until(
                lambda: not asyncio.all_tasks() - before,
                what="every task started during the hang to end",
            )
            gc.collect()  # asyncio reports an unretrieved exception when the task is freed
        never_retrieved = [r for r in logs.records if "never retrieved" in r.getMessage()]
        assert not never_retrieved, logs.describe(never_retrieved)
