"""6. Approvals: from the person's Approve to the tool's output, against the bare SDK.

The other benchmarks run with approvals off (``bench.common.switchboard_env``): they
measure a turn, not a person. This one runs the default policy, where the multi-agent
prompt's ``send_google_email`` pauses. Per round, on a real ``switchboard serve`` over a
socket: the prompt, then ``approval_required``; the clock starts when the ``approval`` frame
is sent and stops at the ``tool_output`` of that call (the email sent) and at
``end_of_stream``. What that covers: the decision's transaction, restoring the stored
``RunState``, running the tool, persisting and publishing its output.

The baseline is the SDK's own resume in this process, with nothing stored: the paused
result's ``to_state()``, ``approve``, ``Runner.run_streamed(agent, state)`` up to the
tool's output. Rounds interleave both sides.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from agents import RunConfig, Runner
from websockets.asyncio.client import connect

from app.llm.offline import OfflineModelProvider
from app.settings import load_settings
from bench.common import (
    PROMPT,
    Server,
    migrate,
    postgres_schema,
    sqlite_url,
    start_switchboard,
    summary,
)
from connectors.context import ChatContext, DemoStore
from connectors.orchestrator import build_orchestrator
from connectors.registry import load_connectors

TIMEOUT = 30.0
ROUND = 5


async def socket_round(server: Server) -> tuple[float, float]:
    """Seconds from the approval frame to the call's ``tool_output``, and to the end."""
    async with connect(server.ws_url(uuid.uuid4().hex), open_timeout=10) as ws:
        await ws.send(orjson.dumps({"type": "prompt", "text": PROMPT}).decode())
        started = to_output = None
        async with asyncio.timeout(TIMEOUT):
            while True:
                event = orjson.loads(await ws.recv())
                kind = event["type"]
                if kind == "approval_required":
                    call_id = event["call_id"]
                    started = time.perf_counter()
                    await ws.send(
                        orjson.dumps(
                            {
                                "type": "approval",
                                "decision": "approve",
                                "approval_id": event["approval_id"],
                            }
                        ).decode()
                    )
                elif kind == "tool_output" and started is not None and event["call_id"] == call_id:
                    to_output = time.perf_counter() - started
                elif kind == "end_of_stream":
                    if started is None or to_output is None or event["status"] != "completed":
                        raise RuntimeError(f"the approval round went wrong: {event}")
                    return to_output, time.perf_counter() - started


class BareResume:
    """The SDK's own pause and resume, in process, with the same agents and model."""

    def __init__(self) -> None:
        self.settings = load_settings()  # the default policy: the send pauses
        connectors = load_connectors(self.settings)
        self.orchestrator = build_orchestrator(self.settings, connectors)
        self.demo = DemoStore()
        self.run_config = RunConfig(
            model_provider=OfflineModelProvider(connectors=connectors), tracing_disabled=True
        )

    async def one(self, index: int) -> float:
        context = ChatContext(
            user_id="bench",
            chat_id=f"bare{index}",
            turn_id=str(index),
            settings=self.settings,
            demo=self.demo.for_user("bench"),
        )
        result = Runner.run_streamed(
            self.orchestrator, input=PROMPT, context=context, run_config=self.run_config
        )
        async for _ in result.stream_events():
            pass
        [item] = result.interruptions
        started = time.perf_counter()
        state = result.to_state()
        state.approve(item)
        resumed = Runner.run_streamed(self.orchestrator, state, run_config=self.run_config)
        elapsed = None
        async for event in resumed.stream_events():
            if getattr(event, "name", None) == "tool_output" and elapsed is None:
                elapsed = time.perf_counter() - started
        if elapsed is None:
            raise RuntimeError("the bare resume ran no tool")
        return elapsed


async def measure(server: Server, bare: BareResume, count: int, warmup: int) -> dict[str, Any]:
    for index in range(warmup):
        await socket_round(server)
        await bare.one(-index - 1)
    to_output: list[float] = []
    to_end: list[float] = []
    baseline: list[float] = []
    for round_start in range(0, count, ROUND):
        for _ in range(ROUND):
            output, end = await socket_round(server)
            to_output.append(output)
            to_end.append(end)
        baseline += [await bare.one(round_start + i) for i in range(ROUND)]
    result: dict[str, Any] = {
        "to_tool_output": summary(to_output),
        "to_end_of_stream": summary(to_end),
        "bare": summary(baseline),
    }
    result["ratio_p50"] = result["to_tool_output"]["p50"] / result["bare"]["p50"]
    return result


async def run(
    work_dir: Path, *, postgres_url: str | None, count: int = 30, warmup: int = 3
) -> list[dict[str, Any]]:
    rows = []
    targets = [("sqlite", None)] + ([("postgresql", postgres_url)] if postgres_url else [])
    for engine, pg in targets:
        directory = work_dir / f"approval-{engine}"
        directory.mkdir()
        if pg is None:
            url = sqlite_url(directory)
            await migrate(url)
            rows.append({"engine": engine, **await _one_engine(url, directory, count, warmup)})
        else:
            async with postgres_schema(pg) as url:
                rows.append({"engine": engine, **await _one_engine(url, directory, count, warmup)})
    return rows


async def _one_engine(url: str, directory: Path, count: int, warmup: int) -> dict[str, Any]:
    server = start_switchboard(url, directory, offline_delta_delay=0, approvals="side_effects")
    try:
        return await measure(server, BareResume(), count, warmup)
    finally:
        server.stop()
