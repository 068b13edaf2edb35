"""``switchboard serve`` negotiates permessage-deflate only when the setting asks for it.

The client (websockets) offers the extension on every handshake, as browsers do; what the
server answers in ``Sec-WebSocket-Extensions`` is what the socket then runs with.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from tests.support.processes import ServerProcess


@pytest.mark.parametrize(
    ("setting", "negotiated"), [(None, False), ("false", False), ("true", True)]
)
async def test_serve_compresses_only_when_configured(
    database_url: str, tmp_path: Path, setting: str | None, negotiated: bool
) -> None:
    if not database_url.startswith("sqlite"):
        pytest.skip("a socket-layer setting: one engine is enough")
    env = {
        "SWITCHBOARD_DATABASE_URL": database_url,
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
    }
    if setting is not None:
        env["SWITCHBOARD_WS_PER_MESSAGE_DEFLATE"] = setting
    server = ServerProcess(env, tmp_path / "server.log")
    server.start()
    try:
        async with connect(server.ws_url("deflate"), compression="deflate") as ws:
            answered = ws.response.headers.get("Sec-WebSocket-Extensions") or ""
            await ws.send('{"type":"ping"}')
            async with asyncio.timeout(30):  # the socket works either way
                while '"pong"' not in str(await ws.recv()):
                    pass
    finally:
        server.stop()
    assert ("permessage-deflate" in answered) is negotiated, answered
