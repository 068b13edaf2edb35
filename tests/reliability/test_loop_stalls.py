"""A stall of the event loop is put down to the connector tool that caused it: the watchdog's
warning names the tool and its connector, and ``/metrics`` counts it under both
(``switchboard_loop_stalls_total``).

The plug-in is installed as a real distribution (its entry point is how the server learns
the connector's name) and its tool makes the mistake of issue 33: ``time.sleep`` in an
async tool. It holds the loop until the watchdog has spoken, so the test waits on that
warning, not on the clock.
"""

from __future__ import annotations

import importlib
import logging
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents.testing import ScriptedModel, assistant_message, function_call

from app.settings import Settings
from tests.support.clients import open_client
from tests.support.logs import CapturedLogs, capture_logs
from tests.support.models import scripted
from tests.support.servers import serve

PLUGIN = '''
import time

from agents import Agent

from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.tooling import connector_tool

# Set by the test: whether the tool may stop holding the loop.
may_return = lambda: True


@connector_tool(agent_name="Sleepy", side_effect=False)
async def nap(city: str) -> ToolResponse:
    """Waits out a vendor's rate limit, the synchronous way.

    Args:
        city: The city.
    """
    deadline = time.monotonic() + 60  # a broken build fails the test instead of hanging it
    while not may_return() and time.monotonic() < deadline:
        time.sleep(0.005)  # the mistake: a synchronous sleep on the event loop
    return ToolResponse("text", "Sleepy", "Nap", f"rested in {city}")


connector = Connector(
    name="sleepy",
    agent_name="Sleepy",
    display_name="Sleepy",
    build_agent=lambda settings: Agent(name="Sleepy", handoff_description="Naps", tools=[nap]),
    tool_descriptions={"nap": "Napping"},
    response_types=("text", "error"),
)
'''


@pytest.fixture
def sleepy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    site = tmp_path / "site"
    (site / "switchboard_sleepy").mkdir(parents=True)
    (site / "switchboard_sleepy" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    info = site / "switchboard_sleepy-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: switchboard-sleepy\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[switchboard.connectors]\nsleepy = switchboard_sleepy:connector\n"
    )
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield importlib.import_module("switchboard_sleepy")
    sys.modules.pop("switchboard_sleepy", None)


def stall_warnings(logs: list[CapturedLogs]) -> list[logging.LogRecord]:
    records = logs[0].at_least(logging.WARNING) if logs else []
    return [r for r in records if r.name == "switchboard.watchdog"]


def naming_nap(logs: list[CapturedLogs]) -> list[logging.LogRecord]:
    # Another stall on a loaded machine (outside the tool) may be reported too.
    return [r for r in stall_warnings(logs) if getattr(r, "tool", "") == "nap"]


@pytest.mark.blocking_allowed  # the tool blocks the loop: that is what is under test
async def test_a_stall_names_the_connector_and_tool_in_the_log_and_the_metrics(
    sleepy: Any, make_settings: Callable[..., Settings]
) -> None:
    captured: list[CapturedLogs] = []
    sleepy.may_return = lambda: bool(naming_nap(captured))
    model = ScriptedModel(
        [[function_call("nap", {"city": "Oslo"}, call_id="c1")], [assistant_message("Rested.")]]
    )
    settings = make_settings(loop_watchdog_seconds=0.2)
    async with serve(settings, hooks=(scripted(model, [sleepy.nap]),)) as live:
        assert "sleepy" in [c.name for c in live.services.connectors]
        with capture_logs(logging.WARNING) as logs:
            captured.append(logs)
            async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
                events = await client.turn("rest in Oslo")
        async with live.client() as http:
            metrics = (await http.get("/metrics")).text
    assert events[-2]["status"] == "completed"
    (warning,) = naming_nap(captured)
    message = warning.getMessage()
    assert message.startswith("event loop blocked for "), message
    assert " in tool nap of connector sleepy: nothing else runs" in message, message
    assert (warning.connector, warning.tool) == ("sleepy", "nap")  # type: ignore[attr-defined]
    assert 'switchboard_loop_stalls_total{connector="sleepy",tool="nap"} 1.0' in metrics, [
        line for line in metrics.splitlines() if "loop_stalls" in line
    ]
