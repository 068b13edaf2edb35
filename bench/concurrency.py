"""3. Concurrency: 100, 500 and 1,000 chats running turns at the same time.

One ``switchboard serve`` process (SQLite, fresh database per level; then 1,000 chats on
PostgreSQL in a fresh schema, with the default connection pool; the offline model with
simulated latency), client processes each holding a share of the sockets (one per
chat). All sockets open first; then every chat runs its turns back to back, waiting for
each turn's ``suggested_prompts``. Measured: turns/s over the whole run, latency from
prompt to ``end_of_stream``, the server's CPU (share of one core) and peak RSS.

Lost events are a failure, not a statistic: every socket must see seqs 1, 2, 3, … with
no gap, every turn must complete with its deltas joining to its message, and what each
socket received must equal what the database holds for its chat (read back through the
REST API), turn by turn complete. A prompt the server refuses (an ``error`` frame, e.g.
no database connection free in time) is counted apart, as ``refused_prompts``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench.clients import ClientPool
from bench.common import (
    PROMPT,
    Server,
    migrate,
    postgres_schema,
    sqlite_url,
    start_switchboard,
    summary,
)

LEVELS: tuple[tuple[int, int], ...] = ((100, 3), (500, 1), (1000, 1))  # (chats, turns each)
POSTGRES_LEVELS: tuple[tuple[int, int], ...] = ((1000, 1),)
MODEL_DELAY = 0.01  # seconds between streamed words: a fast model, ~100 tokens/s
REST_CONCURRENCY = 16


async def sample_rss(server: Server, stop: asyncio.Event, peak: list[int]) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], server.rss_bytes())
        try:
            await asyncio.wait_for(stop.wait(), 0.2)
        except TimeoutError:
            pass


def server_errors(log: Path, most: int = 5) -> list[tuple[str, int]]:
    """The server's logged errors and warnings, by message and exception, most frequent
    first: why prompts were refused or turns failed (e.g. ``PoolExhausted``), at a glance."""
    seen: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("level") not in ("WARNING", "ERROR"):
            continue
        message = str(record.get("message", ""))[:80]
        trace = str(record.get("exc") or "").strip().splitlines()
        cause = trace[-1].split(":", 1)[0] if trace else ""
        seen[f"{message} ({cause})" if cause else message] += 1
    return seen.most_common(most)


async def verify_persisted(server: Server, reports: list[dict[str, Any]], turns: int) -> list[str]:
    """Compare what every socket received with what the server stored."""
    problems: list[str] = []
    gate = asyncio.Semaphore(REST_CONCURRENCY)

    async def check(client: httpx.AsyncClient, report: dict[str, Any]) -> None:
        chat_id = report["chat_id"]
        async with gate:
            events = (
                await client.get(f"/api/chats/{chat_id}/events", params={"limit": 1000})
            ).json()["events"]
            chat = (await client.get(f"/api/chats/{chat_id}")).json()
        stored = [(event["seq"], event["type"]) for event in events]
        received = [tuple(pair) for pair in report["events"]]
        if stored != received:
            problems.append(
                f"{chat_id}: socket saw {len(received)} events, database holds {len(stored)}"
            )
        statuses = [turn["status"] for turn in chat["turns"]]
        if statuses != ["completed"] * turns or not all(t["final_text"] for t in chat["turns"]):
            problems.append(f"{chat_id}: persisted turns {statuses}")

    async with httpx.AsyncClient(base_url=server.http, timeout=30) as client:
        await asyncio.gather(*(check(client, report) for report in reports))
    return problems


async def run_level(
    work_dir: Path,
    chats: int,
    turns: int,
    processes: int,
    delay: float,
    *,
    engine: str = "sqlite",
    url: str | None = None,
) -> dict[str, Any]:
    directory = work_dir / f"concurrency-{engine}-{chats}"
    directory.mkdir()
    if url is None:
        url = sqlite_url(directory)
        await migrate(url)
    server = start_switchboard(url, directory, offline_delta_delay=delay)
    load_before = os.getloadavg()
    pool: ClientPool | None = None
    try:
        idle_rss = server.rss_bytes()
        pool = ClientPool(
            processes,
            server.port,
            [f"load{chats}x{i}" for i in range(chats)],
            prompt=PROMPT,
            turns=turns,
        )
        opened, failures, failed = await asyncio.to_thread(pool.wait_ready, 300.0)
        if failed:
            raise RuntimeError(f"{failed} of {chats} sockets did not open, e.g. {failures}")
        stop, peak = asyncio.Event(), [server.rss_bytes()]
        sampler = asyncio.create_task(sample_rss(server, stop, peak))
        cpu_before, started = server.cpu_seconds(), time.perf_counter()
        reports = await asyncio.to_thread(pool.run_turns, 900.0)
        wall = time.perf_counter() - started
        cpu = server.cpu_seconds() - cpu_before
        stop.set()
        await sampler
        problems = [f"{r['chat_id']}: {p}" for r in reports for p in r["problems"]]
        gaps = sum(r["seq_gaps"] for r in reports)
        problems += await verify_persisted(server, reports, turns)
    finally:
        if pool is not None:
            await asyncio.to_thread(pool.close)
        server.stop()
    latencies = [latency for report in reports for latency in report["latencies"]]
    done = sum(report["completed_turns"] for report in reports)
    refused = sum(1 for r in reports for p in r["problems"] if "server error frame" in p)
    lost = gaps + len(problems) + (chats * turns - done)
    errors = server_errors(server.log)
    if refused or lost:
        print(
            f"  concurrency {engine} {chats}: {refused} refused, {lost} lost or incomplete;"
            f" the server logged {errors}",
            file=sys.stderr,
        )
    return {
        "engine": engine,
        "refused_prompts": refused,
        "chats": chats,
        "turns": done,
        "turns_expected": chats * turns,
        "seconds": wall,
        "turns_per_s": done / wall,
        "latency": summary(latencies) if latencies else None,
        "server_cpu_share": cpu / wall,
        "server_rss_mib": peak[0] / 2**20,
        "server_idle_rss_mib": idle_rss / 2**20,
        "seq_gaps": gaps,
        "lost_or_incomplete": lost,
        "problems": problems[:10],
        # A refused prompt's frame says only "try again": the server's log says why.
        "server_errors": errors,
        # The machine is shared: other work starves the server of CPU (see docs/benchmarks.md).
        "load_average": [load_before, os.getloadavg()],
    }


async def run(
    work_dir: Path,
    *,
    levels: tuple[tuple[int, int], ...] = LEVELS,
    postgres_url: str | None = None,
    postgres_levels: tuple[tuple[int, int], ...] = POSTGRES_LEVELS,
    delay: float = MODEL_DELAY,
) -> list[dict[str, Any]]:
    rows = []
    for chats, turns in levels:
        processes = 1 if chats <= 100 else 2
        rows.append(await run_level(work_dir, chats, turns, processes, delay))
    if postgres_url is not None:
        for chats, turns in postgres_levels:
            processes = 1 if chats <= 100 else 2
            async with postgres_schema(postgres_url) as url:
                rows.append(
                    await run_level(
                        work_dir, chats, turns, processes, delay, engine="postgresql", url=url
                    )
                )
    return rows
