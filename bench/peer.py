"""7. The peer: Switchboard, OpenAI's ChatKit server SDK and the bare SDK, side by side.

Three sides in one run, interleaved in rounds so drift on a shared machine hits all
alike: ``switchboard serve`` (SQLite), the ChatKit server of ``bench.chatkit_peer`` (its
own uvicorn process, ChatKit's SQLite store pattern in WAL mode, SSE) and the bare SDK
turn in this process (``bench.turn_overhead.BareTurns``). The same orchestrator, prompt
and offline model everywhere. With the instant model a fourth side too, the socket
floor (``bench.servers sdk-socket``): the same turn streamed over a WebSocket, one frame
per SDK event, with nothing stored, what any server that streams this turn over a socket
pays at the least. Measured:

- with an instant model (0 ms/word): server CPU per turn (from ``/proc``, around each
  round), turn p50 (prompt to the end of the turn: Switchboard's ``end_of_stream``, which
  is committed before it is sent; the end of ChatKit's SSE response, whose last item is
  stored before its event is sent), and bytes stored per turn (the SQLite file's pages in
  use, before and after the measured turns, divided by the turns), also per table and
  index (``dbstat``);
- with 10 ms/word and 50 clients at once, each running turns back to back in new chats
  (threads): turns/s over the whole batch, batches alternating between the two servers.

Every turn is a new chat on both servers (a new socket; a ``threads.create`` request on
a new HTTP connection). What is not like for like is listed in
``bench/chatkit_peer.py`` and ``docs/benchmarks.md``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from bench.common import (
    PROMPT,
    Server,
    free_port,
    migrate,
    sqlite_url,
    start_process,
    start_switchboard,
    summary,
)
from bench.turn_overhead import ROUND, BareTurns, socket_turn

TURN_TIMEOUT = 60.0
LOAD_CLIENTS = 50
LOAD_DELAY = 0.01  # seconds between streamed words


def start_chatkit(db: Path, delay: float, log_dir: Path) -> Server:
    port = free_port()
    return start_process(
        [sys.executable, "-m", "bench.chatkit_peer", "--port", str(port), "--db", str(db)]
        + ["--delay", str(delay)],
        port,
        {"SWITCHBOARD_LOG_LEVEL": "WARNING", "SWITCHBOARD_APPROVALS": "off"},
        log_dir / f"chatkit-{port}.log",
    )


def start_socket_floor(delay: float, log_dir: Path) -> Server:
    port = free_port()
    return start_process(
        [sys.executable, "-m", "bench.servers", "sdk-socket", "--port", str(port)]
        + ["--pace", str(delay)],
        port,
        {"SWITCHBOARD_LOG_LEVEL": "WARNING", "SWITCHBOARD_APPROVALS": "off"},
        log_dir / f"socket-floor-{port}.log",
    )


def _create_request() -> bytes:
    return orjson.dumps(
        {
            "type": "threads.create",
            "params": {
                "input": {
                    "content": [{"type": "input_text", "text": PROMPT}],
                    "attachments": [],
                    "inference_options": {},
                }
            },
        }
    )


async def chatkit_turn(server: Server) -> float:
    """One turn in a new thread; seconds from the request to the end of the SSE stream.

    A plain HTTP/1.1 request on its own connection, as Switchboard's turn opens its own
    socket: httpx's pool serialised 50 concurrent SSE streams in this benchmark (10
    turns at once took 3.5 times one turn, where curl took 1.3 times).
    """
    body = _create_request()
    started = time.perf_counter()
    answered = False
    async with asyncio.timeout(TURN_TIMEOUT):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            writer.write(
                b"POST /chatkit HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            status = await reader.readline()
            if b" 200 " not in status:
                raise RuntimeError(f"the ChatKit peer answered {status!r}")
            await reader.readuntil(b"\r\n\r\n")  # headers: the body is chunked
            pending = b""
            while size := int((await reader.readline()).strip() or b"0", 16):
                pending += (await reader.readexactly(size + 2))[:-2]
                *events, pending = pending.split(b"\n\n")
                for raw in events:
                    if not raw.startswith(b"data: "):
                        continue
                    event = orjson.loads(raw[6:])
                    if event["type"] == "error":
                        raise RuntimeError(f"the ChatKit peer failed the bench turn: {event}")
                    if (
                        event["type"] == "thread.item.done"
                        and event["item"]["type"] == "assistant_message"
                    ):
                        answered = True
        finally:
            writer.close()
    if not answered:
        raise RuntimeError("the ChatKit peer's stream ended without an answer")
    return time.perf_counter() - started


def stored_bytes(db: Path) -> int:
    """Bytes of the SQLite database's pages in use (the WAL's newest pages included)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    finally:
        conn.close()
    return int((pages - free) * page_size)


