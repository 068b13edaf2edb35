"""Where does the server's time go? ``python -m bench.profile turn|stream [--seconds N]``

Starts a real server, attaches py-spy to it (from outside: the server runs unmodified),
drives turns (``turn``: the multi-agent turn back to back) or long messages streamed at
a real pace, one frame per delta (``stream``, as bench/streaming.py), then prints the functions with the largest share of the samples, inclusive
and self, and writes the collapsed stacks and a flame graph under ``bench/results/``.
Not part of ``make bench``: a profiled server is slower, its numbers are not results.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.common import RESULTS_DIR, Server, migrate, sqlite_url, start_switchboard, use_uvloop


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise SystemExit(
            "py-spy is not installed: `make bench` installs it (requirements-dev.lock)"
        )
    return found


def attach(pid: int, output: Path, fmt: str, rate: int) -> subprocess.Popen[bytes]:
    # --gil: sample only the thread holding the GIL, i.e. Python actually running (the
    # event loop waiting in epoll and aiosqlite's idle worker threads are left out).
    return subprocess.Popen(
        [
            py_spy(),
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(rate),
            "--gil",
            "--format",
            fmt,
            "--output",
            str(output),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _frame_name(frame: str) -> str:
    # "function (path/to/module.py:123)" -> "function (module.py)": lines split one function.
    name, _, where = frame.partition(" (")
    where = where.rstrip(")").rsplit(":", 1)[0]
    parts = Path(where).parts
    short = "/".join(parts[-2:]) if parts else where
    return f"{name} ({short})"


def summarise(collapsed: Path, top: int = 30) -> str:
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = [_frame_name(frame) for frame in stack.split(";")]
        total += count
        own[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count
    lines = [f"{total} samples of the thread holding the GIL", "", "inclusive %  function"]
    lines += [f"{100 * n / total:10.1f}   {name}" for name, n in inclusive.most_common(top)]
    lines += ["", "self %       function"]
    lines += [f"{100 * n / total:10.1f}   {name}" for name, n in own.most_common(top)]
    return "\n".join(lines)


async def drive_turns(server: Server, seconds: float) -> int:
    from bench.turn_overhead import socket_turn

    deadline = time.monotonic() + seconds
    turns = 0
    while time.monotonic() < deadline:
        await socket_turn(server)
        turns += 1
    return turns


async def drive_stream(server: Server, seconds: float) -> int:
    """Messages of bench.streaming's length at its pace (one frame per delta)."""
    from bench.streaming import SKIP, WORDS, socket_message

    deadline = time.monotonic() + seconds
    runs = 0
    while time.monotonic() < deadline:
        url = server.ws_url(f"profile-{runs}")
        await socket_message(url, server.pid, WORDS, SKIP, ours=True)
        runs += 1
    return runs


async def main(kind: str, seconds: float, rate: int, delay: float) -> None:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        url = sqlite_url(Path(tmp))
        await migrate(url)
        if kind == "turn":
            server = start_switchboard(url, Path(tmp), offline_delta_delay=delay)
        else:
            from bench.streaming import start_stream_server

            server = start_stream_server(url, Path(tmp))
        try:
            await (drive_turns if kind == "turn" else drive_stream)(server, 2)  # warm up
            collapsed = RESULTS_DIR / f"profile-{kind}.txt"
            spy = attach(server.pid, collapsed, "raw", rate)
            await asyncio.sleep(1.0)  # py-spy needs a moment to attach
            cpu_before, started = server.cpu_seconds(), time.monotonic()
            done = await (drive_turns if kind == "turn" else drive_stream)(server, seconds)
            wall = time.monotonic() - started
            cpu = server.cpu_seconds() - cpu_before
            spy.send_signal(subprocess.signal.SIGINT)
            spy.wait(30)
        finally:
            server.stop()
    print(
        f"{kind}: {done} runs in {wall:.1f} s, server CPU {cpu:.1f} s "
        f"({100 * cpu / wall:.0f}% of one core)\n"
    )
    print(summarise(collapsed))
    print(f"\ncollapsed stacks: {collapsed} (open with speedscope or flamegraph.pl)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("turn", "stream"))
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rate", type=int, default=200, help="samples per second")
    parser.add_argument(
        "--delay",
        type=float,
        default=0.0,
        help="turn: the offline model's seconds between streamed words",
    )
    args = parser.parse_args()
    use_uvloop()
    asyncio.run(main(args.kind, args.seconds, args.rate, args.delay))
