"""compose.yaml's topology, as processes: PostgreSQL, Redis, two ``switchboard serve``
instances and Caddy with deploy/Caddyfile in front. A turn goes through the proxy over a
real WebSocket, is resumed through the proxy on the other instance while the first one
drains, and the pair survives one instance's restart.

No container runtime runs here, so the image's own start-up is reproduced instead: the
secrets reach the servers as files through deploy/docker-entrypoint.sh, migrations run
once (compose's ``migrate`` service), then the instances start.

One test, not several: each server process takes seconds to start on a loaded machine,
and the steps build on each other (the restart needs an instance stopped by the drain).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis
from cryptography.fernet import Fernet
from sqlalchemy import select
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from storage.engine import Database
from storage.migrate import upgrade
from storage.models import Turn
from storage.users import UserRepository
from tests.deploy.topology import (
    Caddy,
    caddy_binary,
    entrypoint_command,
    healthcheck_passes,
    refuses_connections,
    start_all,
)
from tests.support.clients import Client
from tests.support.db import POSTGRES_URL, drop_schema, postgres_unreachable_reason
from tests.support.processes import ServerProcess
from tests.support.waiting import wait_until

# Its own Redis database: the keys of this topology never meet the other tests' (pub/sub
# channels are global, but they carry chat ids, which are fresh here).
REDIS_URL = os.environ.get("SWITCHBOARD_TEST_DEPLOY_REDIS_URL", "redis://127.0.0.1:6379/7")
# Two agents, two tools and a streamed answer, nothing that waits for an approval.
MULTI_AGENT = "find sushi in Boston and show my account balances"
SHORT = "what are my account balances"
EPHEMERAL = {"llm_response_delta", "pong"}
# A word every 0.15 s: the answer is still being written when the resume arrives, with
# seconds to spare on a loaded machine, and the whole test stays well under a minute.
DELTA_DELAY = "0.15"


def persisted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] not in EPHEMERAL]


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: the deploy topology test must run)")
    pytest.skip(reason)


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A fresh schema on the test PostgreSQL, dropped afterwards (not migrated: the
    topology's own ``migrate`` step does that)."""
    reason = await postgres_unreachable_reason()
    if reason is not None:
        unavailable(reason)
    schema = f"deploy_{secrets.token_hex(6)}"
    yield f"{POSTGRES_URL}?schema={schema}"
    await drop_schema(schema)


@pytest.fixture
async def redis_url() -> AsyncIterator[str]:
    client = redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        await client.ping()
    except Exception as exc:
        unavailable(f"Redis not reachable at {REDIS_URL}: {type(exc).__name__}")
    finally:
        await client.aclose()
    yield REDIS_URL


@pytest.fixture
def caddy_available() -> None:
    if caddy_binary() is None:
        unavailable("caddy is not installed (`make proxy-deps` installs Debian's)")


