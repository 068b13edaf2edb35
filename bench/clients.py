"""Load-generator processes: many sockets, one asyncio loop per process.

The parent starts ``processes`` of these (``spawn``, so none inherits the parent's event
loop) and drives them over a pipe: each opens its share of sockets and reports
``ready``; on ``go`` it runs its chats' turns (or answers ``ping`` by pinging every
socket), reports what every socket received, and closes on ``close``. Every wait is
bounded: a stuck socket is reported as an error, never waited for forever.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect

OPEN_TIMEOUT = 60.0
CONNECT_CONCURRENCY = 64


@dataclass
class ClientSpec:
    port: int
    chat_ids: list[str]
    prompt: str = ""
    turns: int = 0  # per chat, one after the other
    turn_timeout: float = 300.0


@dataclass
class ChatReport:
    """What one socket saw: the checks are done where the frames are, in the client."""

    chat_id: str
    last_seq: int = 0
    seq_gaps: int = 0  # a persisted event missing, repeated or out of order
    events: list[tuple[int, str]] = field(default_factory=list)  # (seq, type) persisted
    latencies: list[float] = field(default_factory=list)  # prompt -> end_of_stream, s
    completed_turns: int = 0
    problems: list[str] = field(default_factory=list)


def _check_turn(report: ChatReport, received: list[dict[str, Any]]) -> None:
    """One turn's frames: statuses, deltas joining to each message, order of the ends."""
    kinds = [event["type"] for event in received]
    if kinds[0] != "user_prompt":
        report.problems.append(f"turn starts with {kinds[0]}")
    end = [event for event in received if event["type"] == "end_of_stream"]
    if len(end) != 1 or end[0]["status"] != "completed":
        report.problems.append(f"turn did not complete: {end}")
    else:
        report.completed_turns += 1
    if kinds[-1] != "suggested_prompts" or kinds[-2] != "end_of_stream":
        report.problems.append(f"turn ends with {kinds[-2:]}")
    text = ""
    for event in received:
        if event["type"] == "llm_response_delta":
            text += event["delta"]
        elif event["type"] == "llm_response":
            if text != event["text"]:
                report.problems.append("deltas do not join to the message")
            text = ""


async def _receive_until(
    ws: ClientConnection, report: ChatReport, kind: str, into: list[dict[str, Any]]
) -> dict[str, Any]:
    while True:
        event = orjson.loads(await ws.recv())
        into.append(event)
        seq = event["seq"]
        if seq is not None:
            if seq != report.last_seq + 1:
                report.seq_gaps += 1
            report.last_seq = seq
            report.events.append((seq, event["type"]))
        elif event["type"] == "error":
            raise RuntimeError(f"server error frame: {event}")
        if event["type"] == kind:
            return event


async def _run_turns(ws: ClientConnection, spec: ClientSpec, report: ChatReport) -> None:
    for _ in range(spec.turns):
        received: list[dict[str, Any]] = []
        started = time.perf_counter()
        await ws.send(orjson.dumps({"type": "prompt", "text": spec.prompt}).decode())
        await _receive_until(ws, report, "end_of_stream", received)
        report.latencies.append(time.perf_counter() - started)
        await _receive_until(ws, report, "suggested_prompts", received)
        _check_turn(report, received)


async def _ping(ws: ClientConnection) -> None:
    await ws.send('{"type":"ping"}')
    while True:
        if orjson.loads(await ws.recv())["type"] == "pong":
            return


async def _turns_on_all(
    sockets: dict[str, ClientConnection], spec: ClientSpec
) -> list[dict[str, Any]]:
    reports = {chat_id: ChatReport(chat_id) for chat_id in sockets}

    async def one(chat_id: str) -> None:
        report = reports[chat_id]
        try:
            async with asyncio.timeout(spec.turn_timeout * max(1, spec.turns)):
                await _run_turns(sockets[chat_id], spec, report)
        except Exception as exc:
            report.problems.append(f"{type(exc).__name__}: {exc}")

    await asyncio.gather(*(one(chat_id) for chat_id in sockets))
    return [vars(report) for report in reports.values()]


