"""2. Streaming: server CPU per delta at a real pace, one frame per delta, vs. the SDK alone.

Ours: the real app (``bench.servers long-message``) whose model streams one message of
``words`` deltas, one every ``pace`` seconds (a model's tokens arrive one by one, so the
writer sees one delta at a time and sends each as its own frame); each delta goes model
-> Agents SDK -> translator -> turn writer -> hub -> the socket's sender -> uvicorn, and
the message is checkpointed as it goes. The SDK alone: ``bench.sdk_stream``, the same
model at the same pace through ``Runner.run_streamed`` in its own process, no socket, no
storage. Context: ``bench.servers raw``, a Starlette loop sending frames of the same shape
at the same pace (what one socket frame costs on this stack), and the pacing alone (the
same process sleeping ``pace`` per delta: waking up for each delta costs every side this).
Their sum, SDK + raw - pacing, is the floor of any SDK-based server that sends one frame
per delta.

Measured: each process's CPU time (user + system, read from outside) between delta
``skip`` and delta ``words - skip``, as the client receives them (the SDK process says
when it has streamed them), so the per-turn work at either end (the prompt, the turn's
start and end transactions) is left out: that is benchmark 1's. Rounds are interleaved
(ours, the SDK alone, raw) so drift on a shared machine hits all alike. The client checks
that every delta came in its own frame, in order, and that the deltas join to the message.

Also, for context: a longer message flat out (``pace`` 0, ``flat_words`` deltas), where
the writer sends the deltas queued while it was busy as one frame; measured over the whole
message (from the prompt), so the turn's own work is in it too.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import connect

from bench.common import (
    Server,
    cpu_seconds,
    free_port,
    migrate,
    sqlite_url,
    start_process,
    switchboard_env,
)
from bench.long_model import words as message_words

WORDS = 2_000
PACE = 0.001  # seconds before each delta: a fast model
SKIP = 200  # deltas left out of the window at each end
ROUNDS = 6
FLAT_WORDS = 20_000
FLAT_RUNS = 3
STREAM_TIMEOUT = 120.0


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid``, every thread, exited ones included.

    The same sum as ``/proc/<pid>/stat`` utime + stime (bench.common.cpu_seconds), read
    from the process's CPU clock: nanoseconds, where ``/proc`` counts 10 ms ticks.
    """
    try:
        return time.clock_gettime(((~pid) << 3) | 2)  # Linux: the process's CPUCLOCK_SCHED
    except OSError:
        return cpu_seconds(pid)


@dataclass
class Window:
    """One message: the CPU and wall time between the two marks, and what was received."""

    cpu: float
    seconds: float
    deltas: int  # in the window
    frames: int  # delta frames of the whole message
    words: int  # deltas of the whole message


def _server(kind: str, data_dir: Path, env: dict[str, str], words: int, pace: float) -> Server:
    port = free_port()
    return start_process(
        [sys.executable, "-m", "bench.servers", kind, "--port", str(port)]
        + ["--words", str(words), "--pace", str(pace)],
        port,
        env,
        data_dir / f"{kind}-{port}.log",
    )


def start_stream_server(url: str, data_dir: Path, words: int = WORDS, pace: float = PACE) -> Server:
    return _server("long-message", data_dir, switchboard_env(url, data_dir), words, pace)


def start_raw_server(data_dir: Path, words: int = WORDS, pace: float = PACE) -> Server:
    return _server("raw", data_dir, {}, words, pace)


