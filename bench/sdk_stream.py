"""The SDK alone streaming the bench message, in its own process: the streaming baseline.

    python -m bench.sdk_stream --words N --pace S --marks A,B

For every ``go`` line read on stdin it runs ``Runner.run_streamed`` once with the bench
model (``bench.long_model``: N deltas, S seconds apart) and reads the stream as a server
must, every event; no socket, no storage. After delta number A and B (1-based; 0 is the
start) it writes ``mark A`` / ``mark B`` on stdout, and ``done <deltas>`` at the end: the
parent reads this process's CPU time at each mark, exactly as it reads the server's when
its client receives those deltas (bench/streaming.py). A ``pace`` line runs the pacing
alone instead: N sleeps of S seconds, what waiting for each delta costs any process on
this machine. On uvloop, as the server is.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from agents import Agent, RunConfig, Runner

from bench.common import use_uvloop
from bench.long_model import LongMessageProvider


async def stream_once(config: RunConfig, agent: Agent, marks: frozenset[int]) -> int:
    result = Runner.run_streamed(agent, input="stream a long answer", run_config=config)
    count = 0
    write = sys.stdout.write
    if 0 in marks:
        write("mark 0\n")
        sys.stdout.flush()
    async for event in result.stream_events():
        if getattr(getattr(event, "data", None), "type", "") == "response.output_text.delta":
            count += 1
            if count in marks:
                write(f"mark {count}\n")
                sys.stdout.flush()
    return count


async def pacing_only(words: int, pace: float, marks: frozenset[int]) -> int:
    for count in range(words + 1):
        if count in marks:
            sys.stdout.write(f"mark {count}\n")
            sys.stdout.flush()
        if count < words:
            await asyncio.sleep(pace)
    return words


async def serve(words: int, pace: float, marks: frozenset[int]) -> None:
    agent = Agent(name="Switchboard", instructions="Answer.")
    config = RunConfig(model_provider=LongMessageProvider(words, pace), tracing_disabled=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        if line.strip() == b"pace":
            count = await pacing_only(words, pace, marks)
        else:
            count = await stream_once(config, agent, marks)
        sys.stdout.write(f"done {count}\n")
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, required=True)
    parser.add_argument("--pace", type=float, default=0.0)
    parser.add_argument("--marks", default="", help="comma-separated delta numbers")
    args = parser.parse_args()
    marks = frozenset(int(mark) for mark in args.marks.split(",") if mark)
    use_uvloop()
    asyncio.run(serve(args.words, args.pace, marks))


if __name__ == "__main__":
    main()