async def _ping_all(sockets: dict[str, ClientConnection]) -> tuple[int, list[str], float]:
    lost: list[str] = []

    async def one(chat_id: str) -> None:
        try:
            async with asyncio.timeout(60):
                await _ping(sockets[chat_id])
        except Exception as exc:
            lost.append(f"{chat_id}: {type(exc).__name__}")

    started = time.perf_counter()
    await asyncio.gather(*(one(chat_id) for chat_id in sockets))
    return len(sockets) - len(lost), lost[:5], time.perf_counter() - started


async def _open_all(spec: ClientSpec) -> tuple[dict[str, ClientConnection], list[str]]:
    sockets: dict[str, ClientConnection] = {}
    failures: list[str] = []
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)

    async def one(chat_id: str) -> None:
        async with gate:
            try:
                sockets[chat_id] = await connect(
                    f"ws://127.0.0.1:{spec.port}/ws/chats/{chat_id}",
                    open_timeout=OPEN_TIMEOUT,
                    ping_interval=None,
                    max_size=None,
                )
            except Exception as exc:
                failures.append(f"{chat_id}: {type(exc).__name__}: {exc}")

    await asyncio.gather(*(one(chat_id) for chat_id in spec.chat_ids))
    return sockets, failures


async def _client(conn: Connection, spec: ClientSpec) -> None:
    sockets, failures = await _open_all(spec)
    conn.send(("ready", len(sockets), failures[:5], len(failures)))
    loop = asyncio.get_running_loop()
    while True:
        command = await loop.run_in_executor(None, conn.recv)
        if command == "go":
            conn.send(("done", await _turns_on_all(sockets, spec)))
        elif command == "ping":
            conn.send(("pinged", *await _ping_all(sockets)))
        elif command == "close":
            await asyncio.gather(*(ws.close() for ws in sockets.values()), return_exceptions=True)
            conn.send(("closed",))
            return


def client_main(conn: Connection, spec: ClientSpec) -> None:
    """Entry point of a client process."""
    from bench.common import raise_fd_limit, use_uvloop

    raise_fd_limit()
    use_uvloop()
    try:
        asyncio.run(_client(conn, spec))
    except Exception as exc:  # tell the parent instead of leaving it waiting
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        raise


class ClientPool:
    """``processes`` client processes sharing ``chat_ids`` round-robin."""

    def __init__(self, processes: int, port: int, chat_ids: list[str], **spec: Any) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipes: list[Connection] = []
        self._processes: list[Any] = []
        for index in range(processes):
            parent, child = context.Pipe()
            share = chat_ids[index::processes]
            process = context.Process(
                target=client_main,
                args=(child, ClientSpec(port, share, **spec)),
                daemon=True,
                name=f"bench-client-{index}",
            )
            process.start()
            self._pipes.append(parent)
            self._processes.append(process)

    @property
    def pids(self) -> list[int]:
        """The client processes' pids (their CPU is read from ``/proc``)."""
        return [process.pid for process in self._processes]

    def _collect(self, expected: str, timeout: float) -> list[tuple[Any, ...]]:
        replies = []
        deadline = time.monotonic() + timeout
        for pipe in self._pipes:
            if not pipe.poll(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(
                    f"a client process did not answer {expected!r} within {timeout:.0f} s"
                )
            reply = pipe.recv()
            if reply[0] != expected:
                raise RuntimeError(f"client process: {reply}")
            replies.append(reply)
        return replies

    def wait_ready(self, timeout: float) -> tuple[int, list[str], int]:
        opened, failures, failed = 0, [], 0
        for _, count, sample, failed_count in self._collect("ready", timeout):
            opened += count
            failures += sample
            failed += failed_count
        return opened, failures, failed

    def run_turns(self, timeout: float) -> list[dict[str, Any]]:
        for pipe in self._pipes:
            pipe.send("go")
        reports: list[dict[str, Any]] = []
        for _, chunk in self._collect("done", timeout):
            reports += chunk
        return reports

    def ping(self, timeout: float) -> tuple[int, list[str], float]:
        for pipe in self._pipes:
            pipe.send("ping")
        alive, lost, slowest = 0, [], 0.0
        for _, count, sample, seconds in self._collect("pinged", timeout):
            alive += count
            lost += sample
            slowest = max(slowest, seconds)
        return alive, lost, slowest

    def close(self, timeout: float = 60.0) -> None:
        try:
            for pipe in self._pipes:
                pipe.send("close")
            self._collect("closed", timeout)
        finally:
            for process in self._processes:
                process.join(5)
                if process.is_alive():
                    process.kill()
                    process.join(5)
