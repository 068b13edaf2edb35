"""Containment: what a tool that returns 20 MB costs everyone else (issue 33, item 4).

A real ``switchboard serve`` process (SQLite, the offline model at its default pace, as
in the issue's measurement, approvals off) with one plug-in installed as pip would install it: ``fetch_big_page``
returns a 20 MB text (and the same text as its markdown card). Measured:

- another chat's turn ("search the web for asyncio", prompt to ``end_of_stream``), alone
  and while a turn of the 20 MB tool runs (started the moment that turn's ``tool_call``
  arrives);
- ``GET /healthz``, polled alone and during that turn: its slowest answer.

The client sends no keepalive pings (a server stalled for longer than the ping timeout
would otherwise lose the socket, and the stall would show as an error rather than a
figure). Each round is a fresh server process; the order of "alone" and "during" rotates from
round to round; the ratios are during / alone of the medians. Before the size cap, the
20 MB were fenced for the model on the event loop (``connectors.untrusted._fold``),
validated, stored and sent: 8 s during which no other chat and no HTTP request got an
answer.

    python -m bench.containment              # 5 rounds
    python -m bench.containment --rounds 3

``python -m bench`` runs it as ``containment``; the target: both ratios at most 1.5.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
from websockets.asyncio.client import connect

from bench.common import migrate, quiet_logs, sqlite_url, start_switchboard, use_uvloop

BIG_PROMPT = "fetch the big page"
OTHER_PROMPT = "search the web for asyncio"
TURN_TIMEOUT = 600.0  # before the size cap, one stall lasted minutes
SIZE = 20 * 1024 * 1024
TARGET = 1.5

PLUGIN = '''
from agents import Agent

from connectors.offline_hints import OfflineHints, ToolHints
from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.tooling import connector_tool

AGENT = "Pages"


@connector_tool(agent_name=AGENT, side_effect=False, timeout=60)
async def fetch_big_page(url: str) -> ToolResponse:
    """Fetch the big page.

    Args:
        url: The page's address.
    """
    body = "<p>lorem ipsum dolor sit amet</p>\\n" * ({size} // 33)
    return ToolResponse(
        "text", AGENT, "Big page", body, display_as=[{{"type": "markdown", "content": body}}]
    )


def build_agent(settings):
    return Agent(
        name=AGENT,
        handoff_description="Fetches the big page (web pages by address).",
        instructions="Fetch the page.",
        tools=[fetch_big_page],
    )


connector = Connector(
    name="pages",
    agent_name=AGENT,
    display_name="Pages",
    build_agent=build_agent,
    tool_descriptions={{"fetch_big_page": "Fetching the big page"}},
    response_types=("text", "error"),
    offline=OfflineHints(
        examples=("fetch the big page",),
        tools={{"fetch_big_page": ToolHints(examples=("fetch the big page",))}},
        capability="fetch the big page",
    ),
)
'''


def install_plugin(site: Path) -> None:
    """The plug-in as pip leaves it: a package and its ``.dist-info`` with the entry point."""
    package = site / "switchboard_pages"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(PLUGIN.format(size=SIZE)))
    info = site / "switchboard_pages-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: switchboard-pages\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[switchboard.connectors]\npages = switchboard_pages:connector\n"
    )


async def turn(ws: Any, text: str, started: asyncio.Event | None = None) -> tuple[float, int]:
    """Seconds from prompt to ``end_of_stream``, and the largest frame's size; ``started``
    is set when the turn's ``tool_call`` arrives."""
    began = time.perf_counter()
    largest = 0
    await ws.send(orjson.dumps({"type": "prompt", "text": text}).decode())
    async with asyncio.timeout(TURN_TIMEOUT):
        while True:
            frame = await ws.recv()
            largest = max(largest, len(frame))
            event = orjson.loads(frame)
            if event["type"] == "tool_call" and started is not None:
                started.set()
            if event["type"] == "end_of_stream":
                if event["status"] != "completed":
                    raise RuntimeError(f"turn ended {event['status']}: {event}")
                return time.perf_counter() - began, largest


async def slowest_health(http: httpx.AsyncClient, until: asyncio.Event) -> float:
    """The slowest ``/healthz`` answer, polled one after another until ``until`` is set."""
    slowest = 0.0
    while not until.is_set():
        began = time.perf_counter()
        response = await http.get("/healthz", timeout=TURN_TIMEOUT)
        response.raise_for_status()
        slowest = max(slowest, time.perf_counter() - began)
        await asyncio.sleep(0.02)
    return slowest


