"""app.agui.routes' event stream: keep-alive comments while a run is quiet, and a run whose
turn died without ending it still ends, with RUN_ERROR."""

from __future__ import annotations

import asyncio
import json

from ag_ui.core import RunFinishedEvent
from ag_ui.encoder import EventEncoder

from app.agui.events import RunEvents
from app.agui.routes import KEEPALIVE, LOST, _events
from app.agui.service import Run


def new_run() -> Run:
    return Run(RunEvents("t1", "r1", "Switchboard", {}, {}))


async def test_a_quiet_run_sends_keepalives_then_its_events() -> None:
    run = new_run()
    run.task = asyncio.create_task(asyncio.Event().wait())  # the turn, still running
    stream = _events(run, EventEncoder(), keepalive=0.01)
    assert await anext(stream) == KEEPALIVE
    run.queue.put_nowait(RunFinishedEvent(thread_id="t1", run_id="r1"))
    run.queue.put_nowait(None)
    assert json.loads((await anext(stream))[len("data: ") :])["type"] == "RUN_FINISHED"
    assert [chunk async for chunk in stream] == []
    run.task.cancel()


async def test_a_turn_that_dies_without_ending_the_run_ends_it_with_run_error() -> None:
    run = new_run()

    async def crashed() -> None:
        return None  # ended without calling the plan's finish hook

    run.task = asyncio.create_task(crashed())
    await run.task
    chunks = [chunk async for chunk in _events(run, EventEncoder(), keepalive=0.01)]
    [event] = [json.loads(chunk[len("data: ") :]) for chunk in chunks]
    assert event == {"type": "RUN_ERROR", "message": LOST, "code": "server_error"}
