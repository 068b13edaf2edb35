"""2. Streaming throughput: one long message through the whole pipeline vs. a raw send loop.

Ours: the real app (``bench.servers long-message``) whose model streams one message of
``words`` deltas; each delta goes model -> Agents SDK -> translator -> turn writer ->
hub -> the socket's sender -> uvicorn, and the message is checkpointed and persisted as
it goes. Raw: ``bench.servers raw``, a Starlette endpoint sending frames of the same shape
in a loop. One client (this process) reads every frame of either and checks that the
deltas join to the message. Also measured, for context: the model and SDK alone
in-process (``Runner.run_streamed``, no socket), the ceiling of any SDK-based server.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from agents import Agent, RunConfig, Runner
from websockets.asyncio.client import connect

from bench.common import (
    Server,
    free_port,
    migrate,
    sqlite_url,
    start_process,
    switchboard_env,
)
from bench.long_model import LongMessageProvider, words

WORDS = 20_000
STREAM_TIMEOUT = 120.0


def start_stream_server(url: str, data_dir: Path, word_count: int = WORDS) -> Server:
    port = free_port()
    return start_process(
        [
            sys.executable,
            "-m",
            "bench.servers",
            "long-message",
            "--port",
            str(port),
            "--words",
            str(word_count),
        ],
        port,
        switchboard_env(url, data_dir),
        data_dir / f"stream-server-{port}.log",
    )


def start_raw_server(data_dir: Path, word_count: int = WORDS) -> Server:
    port = free_port()
    return start_process(
        [
            sys.executable,
            "-m",
            "bench.servers",
            "raw",
            "--port",
            str(port),
            "--words",
            str(word_count),
        ],
        port,
        {},
        data_dir / f"raw-server-{port}.log",
    )


async def stream_once(url: str, word_count: int) -> float:
    """Seconds from the prompt to the complete message; checks every delta arrived."""
    async with connect(url, open_timeout=10, max_size=None) as ws:
        started = time.perf_counter()
        await ws.send(orjson.dumps({"type": "prompt", "text": "stream a long answer"}).decode())
        deltas: list[str] = []
        async with asyncio.timeout(STREAM_TIMEOUT):
            while True:
                event = orjson.loads(await ws.recv())
                kind = event["type"]
                if kind == "llm_response_delta":
                    deltas.append(event["delta"])
                elif kind == "llm_response":
                    elapsed = time.perf_counter() - started
                    break
                elif kind == "error" or kind == "end_of_stream":
                    raise RuntimeError(f"stream ended early: {event}")
    expected = "".join(words(word_count))
    if "".join(deltas) != expected or event["text"] != expected:
        raise RuntimeError(
            f"lost text: {len(deltas)} deltas, {len(''.join(deltas))} chars of {len(expected)}"
        )
    return elapsed


async def sdk_alone(word_count: int) -> float:
    """Seconds for the SDK to stream the message in-process, no socket, no storage."""
    agent = Agent(name="Switchboard", instructions="Answer.")
    config = RunConfig(model_provider=LongMessageProvider(word_count), tracing_disabled=True)
    started = time.perf_counter()
    result = Runner.run_streamed(agent, input="stream a long answer", run_config=config)
    count = 0
    async for event in result.stream_events():
        if getattr(getattr(event, "data", None), "type", "") == "response.output_text.delta":
            count += 1
    elapsed = time.perf_counter() - started
    if count != word_count:
        raise RuntimeError(f"the SDK streamed {count} deltas, expected {word_count}")
    return elapsed


def _rate(seconds: list[float], word_count: int) -> dict[str, float]:
    median = statistics.median(seconds)
    return {"deltas_per_s": word_count / median, "seconds_median": median, "runs": len(seconds)}


async def run(work_dir: Path, *, runs: int = 5, word_count: int = WORDS) -> dict[str, Any]:
    directory = work_dir / "streaming"
    directory.mkdir()
    url = sqlite_url(directory)
    await migrate(url)
    ours_server = start_stream_server(url, directory, word_count)
    raw_server = start_raw_server(directory, word_count)
    ours: list[float] = []
    raw: list[float] = []
    bare: list[float] = []
    cpu = {"ours": 0.0, "raw": 0.0}
    try:
        await stream_once(raw_server.ws_url("warmup"), word_count)
        await stream_once(ours_server.ws_url(uuid.uuid4().hex), word_count)
        for _ in range(runs):  # interleaved, so drift hits all three alike
            before = raw_server.cpu_seconds()
            raw.append(await stream_once(raw_server.ws_url("raw"), word_count))
            cpu["raw"] += raw_server.cpu_seconds() - before
            before = ours_server.cpu_seconds()
            ours.append(await stream_once(ours_server.ws_url(uuid.uuid4().hex), word_count))
            cpu["ours"] += ours_server.cpu_seconds() - before
            bare.append(await sdk_alone(word_count))
    finally:
        ours_server.stop()
        raw_server.stop()
    result = {
        "words": word_count,
        "ours": _rate(ours, word_count),
        "raw": _rate(raw, word_count),
        "sdk_alone": _rate(bare, word_count),
    }
    result["ratio"] = result["ours"]["deltas_per_s"] / result["raw"]["deltas_per_s"]
    for name in ("ours", "raw"):
        result[name]["server_cpu_us_per_delta"] = 1e6 * cpu[name] / (runs * word_count)
    return result
