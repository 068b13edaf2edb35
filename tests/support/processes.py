"""``switchboard serve`` in its own process, as an operator runs it, for the tests that kill,
stop or multiply servers (faults, scale-out) or need the command's own settings."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.servers import LoopbackUrls
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]  # the repository: the servers' working directory
# A condition's deadline, not a guess at start-up time: generous, because on a machine
# at ten times its cores (a loaded run with other suites beside it) importing the app
# alone took over 30 s. A healthy start answers /readyz in about a second.
START_DEADLINE = 90.0


def free_port() -> int:
    """A loopback port nothing listens on now (for a process that binds it itself)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess(LoopbackUrls):
    """``switchboard serve`` in its own process, as an operator would run it."""

    def __init__(
        self,
        env: dict[str, str],
        log_path: Path,
        cwd: Path = ROOT,
        command: list[str] | None = None,
    ) -> None:
        self.env = env
        self.cwd = cwd  # `python -m` imports the app from here
        # Default: this checkout's app; an installed package's `switchboard serve` otherwise.
        self.command = command or [sys.executable, "-m", "app.cli", "serve", "--no-migrate"]
        self.port = free_port()
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the process and return once its ``/readyz`` answers 200."""
        env = {**os.environ, **self.env, "SWITCHBOARD_PORT": str(self.port)}
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        # A poll of the condition (synchronous: tests start servers outside the loop's
        # awaits), not a guess at how long start-up takes.
        deadline = time.monotonic() + START_DEADLINE
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
        """The exit status, once the process has exited."""
        process = self.process
        assert process is not None
        await wait_until(
            lambda: process.poll() is not None, what="the server to exit", within=within
        )
        return process.returncode

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


async def readiness(server: Any) -> dict[str, Any]:
    """A server process's ``/readyz`` body."""
    async with httpx.AsyncClient(base_url=server.http) as http:
        body: dict[str, Any] = (await http.get("/readyz")).json()
        return body