class Topology:
    def __init__(self, home: Path, database_url: str, redis_url: str) -> None:
        secrets_dir = home / "secrets"
        secrets_dir.mkdir(parents=True)
        # As compose mounts them: files, with the newline an editor leaves.
        (secrets_dir / "database_url").write_text(database_url + "\n")
        (secrets_dir / "secret_key").write_text(Fernet.generate_key().decode() + "\n")
        self.database_url = database_url
        self.env = {
            "SWITCHBOARD_DATABASE_URL_FILE": str(secrets_dir / "database_url"),
            "SWITCHBOARD_SECRET_KEY_FILE": str(secrets_dir / "secret_key"),
            "SWITCHBOARD_AUTH_MODE": "token",
            "SWITCHBOARD_REDIS_URL": redis_url,
            "SWITCHBOARD_DATA_DIR": str(home / "data"),
            "SWITCHBOARD_OFFLINE_DELTA_DELAY": DELTA_DELAY,
            # Long enough for a turn to end while its instance drains.
            "SWITCHBOARD_SHUTDOWN_GRACE_SECONDS": "60",
            "SWITCHBOARD_LOG_LEVEL": "INFO",
        }
        for name in ("SWITCHBOARD_DATABASE_URL", "SWITCHBOARD_SECRET_KEY"):
            os.environ.pop(name, None)  # the entrypoint refuses a variable set both ways
        self.instances = [
            ServerProcess(
                self.env,
                home / f"switchboard-{n}.log",
                command=entrypoint_command("serve", "--no-migrate"),
            )
            for n in (1, 2)
        ]
        self.proxy = Caddy(home / "caddy", [server.port for server in self.instances])
        self.token = ""

    async def runner_of(self, chat_id: str) -> ServerProcess:
        """The instance running the chat's turn, from the turn's lease in the database
        (``host:pid:…``)."""
        db = Database(self.database_url)
        try:

            async def runner() -> str | None:
                async with db.session() as session:
                    rows = await session.execute(
                        select(Turn.runner).where(Turn.chat_id == chat_id, Turn.runner.is_not(None))
                    )
                    return rows.scalars().first()

            found = await wait_until(runner, what=f"a runner for chat {chat_id}")
        finally:
            await db.dispose()
        pid = int(found.split(":")[-2])
        [server] = [s for s in self.instances if s.process and s.process.pid == pid]
        return server

    async def running_turns(self) -> int:
        db = Database(self.database_url)
        try:
            async with db.session() as session:
                rows = await session.execute(select(Turn.id).where(Turn.status == "running"))
                return len(rows.scalars().all())
        finally:
            await db.dispose()

    def other(self, server: ServerProcess) -> ServerProcess:
        [other] = [s for s in self.instances if s is not server]
        return other

    @asynccontextmanager
    async def socket(self, chat_id: str, **query: Any) -> AsyncIterator[Client]:
        """A chat socket through the proxy. Caddy holds a request while it looks for a
        live instance (lb_try_duration); a 502 after that is retried until the deadline."""
        params = "&".join(f"{key}={value}" for key, value in query.items())
        url = f"{self.proxy.ws}/ws/chats/{chat_id}" + (f"?{params}" if params else "")
        # A browser's Origin: accepted because the proxy keeps the Host it was addressed by.
        headers = {"Authorization": f"Bearer {self.token}", "Origin": self.proxy.http}

        async def opened() -> Any:
            try:
                return await connect(url, additional_headers=headers, open_timeout=30)
            except InvalidStatus as exc:
                if exc.response.status_code == 502:
                    return None
                raise

        connection = await wait_until(opened, what="a socket through the proxy", interval=0.5)
        try:
            yield Client(connection, auto_approve=True)
        finally:
            await connection.close()

    async def stored_events(self, chat_id: str) -> list[dict[str, Any]]:
        headers = {"Authorization": f"Bearer {self.token}"}
        async with httpx.AsyncClient(base_url=self.proxy.http, headers=headers, timeout=30) as http:
            events: list[dict[str, Any]] = (await http.get(f"/api/chats/{chat_id}/events")).json()[
                "events"
            ]
        return events

    def stop(self) -> None:
        self.proxy.stop()
        for server in self.instances:
            server.stop()


@pytest.fixture
async def topology(
    tmp_path: Path, postgres_url: str, redis_url: str, caddy_available: None
) -> AsyncIterator[Topology]:
    topology = Topology(tmp_path, postgres_url, redis_url)
    try:
        # compose: `migrate` once, then the instances and the proxy. In-process: the same
        # code as `switchboard migrate`, without another interpreter's start-up.
        await asyncio.to_thread(upgrade, postgres_url)
        db = Database(postgres_url)
        try:
            _, topology.token = await UserRepository(db).create_user("operator")
        finally:
            await db.dispose()
        await asyncio.gather(start_all(topology.instances), topology.proxy.start())
        yield topology
    finally:
        topology.stop()