async def socket_message(url: str, pid: int, words: int, skip: int, *, ours: bool) -> Window:
    """One prompt and its streamed answer; CPU of ``pid`` between deltas ``skip`` and
    ``words - skip``. Checks the deltas join to the message, in order. Ours is read to its
    ``end_of_stream`` (the raw loop has none), so its turn is over when this returns."""
    expected = "".join(message_words(words))
    first, last = skip, words - skip
    received = frames = 0
    position = 0
    cpu = {}
    wall = {}
    async with connect(url, open_timeout=10, max_size=None, compression=None) as ws:
        if first == 0:
            cpu[0], wall[0] = process_cpu(pid), time.perf_counter()
        await ws.send(orjson.dumps({"type": "prompt", "text": "stream a long answer"}).decode())
        async with asyncio.timeout(STREAM_TIMEOUT):
            while True:
                event = orjson.loads(await ws.recv())
                kind = event["type"]
                if kind == "llm_response_delta":
                    delta = event["delta"]
                    if expected[position : position + len(delta)] != delta:
                        raise RuntimeError(f"delta out of order at {position}: {delta[:40]!r}")
                    position += len(delta)
                    frames += 1
                    before = received
                    received += delta.count(" ")  # each word ends with its one space
                    for mark in (first, last):
                        if before < mark <= received:
                            cpu[mark], wall[mark] = process_cpu(pid), time.perf_counter()
                elif kind == "llm_response":
                    if event["text"] != expected or position != len(expected):
                        raise RuntimeError(f"lost text: {position} chars of {len(expected)}")
                    if not ours:
                        break
                elif kind == "end_of_stream":
                    if event.get("status") != "completed" or position != len(expected):
                        raise RuntimeError(f"the turn ended early: {event}")
                    break
                elif kind == "error":
                    raise RuntimeError(f"error frame: {event}")
    return Window(cpu[last] - cpu[first], wall[last] - wall[first], last - first, frames, received)


