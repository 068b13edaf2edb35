"""What every benchmark shares: servers in their own processes, process stats, statistics.

Servers are real ``switchboard serve`` processes (or ``bench.servers`` for the two
baselines that need another app) on a free loopback port. CPU time and RSS come from
``/proc``, so they are the server's own, not the load generator's.
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "bench" / "results"
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
PROMPT = "find sushi in Boston and email the list to bob@example.com"
START_TIMEOUT = 60.0
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


# ----------------------------------------------------------------------------- statistics


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1); small samples give their max for p99."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(values),
        "p90": percentile(values, 0.9),
        "p99": percentile(values, 0.99),
        "n": len(values),
    }


# ----------------------------------------------------------------------------- processes


def raise_fd_limit(wanted: int = 65_536) -> int:
    """Raise this process's open-file limit (children inherit it); returns the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(wanted, hard) if hard != resource.RLIM_INFINITY else wanted
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stat_cpu_seconds(stat: Path) -> float:
    """utime + stime of a ``/proc`` stat file (a process's or a thread's), in seconds."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    return _stat_cpu_seconds(Path(f"/proc/{pid}/stat"))


def loop_thread_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process's main thread (a server's event loop) so far;
    ``cpu_seconds`` less this is what its other threads (SQLite's writer) have used."""
    return _stat_cpu_seconds(Path(f"/proc/{pid}/task/{pid}/stat"))


def rss_bytes(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE_SIZE


@dataclass
class Server:
    """A server process on ``port``; ``stop()`` ends it (SIGTERM, then SIGKILL)."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, chat_id: str) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/chats/{chat_id}"

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def loop_thread_cpu_seconds(self) -> float:
        return loop_thread_cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"server exited with {process.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"server did not listen on {port} within {START_TIMEOUT:.0f} s")


def start_process(
    args: Sequence[str], port: int, env: dict[str, str], log: Path, *, own_session: bool = False
) -> Server:
    """``own_session``: a session of its own, so Linux's autogroup scheduling gives it a
    share of the cores of its own instead of one shared with the benchmark's processes
    (as a separate host or container would have)."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            list(args),
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=own_session,
        )
    try:
        _wait_listening(process, port, log)
    except BaseException:
        if process.poll() is None:
            process.kill()
            process.wait(5)
        raise
    return Server(process, port, log)


def switchboard_env(database_url: str, data_dir: Path, **settings: Any) -> dict[str, str]:
    env = {
        "SWITCHBOARD_DATABASE_URL": database_url,
        "SWITCHBOARD_DATA_DIR": str(data_dir),
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
        # Every benchmark socket is the one local user: lift the per-user limits.
        "SWITCHBOARD_MAX_CONNECTIONS_PER_USER": "1000000",
        "SWITCHBOARD_PROMPTS_PER_MINUTE": "1000000",
        "SWITCHBOARD_MAX_TURNS_PER_USER": "1000000",
        # The bench prompt sends an email, which by default waits for a person's approval:
        # the benchmarks measure turns, not people (bench/approval.py measures approvals).
        "SWITCHBOARD_APPROVALS": "off",
    }
    env.update({f"SWITCHBOARD_{name.upper()}": str(value) for name, value in settings.items()})
    return env


def start_switchboard(
    database_url: str, data_dir: Path, *, own_session: bool = False, **settings: Any
) -> Server:
    """``switchboard serve`` (the real command, one uvicorn worker) on a free port."""
    port = free_port()
    env = switchboard_env(database_url, data_dir, **settings)
    return start_process(
        [sys.executable, "-m", "app.cli", "serve", "--no-migrate", "--port", str(port)],
        port,
        env,
        data_dir / f"server-{port}.log",
        own_session=own_session,
    )


# ----------------------------------------------------------------------------- databases


def sqlite_url(directory: Path) -> str:
    return f"sqlite+aiosqlite:///{directory}/bench.db"


async def postgres_reachable(url: str = POSTGRES_URL) -> bool:
    import asyncpg

    try:
        connection = await asyncio.wait_for(asyncpg.connect(_asyncpg_dsn(url)), 3)
    except Exception:
        return False
    await connection.close()
    return True


def _asyncpg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1).split("?", 1)[0]


@asynccontextmanager
async def postgres_schema(url: str = POSTGRES_URL) -> AsyncIterator[str]:
    """A fresh, migrated schema of ``url`` (as a ``?schema=`` URL); dropped afterwards."""
    import asyncpg

    from storage.migrate import upgrade

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    schema_url = f"{url}?schema={schema}"
    try:
        await asyncio.to_thread(upgrade, schema_url)
        yield schema_url
    finally:
        connection = await asyncpg.connect(_asyncpg_dsn(url))
        try:
            await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await connection.close()


async def migrate(url: str) -> None:
    from storage.migrate import upgrade

    await asyncio.to_thread(upgrade, url)


@contextmanager
def quiet_logs() -> Iterator[None]:
    """Alembic logs every migration at INFO; the bench output is the table."""
    import logging

    previous = logging.getLogger().level
    logging.getLogger().setLevel(logging.WARNING)
    try:
        yield
    finally:
        logging.getLogger().setLevel(previous)


def use_uvloop() -> None:
    """The server runs on uvloop (uvicorn picks it); so do the clients and the baselines."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] brings it
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