def stored_by_table(db: Path) -> dict[str, int]:
    """Bytes of the pages each table and index uses (SQLite's ``dbstat``)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    finally:
        conn.close()
    return {str(name): int(size) for name, size in rows}


def per_turn_by_table(
    before: dict[str, int], after: dict[str, int], turns: int
) -> dict[str, float]:
    """What each table and index grew by per turn, largest first; unchanged ones left out."""
    grown = {name: (size - before.get(name, 0)) / turns for name, size in after.items()}
    return dict(sorted(((n, b) for n, b in grown.items() if b), key=lambda nb: -nb[1]))


async def _servers(work_dir: Path, tag: str, delay: float) -> tuple[Server, Path, Server, Path]:
    sb_dir = work_dir / f"peer-switchboard-{tag}"
    ck_dir = work_dir / f"peer-chatkit-{tag}"
    sb_dir.mkdir()
    ck_dir.mkdir()
    url = sqlite_url(sb_dir)
    await migrate(url)
    switchboard = start_switchboard(url, sb_dir, offline_delta_delay=delay)
    try:
        chatkit = start_chatkit(ck_dir / "chatkit.db", delay, ck_dir)
    except BaseException:
        switchboard.stop()
        raise
    return switchboard, sb_dir / "bench.db", chatkit, ck_dir / "chatkit.db"


async def instant(work_dir: Path, count: int, warmup: int) -> dict[str, Any]:
    switchboard, sb_db, chatkit, ck_db = await _servers(work_dir, "instant", 0.0)
    try:
        floor = start_socket_floor(0.0, work_dir)
    except BaseException:
        switchboard.stop()
        chatkit.stop()
        raise
    bare = BareTurns(0.0)
    servers = {"switchboard": switchboard, "chatkit": chatkit, "floor": floor}
    turn = {
        "switchboard": lambda: socket_turn(switchboard),
        "chatkit": lambda: chatkit_turn(chatkit),
        "floor": lambda: socket_turn(floor),
    }
    times: dict[str, list[float]] = {side: [] for side in (*servers, "bare")}
    cpu = dict.fromkeys(servers, 0.0)
    loop_cpu = 0.0  # Switchboard's event loop thread's part of its CPU
    try:
        for _ in range(warmup):
            for side in servers:
                await turn[side]()
        await bare.run(warmup)
        bytes_before = {"switchboard": stored_bytes(sb_db), "chatkit": stored_bytes(ck_db)}
        tables_before = {"switchboard": stored_by_table(sb_db), "chatkit": stored_by_table(ck_db)}
        bare.cpu_seconds = 0.0
        for _ in range(max(1, count // ROUND)):
            for side, server in servers.items():
                before, loop_before = server.cpu_seconds(), switchboard.loop_thread_cpu_seconds()
                for _ in range(ROUND):
                    times[side].append(await turn[side]())
                cpu[side] += server.cpu_seconds() - before
                if side == "switchboard":
                    loop_cpu += switchboard.loop_thread_cpu_seconds() - loop_before
            times["bare"] += await bare.run(ROUND)
        stored = {
            "switchboard": stored_bytes(sb_db) - bytes_before["switchboard"],
            "chatkit": stored_bytes(ck_db) - bytes_before["chatkit"],
        }
        tables_after = {"switchboard": stored_by_table(sb_db), "chatkit": stored_by_table(ck_db)}
    finally:
        for server in servers.values():
            server.stop()
    turns = len(times["bare"])
    result: dict[str, Any] = {"turns": turns}
    for side in times:
        seconds = bare.cpu_seconds if side == "bare" else cpu[side]
        result[side] = {
            "latency": summary(times[side]),
            "cpu_ms_per_turn": 1000 * seconds / turns,
        }
        if side in stored:
            result[side]["bytes_per_turn"] = stored[side] / turns
            # Where they go: each table's and index's growth per turn (page granularity).
            result[side]["bytes_per_turn_by_table"] = per_turn_by_table(
                tables_before[side], tables_after[side], turns
            )
    # The rest is its other threads': SQLite's writer, which runs every transaction.
    result["switchboard"]["loop_thread_cpu_ms_per_turn"] = 1000 * loop_cpu / turns
    bare_cpu = result["bare"]["cpu_ms_per_turn"]
    for side in servers:
        result[side]["cpu_x_bare"] = result[side]["cpu_ms_per_turn"] / bare_cpu
        result[side]["p50_x_bare"] = (
            result[side]["latency"]["p50"] / result["bare"]["latency"]["p50"]
        )
    chatkit_cpu = result["chatkit"]["cpu_ms_per_turn"]
    result["cpu_switchboard_x_chatkit"] = result["switchboard"]["cpu_ms_per_turn"] / chatkit_cpu
    # Where the target lies against what no socket server of this turn can go below.
    result["cpu_floor_x_chatkit"] = result["floor"]["cpu_ms_per_turn"] / chatkit_cpu
    return result


async def _load_batch(
    clients: int, turns_each: int, one_turn: Any, server: Server
) -> tuple[int, float, float]:
    """``clients`` chats at once, each ``turns_each`` turns; (turns, seconds, CPU seconds)."""

    async def client() -> int:
        for _ in range(turns_each):
            await one_turn()
        return turns_each

    cpu_before, started = server.cpu_seconds(), time.perf_counter()
    done = sum(await asyncio.gather(*(client() for _ in range(clients))))
    return done, time.perf_counter() - started, server.cpu_seconds() - cpu_before


async def load(work_dir: Path, clients: int, turns_each: int, batches: int) -> dict[str, Any]:
    switchboard, _, chatkit, _ = await _servers(work_dir, "load", LOAD_DELAY)
    totals = {side: [0, 0.0, 0.0] for side in ("switchboard", "chatkit")}
    per_batch: dict[str, list[float]] = {"switchboard": [], "chatkit": []}
    try:
        await socket_turn(switchboard)  # warm both up
        await chatkit_turn(chatkit)
        for _ in range(batches):
            for side, server, turn in (
                ("switchboard", switchboard, lambda: socket_turn(switchboard)),
                ("chatkit", chatkit, lambda: chatkit_turn(chatkit)),
            ):
                done, seconds, cpu = await _load_batch(clients, turns_each, turn, server)
                totals[side][0] += done
                totals[side][1] += seconds
                totals[side][2] += cpu
                per_batch[side].append(done / seconds)
    finally:
        switchboard.stop()
        chatkit.stop()
    result: dict[str, Any] = {"clients": clients, "delay": LOAD_DELAY}
    for side, (done, seconds, cpu) in totals.items():
        result[side] = {
            "turns": done,
            "turns_per_s": done / seconds,
            "batches_turns_per_s": per_batch[side],
            "cpu_ms_per_turn": 1000 * cpu / done,
        }
    return result


async def run(
    work_dir: Path,
    *,
    count: int = 60,
    warmup: int = 5,
    clients: int = LOAD_CLIENTS,
    turns_each: int = 4,
    batches: int = 2,
) -> dict[str, Any]:
    return {
        "instant": await instant(work_dir, count, warmup),
        "load": await load(work_dir, clients, turns_each, batches),
    }
