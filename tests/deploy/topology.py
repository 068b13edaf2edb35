"""compose.yaml's topology as plain processes: Debian's caddy with deploy/Caddyfile in front
of ``switchboard serve`` instances started through deploy/docker-entrypoint.sh, as the
image starts them. Only addresses differ from compose (the Caddyfile reads them from the
environment)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.processes import ROOT, ServerProcess, free_port
from tests.support.waiting import wait_until

CADDYFILE = ROOT / "deploy" / "Caddyfile"
ENTRYPOINT = ROOT / "deploy" / "docker-entrypoint.sh"
# Caddy's start (a few hundred ms) under a generous deadline for a loaded machine.
START_DEADLINE = 60.0


def caddy_binary() -> str | None:
    return shutil.which("caddy")


def entrypoint_command(*args: str) -> list[str]:
    """``switchboard ARGS`` as the image runs it: through the entrypoint, which exports
    the ``*_FILE`` secrets, then execs (so the pid is the server's own)."""
    return ["sh", str(ENTRYPOINT), sys.executable, "-m", "app.cli", *args]


class Caddy:
    """``caddy run`` on deploy/Caddyfile, its state kept under ``home``."""

    def __init__(self, home: Path, upstreams: list[int]) -> None:
        self.home = home
        self.port = free_port()
        self.upstreams = upstreams
        self.log_path = home / "caddy.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def launch(self) -> subprocess.Popen[bytes]:
        binary = caddy_binary()
        assert binary is not None
        self.home.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.home / "data"),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "SWITCHBOARD_SITE": f"http://127.0.0.1:{self.port}",
            "SWITCHBOARD_UPSTREAMS": " ".join(f"127.0.0.1:{port}" for port in self.upstreams),
            "CADDY_ADMIN": "off",
        }
        with self.log_path.open("ab") as log:  # the child keeps its own copy
            self.process = subprocess.Popen(
                [binary, "run", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
                cwd=self.home,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self.process

    async def start(self) -> None:
        process = self.launch()

        async def listening() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"caddy exited at start-up:\n{self.log()[-3000:]}")
            try:
                async with httpx.AsyncClient(timeout=2) as http:
                    return (await http.get(f"{self.http}/readyz")).status_code == 200
            except httpx.HTTPError:
                return False

        await wait_until(listening, what="caddy to proxy /readyz", within=START_DEADLINE)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


async def refuses_connections(port: int) -> bool:
    """True once nothing accepts a connection on ``port`` (a stopped or draining server:
    the drain closes the listening socket first)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 2)
    except (OSError, TimeoutError):
        return True
    writer.close()
    return False


async def start_all(servers: list[ServerProcess]) -> None:
    """Start servers side by side (each ``start`` polls its ``/readyz``)."""
    await asyncio.gather(*(asyncio.to_thread(server.start) for server in servers))


def dockerfile_healthcheck() -> list[str]:
    """The exec-form command of the Dockerfile's HEALTHCHECK, as Docker would run it."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    [line] = [line for line in text.splitlines() if line.startswith("HEALTHCHECK ")]
    command: list[str] = json.loads(line[line.index(" CMD ") + len(" CMD ") :])
    return command


async def healthcheck_passes(port: int) -> bool:
    """Whether the image's health check, run here, calls the instance on ``port`` healthy."""
    command = dockerfile_healthcheck()
    process = await asyncio.create_subprocess_exec(
        sys.executable if command[0] == "python" else command[0],
        *command[1:],
        env={**os.environ, "SWITCHBOARD_PORT": str(port)},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    return await asyncio.wait_for(process.wait(), 30) == 0
