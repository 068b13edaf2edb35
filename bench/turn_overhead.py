"""1. Turn overhead: a full turn over the socket, with persistence, vs. the bare SDK turn.

Both sides run the same offline model and the same multi-agent prompt (a handoff to Yelp,
its search tool, a handoff to Gmail, its send tool, a ~50-word streamed answer) in the
same run, interleaved in rounds so drift on a noisy machine hits both alike. The server
is a real ``switchboard serve`` process on loopback; the bare turn is
``Runner.run_streamed`` in this process, on the same event loop implementation (uvloop).

A socket turn is timed from sending the prompt to receiving ``end_of_stream`` (which the
server sends only after committing it), on a socket opened before the clock starts, in a
new chat each time (the bare turn has no history either); the next turn starts after the
``suggested_prompts`` that follow, untimed.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from agents import RunConfig, Runner
from websockets.asyncio.client import connect

from app.llm.offline import OfflineModelProvider
from app.settings import load_settings
from bench.common import (
    PROMPT,
    Server,
    migrate,
    postgres_schema,
    sqlite_url,
    start_switchboard,
    summary,
)
from connectors.context import ChatContext, DemoStore
from connectors.orchestrator import build_orchestrator
from connectors.registry import load_connectors

TURN_TIMEOUT = 30.0
ROUND = 10


class BareTurns:
    """The same orchestrator and model as the server, run in-process with no socket or DB."""

    def __init__(self, delta_delay: float) -> None:
        settings = load_settings(approvals="off")  # as the server runs (bench.common)
        self.settings = settings
        connectors = load_connectors(settings)
        self.orchestrator = build_orchestrator(settings, connectors)
        self.demo = DemoStore()
        self.run_config = RunConfig(
            model_provider=OfflineModelProvider(delta_delay=delta_delay, connectors=connectors),
            tracing_disabled=True,
        )
        self.cpu_seconds = 0.0  # this process's CPU while running bare turns

    async def run(self, count: int) -> list[float]:
        times = []
        cpu_before = time.process_time()
        for index in range(count):
            context = ChatContext(
                user_id="bench",
                chat_id=f"bare{index}",
                turn_id=str(index),
                settings=self.settings,
                demo=self.demo.for_user("bench"),
            )
            started = time.perf_counter()
            result = Runner.run_streamed(
                self.orchestrator, input=PROMPT, context=context, run_config=self.run_config
            )
            async for _ in result.stream_events():
                pass
            times.append(time.perf_counter() - started)
        self.cpu_seconds += time.process_time() - cpu_before
        return times


async def socket_turn(server: Server) -> float:
    """One turn in a new chat; seconds from the prompt to ``end_of_stream``."""
    async with connect(server.ws_url(uuid.uuid4().hex), open_timeout=10) as ws:
        started = time.perf_counter()
        await ws.send(orjson.dumps({"type": "prompt", "text": PROMPT}).decode())
        elapsed: float | None = None
        async with asyncio.timeout(TURN_TIMEOUT):
            while True:
                event = orjson.loads(await ws.recv())
                kind = event["type"]
                if kind == "error" and event["seq"] is None:
                    raise RuntimeError(f"the server refused the bench prompt: {event}")
                if kind == "end_of_stream":
                    elapsed = time.perf_counter() - started
                    if event["status"] != "completed":
                        raise RuntimeError(f"bench turn ended {event['status']}")
                elif kind == "suggested_prompts" and elapsed is not None:
                    # Untimed: the turn's after-work is done before the next one starts.
                    return elapsed


async def measure(server: Server, bare: BareTurns, count: int, warmup: int) -> dict[str, Any]:
    for _ in range(warmup):
        await socket_turn(server)
    await bare.run(warmup)
    ours: list[float] = []
    baseline: list[float] = []
    bare.cpu_seconds, server_cpu = 0.0, 0.0
    for _ in range(max(1, count // ROUND)):
        cpu_before = server.cpu_seconds()
        for _ in range(ROUND):
            ours.append(await socket_turn(server))
        server_cpu += server.cpu_seconds() - cpu_before
        baseline += await bare.run(ROUND)
    result: dict[str, Any] = {"socket": summary(ours), "bare": summary(baseline)}
    # CPU per turn: the server's (it also runs the suggestions and the title after
    # end_of_stream, which the bare turn has no equivalent of) and the bare SDK's.
    result["server_cpu_ms_per_turn"] = 1000 * server_cpu / len(ours)
    result["bare_cpu_ms_per_turn"] = 1000 * bare.cpu_seconds / len(baseline)
    result["ratio_p50"] = result["socket"]["p50"] / result["bare"]["p50"]
    result["ratio_p99"] = result["socket"]["p99"] / result["bare"]["p99"]
    return result


async def run_engine(
    engine: str, url: str, data_dir: Path, delta_delay: float, count: int, warmup: int
) -> dict[str, Any]:
    server = start_switchboard(url, data_dir, offline_delta_delay=delta_delay)
    try:
        result = await measure(server, BareTurns(delta_delay), count, warmup)
    finally:
        server.stop()
    return {"engine": engine, "delta_delay": delta_delay, **result}


async def run(
    work_dir: Path,
    *,
    postgres_url: str | None,
    delays: tuple[float, ...] = (0.0, 0.005),
    count: int = 60,
    warmup: int = 5,
) -> list[dict[str, Any]]:
    rows = []
    for delay in delays:
        # With simulated model latency a turn is ~10x longer; fewer turns keep the run short.
        n = count if delay == 0 else max(ROUND, count // 2)
        sqlite_dir = work_dir / f"turn-sqlite-{delay}"
        sqlite_dir.mkdir()
        url = sqlite_url(sqlite_dir)
        await migrate(url)
        rows.append(await run_engine("sqlite", url, sqlite_dir, delay, n, warmup))
        if postgres_url is not None:
            pg_dir = work_dir / f"turn-postgres-{delay}"
            pg_dir.mkdir()
            async with postgres_schema(postgres_url) as url:
                rows.append(await run_engine("postgresql", url, pg_dir, delay, n, warmup))
    return rows
