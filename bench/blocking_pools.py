"""Blocking calls and the event loop (issue 33 items 6 and 7), before and after, side by side.

    python -m bench.blocking_pools --before /tmp/loop-before [--after .] [--rounds 3]

``--before`` and ``--after`` are checkouts (worktrees) of the two commits; each side runs
in a fresh process of its own (``python -m bench.blocking_pools side``, that checkout first
on ``sys.path``), the order rotating from round to round, default GC in both, and the
figures are the medians over the rounds. Two measurements per side:

- **Another connector beside a hung plug-in** (item 7): plug-in A's ``blocking=True`` tool
  is called ``HUNG`` (16) times and hangs (its vendor never answers: a
  ``threading.Event`` never set while measuring); meanwhile connector B's instant
  ``blocking=True`` tool is called ``CALLS`` times one after the other, each under a 1 s
  tool timeout. Reported: how many of B's calls answered, and their latency (p50/max).
- **Another chat beside a synchronous sleep on the loop** (item 6): an async tool calls
  ``time.sleep(SLEEP)`` while another task ("the other chat") wakes every 10 ms; the
  longest it waited past its wake-up time is how long every chat of the server froze.
  CPython cannot pre-empt a running synchronous call, so no runtime change shortens it:
  this is a floor, the same on both sides. What changes is that the contract kit now
  fails such a tool (tests/connectors/test_contract_kit_fails.py) and the watchdog names it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agents.tool_context import ToolContext

# The checkout's own (``side`` runs with it first on sys.path).
from connectors.responses import ToolResponse
from connectors.tooling import connector_tool

HUNG = 16  # the old shared pool's size: one plug-in's hung calls fill it
CALLS = 10
TOOL_TIMEOUT = 1.0
SLEEP = 2.0
TICK = 0.01


async def _invoke(tool: Any, **arguments: Any) -> Any:
    payload = json.dumps(arguments)
    context = ToolContext(None, tool_name=tool.name, tool_call_id="c", tool_arguments=payload)
    return await tool.on_invoke_tool(context, payload)


async def beside_hung_plugin() -> dict[str, Any]:
    release = threading.Event()
    entered = threading.Semaphore(0)

    def hanging(query: str) -> ToolResponse:
        """Hangs.

        Args:
            query: Anything.
        """
        entered.release()
        release.wait(120)
        return ToolResponse("text", "Hanging", "Hung", query)

    def instant(query: str) -> ToolResponse:
        """Answers at once.

        Args:
            query: Anything.
        """
        return ToolResponse("text", "Instant", "Done", query)

    hung_tool = connector_tool(hanging, agent_name="Hanging", blocking=True, side_effect=False)
    instant_tool = connector_tool(
        instant, agent_name="Instant", blocking=True, side_effect=False, timeout=TOOL_TIMEOUT
    )
    hung = [asyncio.create_task(_invoke(hung_tool, query=str(n))) for n in range(HUNG)]
    for _ in range(HUNG):  # every hung call holds its thread before B is measured
        await asyncio.to_thread(entered.acquire)
    answered, latencies = 0, []
    for n in range(CALLS):
        started = time.perf_counter()
        output = await _invoke(instant_tool, query=str(n))
        latencies.append(time.perf_counter() - started)
        answered += output.get("response_type") == "text"
    release.set()
    await asyncio.gather(*hung)
    return {
        "answered": answered,
        "calls": CALLS,
        "p50_ms": statistics.median(latencies) * 1000,
        "max_ms": max(latencies) * 1000,
    }


async def beside_a_sleeping_tool() -> dict[str, Any]:
    async def sleepy(query: str) -> ToolResponse:
        """Sleeps the synchronous way.

        Args:
            query: Anything.
        """
        time.sleep(SLEEP)  # noqa: ASYNC251 - what is measured
        return ToolResponse("text", "Sleepy", "Slept", query)

    tool = connector_tool(sleepy, agent_name="Sleepy", side_effect=False, timeout=60)
    stop = asyncio.Event()
    late: list[float] = []

    async def other_chat() -> None:
        while not stop.is_set():
            due = time.perf_counter() + TICK
            await asyncio.sleep(TICK)
            late.append(time.perf_counter() - due)

    chat = asyncio.create_task(other_chat())
    await asyncio.sleep(0.1)
    await _invoke(tool, query="q")
    await asyncio.sleep(0.1)
    stop.set()
    await chat
    return {"sleep_s": SLEEP, "other_chat_max_stall_ms": max(late) * 1000}


def side() -> None:
    result = {
        "hung_plugin": asyncio.run(beside_hung_plugin()),
        "sleeping_tool": asyncio.run(beside_a_sleeping_tool()),
    }
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="compare", choices=("compare", "side"))
    parser.add_argument("--before", type=Path)
    parser.add_argument("--after", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    if options.mode == "side":
        return side()
    if options.before is None:
        parser.error("--before: a checkout of the commit to compare with")
    # bench/blocking_pools.py may not exist in the older checkout: run this one there.
    sides = {"before": options.before.resolve(), "after": options.after.resolve()}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for round_ in range(options.rounds):
        order = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
        for name in order:
            results[name].append(run_side_with_this_script(sides[name]))
    print(f"{'':34}{'before':>14}{'after':>14}")
    for label, pick in (
        ("B's calls answered (of 10)", lambda r: r["hung_plugin"]["answered"]),
        ("B's latency p50 (ms)", lambda r: r["hung_plugin"]["p50_ms"]),
        ("B's latency max (ms)", lambda r: r["hung_plugin"]["max_ms"]),
        (
            f"other chat's stall, sleep {SLEEP:g} s (ms)",
            lambda r: r["sleeping_tool"]["other_chat_max_stall_ms"],
        ),
    ):
        values = [statistics.median(pick(r) for r in results[name]) for name in sides]
        print(f"{label:34}{values[0]:>14.1f}{values[1]:>14.1f}")
    print(json.dumps(results))


def run_side_with_this_script(code: Path) -> dict[str, Any]:
    """``side`` of this very script, importing the checkout's ``connectors``."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, __file__, "side"],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the side in {code} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


if __name__ == "__main__":
    main()
