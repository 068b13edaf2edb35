"""4. Idle sockets: 10,000 open sockets, each on its own chat, doing nothing; server RSS.

The file-descriptor limit is raised for this process and its children (the server and
the client processes each hold 10,000 sockets). Every socket is opened through the real
endpoint (authentication, the chat row, a hub subscription), then left idle; the
server's RSS is read from ``/proc`` once they are all open, and every socket must still
answer a ``ping`` afterwards (an idle socket the server dropped would not be "open").
Run twice: with permessage-deflate off (the default) and on
(``SWITCHBOARD_WS_PER_MESSAGE_DEFLATE``); the clients offer it, as browsers do.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bench.clients import ClientPool
from bench.common import migrate, raise_fd_limit, sqlite_url, start_switchboard

SOCKETS = 10_000
PROCESSES = 4
SETTLE_SECONDS = 2.0


async def run(
    work_dir: Path, *, sockets: int = SOCKETS, processes: int = PROCESSES
) -> list[dict[str, Any]]:
    return [
        await run_one(work_dir, sockets=sockets, processes=processes, deflate=deflate)
        for deflate in (False, True)
    ]


async def run_one(work_dir: Path, *, sockets: int, processes: int, deflate: bool) -> dict[str, Any]:
    limit = raise_fd_limit(sockets * 2 + 1024)
    if limit < sockets + 256:
        raise RuntimeError(
            f"the open-file limit is {limit}; {sockets} sockets need more "
            "(raise the hard limit: ulimit -Hn)"
        )
    directory = work_dir / f"idle-deflate-{'on' if deflate else 'off'}"
    directory.mkdir()
    url = sqlite_url(directory)
    await migrate(url)
    server = start_switchboard(url, directory, ws_per_message_deflate=str(deflate).lower())
    pool: ClientPool | None = None
    try:
        rss_before = server.rss_bytes()
        started = time.perf_counter()
        pool = ClientPool(processes, server.port, [f"idle{i}" for i in range(sockets)])
        opened, failures, failed = await asyncio.to_thread(pool.wait_ready, 600.0)
        open_seconds = time.perf_counter() - started
        await asyncio.sleep(SETTLE_SECONDS)
        rss_open = server.rss_bytes()
        alive, lost, ping_seconds = await asyncio.to_thread(pool.ping, 300.0)
        rss_after_ping = server.rss_bytes()
    finally:
        if pool is not None:
            await asyncio.to_thread(pool.close)
        server.stop()
    return {
        "per_message_deflate": deflate,
        "sockets": sockets,
        "opened": opened,
        "failed_to_open": failed,
        "failures": failures[:5],
        "alive_after_idle": alive,
        "lost": lost[:5],
        "open_seconds": open_seconds,
        "ping_all_seconds": ping_seconds,
        "server_rss_before_mib": rss_before / 2**20,
        "server_rss_mib": rss_open / 2**20,
        "server_rss_after_ping_mib": rss_after_ping / 2**20,
        "rss_per_socket_kib": (rss_open - rss_before) / max(1, opened) / 1024,
    }
