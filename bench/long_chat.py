"""Long chats: the server's CPU per turn along one chat of many turns (docs/memory.md).

One chat on a real ``switchboard serve`` process (SQLite, the offline model answering at
once, approvals off), turn after turn over one socket: the bench prompt (a Yelp search
and an email), a question without tools, a web search, in turn. The server's CPU for each
turn (prompt to its ``suggested_prompts``) is read from ``/proc``; the table compares the
mean of turns 10–29 with later windows, for a small context (the history is summarised
and stays bounded) and for one too large to ever summarise (the whole history each turn,
as before the chat memory).

    python -m bench.long_chat                 # 500 turns, contexts 8000 and 10000000
    python -m bench.long_chat --turns 200 --contexts 8000

``python -m bench`` runs it as ``long_chat`` (500 turns, the 8,000-token context only):
issue 21's target is CPU per turn at turns 480-499 within 1.2x of turns 10-29.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import uuid
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import connect

from bench.common import PROMPT, migrate, quiet_logs, sqlite_url, start_switchboard, use_uvloop

PROMPTS = (
    PROMPT,
    "what should I keep in mind when I travel to Boston?",
    "search the web for asyncio",
)
TURN_TIMEOUT = 60.0
FIRST = (10, 30)  # the window every later one is compared with


async def one_turn(ws: object, text: str) -> None:
    send, recv = ws.send, ws.recv  # type: ignore[attr-defined]
    await send(orjson.dumps({"type": "prompt", "text": text}).decode())
    ended = False
    async with asyncio.timeout(TURN_TIMEOUT):
        while True:
            event = orjson.loads(await recv())
            if event["type"] == "end_of_stream":
                if event["status"] != "completed":
                    raise RuntimeError(f"turn ended {event['status']}")
                ended = True
            elif ended and event["type"] == "suggested_prompts":
                return


async def chat_cpu(work: Path, context: int, turns: int) -> list[float]:
    """The server's CPU seconds of each turn of one chat of ``turns`` turns."""
    url = sqlite_url(work)
    await migrate(url)
    server = start_switchboard(url, work, offline_delta_delay=0, model_context_tokens=context)
    cpu: list[float] = []
    try:
        async with connect(server.ws_url(uuid.uuid4().hex), open_timeout=10, max_size=None) as ws:
            for n in range(turns):
                before = server.cpu_seconds()
                await one_turn(ws, PROMPTS[n % len(PROMPTS)])
                cpu.append(server.cpu_seconds() - before)
    finally:
        server.stop()
    return cpu


def windows(cpu: list[float]) -> list[tuple[str, float]]:
    turns = len(cpu)
    spans = [FIRST, (turns // 2 - 10, turns // 2 + 10), (turns - 20, turns)]
    return [(f"{a}-{b - 1}", 1000 * sum(cpu[a:b]) / (b - a)) for a, b in spans]


async def run(work_dir: Path, turns: int = 500, context: int = 8000) -> dict[str, Any]:
    """For ``python -m bench``: the windows of one chat with a context that summarises."""
    directory = work_dir / f"long-chat-{context}"
    directory.mkdir()
    measured = windows(await chat_cpu(directory, context, turns))
    first, last = measured[0][1], measured[-1][1]
    return {
        "turns": turns,
        "context_tokens": context,
        "windows_ms": dict(measured),
        "ratio_last_to_first": last / first,
    }


async def main(turns: int, contexts: list[int]) -> None:
    for context in contexts:
        with tempfile.TemporaryDirectory() as directory, quiet_logs():
            cpu = await chat_cpu(Path(directory), context, turns)
        measured = windows(cpu)
        first = measured[0][1]
        cells = ", ".join(f"turns {name}: {ms:.1f} ms ({ms / first:.2f}x)" for name, ms in measured)
        print(f"context {context} tokens: server CPU per turn, {cells}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--contexts", default="8000,10000000")
    args = parser.parse_args()
    if args.turns < 40:
        parser.error("--turns must be at least 40 (the first window is turns 10-29)")
    use_uvloop()
    asyncio.run(main(args.turns, [int(c) for c in args.contexts.split(",")]))