async def test_a_turn_through_the_proxy_resumes_on_the_other_instance_and_survives_a_restart(
    topology: Topology,
) -> None:
    # 0. Server-sent events pass the proxy unbuffered: the first delta arrives while the
    # answer is still being written (a buffering proxy would hold it until the end).
    await sse_streams_through(topology)

    # 1. A turn through the proxy, over a real WebSocket.
    chat_id = uuid.uuid4().hex
    async with topology.socket(chat_id) as first_socket:
        await first_socket.send({"type": "prompt", "text": MULTI_AGENT})
        before = await first_socket.until("llm_response_delta", within=60)
        first = await topology.runner_of(chat_id)
        second = topology.other(first)

        # 2. The instance running it is stopped as `docker stop` would: SIGTERM. It stops
        # listening at once and lets the turn finish (the drain) ...
        first.terminate()
        await wait_until(
            lambda: refuses_connections(first.port), what="the first to stop listening"
        )
        last_seq = max(e["seq"] for e in before if e["seq"] is not None)

        # ... so the resume, through the same proxy, can only land on the other instance,
        # which follows the turn live over Redis.
        async with topology.socket(chat_id, after_seq=last_seq) as resumed:
            after = await resumed.until("end_of_stream", within=60)
        # The socket on the draining instance got its turn to the end too.
        drained = await first_socket.until("end_of_stream", within=60)
    await stopped_cleanly(first)
    # The image's HEALTHCHECK tells the two apart.
    assert await healthcheck_passes(second.port) and not await healthcheck_passes(first.port)

    stored = await topology.stored_events(chat_id)
    seen = persisted(before) + persisted(after)
    assert seen == stored[: len(seen)] and seen[-1]["type"] == "end_of_stream"
    assert seen[-1]["status"] == "completed"
    assert persisted(before) + persisted(drained) == stored[: len(seen)]
    # The first delta after the resume redraws the message so far; the rest extend it.
    final = next(e for e in after if e["type"] == "llm_response")["text"]
    resumed_deltas = [e["delta"] for e in after if e["type"] == "llm_response_delta"]
    assert resumed_deltas and "".join(resumed_deltas) == final
    streamed_before = "".join(e["delta"] for e in before if e["type"] == "llm_response_delta")
    assert resumed_deltas[0].startswith(streamed_before) and streamed_before != final

    # 3. With one instance down, the proxy sends a new chat to the other: a turn completes.
    await run_turn_on(topology, second)

    # 4. The stopped instance comes back and serves again: once the other one is stopped
    # too, the proxy can only reach it.
    await start_all([first])
    second.terminate()
    await stopped_cleanly(second)
    await run_turn_on(topology, first)


async def sse_streams_through(topology: Topology) -> None:
    headers = {"Authorization": f"Bearer {topology.token}"}
    body = {"model": "switchboard", "input": SHORT, "stream": True}
    kinds: list[str] = []
    async with (
        httpx.AsyncClient(base_url=topology.proxy.http, headers=headers, timeout=60) as http,
        http.stream("POST", "/v1/responses", json=body) as answer,
    ):
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        async for line in answer.aiter_lines():
            if not line.startswith("data: {"):  # the stream ends with `data: [DONE]`
                continue
            kinds.append(json.loads(line[len("data: ") :])["type"])
            if kinds[-1] == "response.output_text.delta" and kinds.count(kinds[-1]) == 1:
                assert await topology.running_turns() == 1, "the answer had already ended"
    assert "response.output_text.delta" in kinds and kinds[-1] == "response.completed"
    async with httpx.AsyncClient(base_url=topology.proxy.http, headers=headers) as http:
        assert (await http.get("/metrics")).status_code == 404  # only on the inside


async def stopped_cleanly(server: ServerProcess) -> None:
    # uvicorn re-raises the SIGTERM it handled once its shutdown is done.
    assert await server.wait(within=60) in (0, -signal.SIGTERM)
    assert "switchboard stopped" in server.log()


async def run_turn_on(topology: Topology, expected: ServerProcess) -> None:
    chat_id = uuid.uuid4().hex
    async with topology.socket(chat_id) as client:
        await client.send({"type": "prompt", "text": SHORT})
        await client.until("llm_response_delta", within=60)
        assert await topology.runner_of(chat_id) is expected
        events = await client.until("end_of_stream", within=60)
    assert events[-1]["status"] == "completed", json.dumps(events[-1])