async def alone(server: Any) -> tuple[float, float]:
    """The other chat's turn and the slowest /healthz, with nothing else running."""
    async with (
        connect(
            server.ws_url(uuid.uuid4().hex), open_timeout=10, max_size=None, ping_interval=None
        ) as ws,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as http,
    ):
        done = asyncio.Event()
        health = asyncio.create_task(slowest_health(http, done))
        seconds, _ = await turn(ws, OTHER_PROMPT)
        await asyncio.sleep(0.2)  # a few more polls, as long as "during" polls after its turn
        done.set()
        return seconds, await health


async def during(server: Any) -> tuple[float, float, int]:
    """The same while the 20 MB tool's turn runs in another chat; and that turn's largest
    frame (what the page was sent)."""
    async with (
        connect(
            server.ws_url(uuid.uuid4().hex), open_timeout=10, max_size=None, ping_interval=None
        ) as big,
        connect(
            server.ws_url(uuid.uuid4().hex), open_timeout=10, max_size=None, ping_interval=None
        ) as ws,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as http,
    ):
        started, done = asyncio.Event(), asyncio.Event()
        big_turn = asyncio.create_task(turn(big, BIG_PROMPT, started))
        await asyncio.wait_for(started.wait(), TURN_TIMEOUT)
        health = asyncio.create_task(slowest_health(http, done))
        seconds, _ = await turn(ws, OTHER_PROMPT)
        _, largest = await big_turn
        done.set()
        return seconds, await health, largest


async def one_round(work: Path, order: tuple[str, ...]) -> dict[str, Any]:
    url = sqlite_url(work)
    await migrate(url)
    server = _start(url, work)
    measured: dict[str, Any] = {}
    try:
        async with connect(
            server.ws_url(uuid.uuid4().hex), open_timeout=10, max_size=None, ping_interval=None
        ) as ws:
            await turn(ws, OTHER_PROMPT)  # warm up: first imports, first queries
        for side in order:
            if side == "alone":
                measured["alone_turn"], measured["alone_health"] = await alone(server)
            else:
                turn_s, health_s, largest = await during(server)
                measured.update(during_turn=turn_s, during_health=health_s, largest=largest)
    finally:
        server.stop()
    return measured


def _start(url: str, work: Path) -> Any:
    import os

    site = work / "site"
    install_plugin(site)
    path = os.pathsep.join(filter(None, (str(site), os.environ.get("PYTHONPATH"))))
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = path  # the server process inherits it
    try:
        return start_switchboard(url, work)
    finally:
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous


async def run(work_dir: Path, rounds: int = 5) -> dict[str, Any]:
    """For ``python -m bench``: the medians over ``rounds`` fresh servers, and the ratios."""
    results = []
    for n in range(rounds):
        directory = work_dir / f"containment-{n}"
        directory.mkdir()
        order = ("alone", "during") if n % 2 == 0 else ("during", "alone")
        results.append(await one_round(directory, order))

    def median(key: str) -> float:
        return statistics.median(result[key] for result in results)

    return {
        "rounds": rounds,
        "tool_result_chars": SIZE,
        "other_turn_alone_s": median("alone_turn"),
        "other_turn_during_s": median("during_turn"),
        "turn_ratio": median("during_turn") / median("alone_turn"),
        "healthz_alone_s": median("alone_health"),
        "healthz_during_s": median("during_health"),
        "healthz_ratio": median("during_health") / median("alone_health"),
        "largest_frame_bytes": max(result["largest"] for result in results),
        "target_ratio": TARGET,
    }


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as directory, quiet_logs():
        result = await run(Path(directory), rounds)
    print(
        f"another chat's turn: {result['other_turn_alone_s']:.2f} s alone, "
        f"{result['other_turn_during_s']:.2f} s during the 20 MB tool "
        f"({result['turn_ratio']:.2f}x); slowest /healthz: "
        f"{1000 * result['healthz_alone_s']:.0f} ms alone, "
        f"{1000 * result['healthz_during_s']:.0f} ms during ({result['healthz_ratio']:.2f}x); "
        f"largest frame sent: {result['largest_frame_bytes']:,} bytes",
        flush=True,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    use_uvloop()
    asyncio.run(main(args.rounds))
