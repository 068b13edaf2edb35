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


# What `switchboard serve` says when its port is taken (app/cli.py).
PORT_TAKEN = "is already in use"
PORT_ATTEMPTS = 3


def listens(pids: set[int], port: int) -> bool:
    """Does one of the processes ``pids`` listen on TCP ``port``? (Linux's /proc; where
    there is none, nothing can be told, and a ready answer is taken as its own.)"""
    if not os.path.exists("/proc/net/tcp"):
        return True
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{inode}]")
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return True
            except OSError:
                continue
    return False


def family_of(pid: int) -> set[int]:
    """``pid`` and its descendants (a command may run the server as a child)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    # "pid (comm) state ppid ...": comm may hold spaces, so split after it.
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    family, grew = {pid}, True
    while grew:
        children = {child for child, parent in parents.items() if parent in family}
        grew = not children <= family
        family |= children
    return family


class ServerExited(RuntimeError):
    """The server process exited before it was ready."""


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
        self.started = False  # once it has served, a restart must keep its port

    def start(self) -> None:
        """Start the process and return once its ``/readyz`` answers 200.

        Its first start takes another free port if the one picked was taken meanwhile
        (another suite on the machine bound it between ``free_port`` and the server's
        bind); a restart keeps its port, which its clients know, as does a server whose
        settings already name it.
        """
        for _ in range(PORT_ATTEMPTS):
            started_at = self.log_path.stat().st_size if self.log_path.exists() else 0
            try:
                self._start()
                self.started = True
                return
            except ServerExited:
                lost_port = PORT_TAKEN in self.log()[started_at:]
                if self.started or not lost_port or self._port_given_out():
                    raise
                self.port = free_port()
        raise RuntimeError(f"no free port after {PORT_ATTEMPTS} attempts:\n{self.log()[-3000:]}")

    def _port_given_out(self) -> bool:
        """Does its environment already name its port (a callback URL)? Then it keeps it."""
        return any(str(self.port) in value for value in self.env.values())

    def _start(self) -> None:
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
                raise ServerExited(f"server exited at start-up:\n{self.log()[-3000:]}")
            try:
                ready = httpx.get(f"{self.http}/readyz", timeout=1).status_code == 200
            except httpx.HTTPError:
                ready = False
            # Another suite's server may hold the port while this one fails to bind it:
            # only its own listening socket counts (then this one exits, and is retried).
            if ready and listens(family_of(self.process.pid), self.port):
                return
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
