"""MCP servers for the tests: ``tests/mcp/notes_server.py`` over stdio (Switchboard starts
it) or over streamable HTTP (its own process on a free loopback port), the settings entries
that point at them, and a lifespan hook that runs turns with a scripted SDK model."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from agents.models.interface import Model

from tests.support.processes import free_port
from tests.support.servers import LiveServer, serve
from tests.support.waiting import wait_until

NOTES_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "notes_server.py"
TOKEN = "notes-token-5b8e2f9a71c4"


def stdio_entry(pid_file: Path, **extra: Any) -> dict[str, Any]:
    """A ``SWITCHBOARD_MCP_SERVERS`` entry that starts the notes server over stdio."""
    return {
        "command": sys.executable,
        "args": [str(NOTES_SERVER), "stdio"],
        "env": {"NOTES_PID_FILE": str(pid_file), "NOTES_SECRET": "s3cret-for-notes"},
        **extra,
    }


def python_without_mcp(bin_dir: Path) -> Path:
    """A ``python`` in ``bin_dir`` that cannot import ``mcp``, as the PATH's python is
    under ``make run``: this interpreter without its site-packages."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    python.chmod(0o755)
    return python


def pid_in(pid_file: Path) -> int | None:
    """The process id a notes server wrote, once it has."""
    try:
        return int(pid_file.read_text())
    except (FileNotFoundError, ValueError):
        return None


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class HttpNotesServer:
    """The notes server over streamable HTTP, in its own process, requiring ``TOKEN``."""

    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def entry(self, token: str = TOKEN, **extra: Any) -> dict[str, Any]:
        return {"url": self.url, "headers": {"Authorization": f"Bearer {token}"}, **extra}

    def spawn(self) -> subprocess.Popen[bytes]:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(NOTES_SERVER), "http", str(self.port)],
                env={**os.environ, "NOTES_TOKEN": TOKEN},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self.process

    async def start(self) -> None:
        """Start it (again, on the same port) and return once it answers HTTP."""
        process = self.spawn()

        async def answers() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"the notes server exited:\n{self.log_path.read_text()}")
            try:
                async with httpx.AsyncClient(timeout=2) as http:
                    await http.get(self.url)  # 401 without the token: it is up
            except httpx.TransportError:
                return False
            return True

        await wait_until(answers, what="the HTTP notes server to answer")

    def kill(self) -> None:
        """kill -9, as a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@asynccontextmanager
async def http_notes_server(log_path: Path) -> AsyncIterator[HttpNotesServer]:
    server = HttpNotesServer(log_path)
    await server.start()
    try:
        yield server
    finally:
        server.stop()


def scripted_everywhere(model: Model) -> Any:
    """A lifespan hook that runs every agent of the real orchestrator (hand-offs, connector
    agents, their tools, approvals) on ``model``, the SDK's ``ScriptedModel``."""

    @asynccontextmanager
    async def hook(services: Any) -> AsyncIterator[None]:
        engine = services.turns.engine
        engine.run_config = dataclasses.replace(
            engine.run_config, model=model, tracing_disabled=True
        )
        yield

    return hook


@dataclasses.dataclass
class Notes:
    """The notes server a test runs against, whichever the transport."""

    transport: str
    entry: dict[str, Any]
    pid_file: Path
    http: HttpNotesServer | None = None

    def pid(self) -> int | None:
        if self.http is not None:
            return self.http.process.pid if self.http.process is not None else None
        return pid_in(self.pid_file)

    def kill(self) -> None:
        """kill -9 the server's process (a crash)."""
        if self.http is not None:
            self.http.kill()
            return
        pid = self.pid()
        assert pid is not None, "the notes server has not started"
        os.kill(pid, signal.SIGKILL)


@asynccontextmanager
async def notes_server(transport: str, tmp_path: Path, **extra: Any) -> AsyncIterator[Notes]:
    """The notes server over ``transport`` (``stdio``: Switchboard will start it)."""
    pid_file = tmp_path / "notes.pid"
    if transport == "stdio":
        yield Notes(transport, stdio_entry(pid_file, **extra), pid_file)
        return
    async with http_notes_server(tmp_path / "notes-http.log") as http:
        yield Notes(transport, http.entry(**extra), pid_file, http)


@asynccontextmanager
async def mcp_app(
    make_settings: Any,
    servers: dict[str, dict[str, Any]],
    *,
    model: Model | None = None,
    **overrides: Any,
) -> AsyncIterator[LiveServer]:
    """The real app with ``servers`` as ``SWITCHBOARD_MCP_SERVERS``; turns run on the
    offline demo model, or on ``model`` (a ``ScriptedModel``) when given."""
    settings = make_settings(mcp_servers=json.dumps(servers), **overrides)
    hooks = (scripted_everywhere(model),) if model is not None else ()
    async with serve(settings, hooks=hooks) as live:
        yield live
