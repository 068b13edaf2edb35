"""The test servers' own start-up (tests.support.processes): a port taken between
``free_port`` and the server's bind — by another suite's server, which even answers
``/readyz`` — is never mistaken for this server being ready."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.support.processes import ServerProcess


class Ready(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def squatter() -> Iterator[ThreadingHTTPServer]:
    """Someone else's server on a loopback port, answering 200 to anything."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Ready)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


# The start-up's own behaviour: one engine is enough.
@pytest.mark.parametrize("_migrated_database", ["sqlite"], indirect=True)
async def test_a_port_someone_else_serves_is_not_taken_for_this_server(
    squatter: ThreadingHTTPServer, tmp_path: Path, database_url: str
) -> None:
    env = {"SWITCHBOARD_DATABASE_URL": database_url, "SWITCHBOARD_DATA_DIR": str(tmp_path)}
    server = ServerProcess(env, tmp_path / "server.log")
    taken = server.port = squatter.server_address[1]
    try:
        await asyncio.to_thread(server.start)
        assert server.port != taken
        assert "already in use" in server.log()  # its first try, on the squatter's port
        async with httpx.AsyncClient(base_url=server.http) as http:
            # Switchboard's own answer, which the squatter (an empty 200) does not give.
            assert (await http.get("/readyz")).json()["database"] == "ok"
    finally:
        server.stop()