class SdkAlone:
    """The ``bench.sdk_stream`` process: one streamed message per request."""

    def __init__(self, process: asyncio.subprocess.Process, words: int, skip: int) -> None:
        self.process = process
        self.words = words
        self.first, self.last = skip, words - skip

    @classmethod
    async def start(cls, words: int, pace: float, skip: int) -> SdkAlone:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.sdk_stream",
            "--words",
            str(words),
            "--pace",
            str(pace),
            "--marks",
            f"{skip},{words - skip}",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(process, words, skip)

    async def message(self, request: bytes = b"go") -> Window:
        """One message (``go``), or the pacing alone (``pace``)."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(request + b"\n")
        await stdin.drain()
        cpu: dict[int, float] = {}
        wall: dict[int, float] = {}
        async with asyncio.timeout(STREAM_TIMEOUT):
            while True:
                line = (await stdout.readline()).decode().split()
                if not line:
                    raise RuntimeError(f"the SDK process exited ({self.process.returncode})")
                if line[0] == "mark":
                    mark = int(line[1])
                    cpu[mark], wall[mark] = process_cpu(self.process.pid), time.perf_counter()
                elif line[0] == "done":
                    count = int(line[1])
                    break
        if count != self.words:
            raise RuntimeError(f"the SDK streamed {count} deltas, expected {self.words}")
        first, last = self.first, self.last
        return Window(cpu[last] - cpu[first], wall[last] - wall[first], last - first, count, count)

    async def stop(self) -> None:
        if self.process.returncode is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


def _side(windows: list[Window]) -> dict[str, Any]:
    deltas = sum(w.deltas for w in windows)
    return {
        "cpu_us_per_delta": 1e6 * sum(w.cpu for w in windows) / deltas,
        "cpu_us_per_delta_runs": [1e6 * w.cpu / w.deltas for w in windows],
        "ms_per_delta": 1e3 * sum(w.seconds for w in windows) / deltas,  # the real pace
        "deltas": sum(w.words for w in windows),
        "frames": sum(w.frames for w in windows),
        "one_frame_per_delta": all(w.frames == w.words for w in windows),
        "runs": len(windows),
    }


async def paced(
    directory: Path, url: str, *, rounds: int, words: int, pace: float, skip: int
) -> dict[str, Any]:
    ours_server = start_stream_server(url, directory, words, pace)
    raw_server = start_raw_server(directory, words, pace)
    sdk = await SdkAlone.start(words, pace, skip)
    sides: dict[str, list[Window]] = {"ours": [], "sdk_alone": [], "raw": [], "pacing": []}
    try:

        async def ours() -> Window:
            ws_url = ours_server.ws_url(uuid.uuid4().hex)
            return await socket_message(ws_url, ours_server.pid, words, skip, ours=True)

        async def raw() -> Window:
            return await socket_message(
                raw_server.ws_url("raw"), raw_server.pid, words, skip, ours=False
            )

        await ours()  # warm-up: imports, first transactions, the SDK's first run
        await sdk.message()
        await raw()
        for _ in range(rounds):  # interleaved, so drift hits all sides alike
            sides["ours"].append(await ours())
            sides["sdk_alone"].append(await sdk.message())
            sides["raw"].append(await raw())
            sides["pacing"].append(await sdk.message(b"pace"))
    finally:
        ours_server.stop()
        raw_server.stop()
        await sdk.stop()
    result: dict[str, Any] = {
        "words": words,
        "pace": pace,
        "window_deltas": words - 2 * skip,
        "rounds": rounds,
    }
    result |= {name: _side(windows) for name, windows in sides.items()}
    result["ratio"] = result["ours"]["cpu_us_per_delta"] / result["sdk_alone"]["cpu_us_per_delta"]
    result["ratio_rounds"] = [
        o.cpu / s.cpu for o, s in zip(sides["ours"], sides["sdk_alone"], strict=True)
    ]
    per_delta = {name: result[name]["cpu_us_per_delta"] for name in sides}
    result["floor_ratio"] = (
        per_delta["sdk_alone"] + per_delta["raw"] - per_delta["pacing"]
    ) / per_delta["sdk_alone"]
    return result


async def flat_out(directory: Path, url: str, *, runs: int, words: int) -> dict[str, Any]:
    skip = 0  # the whole message: its marks cannot be told apart flat out
    server = start_stream_server(url, directory, words, 0.0)
    sdk = await SdkAlone.start(words, 0.0, skip)
    sides: dict[str, list[Window]] = {"ours": [], "sdk_alone": []}
    try:
        await socket_message(server.ws_url(uuid.uuid4().hex), server.pid, words, skip, ours=True)
        await sdk.message()
        for _ in range(runs):
            ws_url = server.ws_url(uuid.uuid4().hex)
            sides["ours"].append(await socket_message(ws_url, server.pid, words, skip, ours=True))
            sides["sdk_alone"].append(await sdk.message())
    finally:
        server.stop()
        await sdk.stop()
    result: dict[str, Any] = {"words": words}
    for name, windows in sides.items():
        result[name] = _side(windows)
        result[name]["deltas_per_s"] = statistics.median(w.deltas / w.seconds for w in windows)
    return result


async def run(
    work_dir: Path,
    *,
    rounds: int = ROUNDS,
    words: int = WORDS,
    pace: float = PACE,
    flat_words: int = FLAT_WORDS,
    flat_runs: int = FLAT_RUNS,
) -> dict[str, Any]:
    directory = work_dir / "streaming"
    directory.mkdir()
    url = sqlite_url(directory)
    await migrate(url)
    skip = min(SKIP, words // 10)
    result = await paced(directory, url, rounds=rounds, words=words, pace=pace, skip=skip)
    if flat_runs:
        result["flat_out"] = await flat_out(directory, url, runs=flat_runs, words=flat_words)
    return result


if __name__ == "__main__":  # python -m bench.streaming: this benchmark alone, as JSON
    import json
    import tempfile

    from bench.common import quiet_logs, use_uvloop

    use_uvloop()
    with tempfile.TemporaryDirectory(prefix="switchboard-stream-") as tmp, quiet_logs():
        print(json.dumps(asyncio.run(run(Path(tmp))), indent=2))
