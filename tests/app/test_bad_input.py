"""Bad input and a missing database, over real sockets (issue 15): never a 500.

- a socket opened while the database is down is accepted, then closed 1013 "try again
  later" with a reason that says so (it used to be an HTTP 500 from the error handler);
- a ``Host`` header that is not a valid host (``[``, ``[::1``, ``a[b]``) is refused like
  any other foreign host (it used to raise in ``check_host``), and so is such an
  ``Origin``;
- JSON bodies nested deeper than any request needs are a 400 (the decoder used to recurse
  into a RecursionError);
- U+0000, which PostgreSQL cannot store, is refused at the edge with a 400 (or an
  ``invalid_request`` event) naming the field, on every engine alike.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy.engine import make_url
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from app.settings import Settings
from storage.users import UserRepository
from tests.fakes.tcp_proxy import TcpProxy
from tests.support.clients import open_client
from tests.support.logs import capture_logs
from tests.support.servers import LiveServer, serve

SQLITE_ONLY = pytest.mark.parametrize("_migrated_database", ["sqlite"], indirect=True)
POSTGRESQL_ONLY = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)
CLOSE_TRY_AGAIN_LATER = 1013
HANDSHAKE = (
    "GET /ws/chats/{chat_id} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\n\r\n"
)
BAD_HOSTS = ["[", "[::1", "a[b]", "]", "[::1]x:80"]


@dataclass
class RawAnswer:
    status: int
    body: bytes
    close: tuple[int, str] | None = None  # a WebSocket close frame's code and reason

    def json(self) -> Any:
        return json.loads(self.body)


async def raw_exchange(live: LiveServer, request: str, *, websocket: bool = False) -> RawAnswer:
    """Send ``request`` byte for byte (clients will not send a malformed Host) and read
    the answer: an HTTP response, or after a 101 the server's first frame."""
    reader, writer = await asyncio.open_connection("127.0.0.1", live.port)
    try:
        writer.write(request.encode("latin-1"))
        await writer.drain()
        async with asyncio.timeout(10):
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            if websocket and status == 101:
                opcode, size = await reader.readexactly(2)
                payload = await reader.readexactly(size & 0x7F)  # control frames are short
                assert opcode & 0x0F == 0x8, "the first frame should be a close"
                code = int.from_bytes(payload[:2], "big")
                return RawAnswer(status, b"", (code, payload[2:].decode()))
            return RawAnswer(status, await reader.read())
    finally:
        writer.close()


@pytest.fixture
async def local(make_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    async with serve(make_settings(auth_mode="local")) as live:
        yield live


# ----------------------------------------------------------------------------- outage


@POSTGRESQL_ONLY
@pytest.mark.parametrize("auth_mode", ["local", "token"])
async def test_socket_opened_while_the_database_is_down_is_closed_try_again_later(
    make_settings: Callable[..., Settings], database_url: str, auth_mode: str
) -> None:
    url = make_url(database_url)
    async with TcpProxy(url.host or "127.0.0.1", url.port or 5432) as proxy:
        proxied = url.set(host="127.0.0.1", port=proxy.port)
        settings = make_settings(
            database_url=proxied.render_as_string(hide_password=False), auth_mode=auth_mode
        )
        async with serve(settings) as live:
            # Token mode looks the token up (the cache is empty), local mode the chat.
            _, token = await UserRepository(live.services.db).create_user("ada")
            query = {"token": token} if auth_mode == "token" else {}
            with capture_logs(logging.WARNING) as logs:
                await proxy.stop()
                chat_id = uuid.uuid4().hex
                async with connect(live.ws_url(chat_id, **query), open_timeout=10) as ws:
                    with pytest.raises(ConnectionClosed) as closed:
                        await asyncio.wait_for(ws.recv(), 15)
                await proxy.start()
                async with open_client(live.ws_url(chat_id, **query)) as client:
                    await client.send({"type": "ping"})
                    assert (await client.recv())["type"] == "pong"
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == CLOSE_TRY_AGAIN_LATER
    assert "database is unavailable" in closed.value.rcvd.reason
    assert not logs.errors(), logs.describe(logs.errors())
    assert any("database unavailable" in record.getMessage() for record in logs.records)


# ----------------------------------------------------------------------------- Host header


@SQLITE_ONLY
@pytest.mark.parametrize("host", BAD_HOSTS)
async def test_a_malformed_host_is_refused_over_http(local: LiveServer, host: str) -> None:
    answer = await raw_exchange(
        local, f"GET /api/chats HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    assert answer.status == 403, answer.body
    assert answer.json()["error"]["code"] == "forbidden"


@SQLITE_ONLY
@pytest.mark.parametrize("host", BAD_HOSTS)
async def test_a_malformed_host_is_refused_on_a_socket(local: LiveServer, host: str) -> None:
    answer = await raw_exchange(local, HANDSHAKE.format(chat_id="c1", host=host), websocket=True)
    assert answer.status == 101, answer.body
    assert answer.close == (4403, "origin not allowed")


@SQLITE_ONLY
@pytest.mark.parametrize("origin", ["http://[", "http://[::1", "http://a[b]"])
async def test_a_malformed_origin_is_refused(local: LiveServer, origin: str) -> None:
    answer = await raw_exchange(
        local,
        "GET /api/chats HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Origin: {origin}\r\nConnection: close\r\n\r\n",
    )
    assert answer.status == 403, answer.body
    assert answer.json()["error"]["code"] == "forbidden"


@SQLITE_ONLY
async def test_a_loopback_host_still_works(local: LiveServer) -> None:
    for host in ("127.0.0.1", f"[::1]:{local.port}", "localhost"):
        answer = await raw_exchange(
            local, f"GET /api/chats HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        assert answer.status == 200, (host, answer.body)


# ----------------------------------------------------------------------------- deep JSON

JSON_ENDPOINTS = [
    "/api/chats/c1/approvals/a1",
    "/api/connectors/plaid/exchange",
    "/api/connectors/plaid/finish",
]


@SQLITE_ONLY
@pytest.mark.parametrize("path", JSON_ENDPOINTS)
@pytest.mark.parametrize(
    "body",
    [b"[" * 5000, b'{"a":' * 5000, b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}"],
    ids=["arrays", "objects", "closed"],
)
async def test_deeply_nested_json_bodies_are_a_400(
    local: LiveServer, path: str, body: bytes
) -> None:
    async with local.client() as http:
        answer = await http.post(path, content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_request" and "nested" in error["message"]


# ----------------------------------------------------------------------------- NUL


async def test_nul_in_a_rest_body_is_a_400_naming_the_field(local: LiveServer) -> None:
    body = {"public_token": "public-sandbox-1", "institution": {"name": "Bank\u0000"}}
    async with local.client() as http:
        answer = await http.post("/api/connectors/plaid/exchange", json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["message"].startswith("institution.name") and "NUL" in error["message"]


async def test_nul_in_an_approval_frame_is_refused_before_the_database(local: LiveServer) -> None:
    chat_id = uuid.uuid4().hex
    with capture_logs(logging.WARNING) as logs:
        async with open_client(local.ws_url(chat_id)) as client:
            await client.send({"type": "approval", "approval_id": "a\u0000", "decision": "approve"})
            error = await client.recv()
    assert error["type"] == "error" and error["code"] == "invalid_request", error
    assert error["message"] == "approval.approval_id must not contain NUL (U+0000) characters"
    assert not logs.errors(), logs.describe(logs.errors())
