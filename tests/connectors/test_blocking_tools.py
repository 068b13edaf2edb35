"""``connector_tool(..., blocking=True)``: synchronous client code in a worker thread.

The tools here are declared as a plug-in would declare them; the end-to-end tests run them
in the real server (uvicorn, the SDK runner, the socket) with the SDK's ``ScriptedModel``
standing in for the model service. A blocking tool waits on a ``threading.Event`` the test
controls, so "the tool is still running" is a fact, not a guess about timing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from agents import FunctionTool, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

from app.settings import Settings
from connectors.blocking import MAX_BLOCKING_CALLS, run_blocking
from connectors.responses import AccountNeeded, ToolResponse
from connectors.tooling import NeedsAccount, ToolError, connector_tool
from tests.support.clients import open_client
from tests.support.logs import CapturedLogs, capture_logs
from tests.support.models import scripted
from tests.support.servers import serve
from tests.support.waiting import DEADLINE, wait_until

AGENT = "Vendor"
SECRET = "sk-vendor-0123456789abcdef"


async def invoke(tool: FunctionTool, **arguments: Any) -> Any:
    payload = json.dumps(arguments)
    context = ToolContext(None, tool_name=tool.name, tool_call_id="c1", tool_arguments=payload)
    # wait_for: a broken tool fails the test instead of hanging it.
    return await asyncio.wait_for(tool.on_invoke_tool(context, payload), DEADLINE)


# --- declaring: the schema is the sync function's; the wrong kind is refused ---


def vendor_forecast(city: str, days: int = 3) -> ToolResponse:
    """Daily forecast from the vendor's synchronous SDK.

    Args:
        city: The city, e.g. "Oslo".
        days: How many days, 1-7.
    """
    where = threading.current_thread().name
    return ToolResponse("text", AGENT, "Forecast", f"{days} days of {city}, from {where}")


async def test_the_schema_and_description_are_the_sync_functions() -> None:
    tool = connector_tool(vendor_forecast, agent_name=AGENT, blocking=True, side_effect=False)
    plain = function_tool(vendor_forecast)  # what the SDK makes of the function itself
    assert tool.name == plain.name == "vendor_forecast"
    assert tool.description == plain.description
    assert tool.description == "Daily forecast from the vendor's synchronous SDK."
    assert tool.params_json_schema == plain.params_json_schema
    properties = tool.params_json_schema["properties"]
    assert properties["city"]["description"] == 'The city, e.g. "Oslo".'
    assert properties["days"]["description"] == "How many days, 1-7."


async def test_a_blocking_tool_runs_in_a_worker_thread() -> None:
    tool = connector_tool(vendor_forecast, agent_name=AGENT, blocking=True, side_effect=False)
    output = await invoke(tool, city="Oslo", days=2)
    assert output["response_type"] == "text"
    assert output["response"].startswith("2 days of Oslo, from switchboard-blocking ")
    assert threading.current_thread().name not in output["response"]


def test_a_sync_tool_without_blocking_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError) as refused:
        connector_tool(vendor_forecast, agent_name=AGENT)
    message = str(refused.value)
    assert "vendor_forecast must be an async function" in message
    assert "`async def`" in message and "connector_tool(..., blocking=True)" in message


def test_an_async_tool_declared_blocking_is_refused() -> None:
    async def async_forecast(city: str) -> ToolResponse:
        """Forecast."""
        return ToolResponse("text", AGENT, "Forecast", city)

    with pytest.raises(TypeError) as refused:
        connector_tool(async_forecast, agent_name=AGENT, blocking=True)
    message = str(refused.value)
    assert "async_forecast is an async function but is declared blocking=True" in message
    assert "drop blocking=True" in message


# --- errors: exactly what the same code gives as an async tool ---

CARD = AccountNeeded(AGENT, "vendor")


def behave(kind: str) -> Any:
    if kind == "tool_error":
        raise ToolError("no forecast for Atlantis; try a real city", debug_info={"status": 404})
    if kind == "needs_account":
        raise NeedsAccount(CARD)
    if kind == "unexpected":
        raise ConnectionError(f"https://vendor.example/?key={SECRET} unreachable")
    if kind == "invalid_dict":
        return {"response_type": "text"}
    if kind == "not_a_response":
        return 42
    return {"response_type": "text", "agent_name": AGENT, "friendly_name": "Ok", "response": "ok"}


@connector_tool(agent_name=AGENT, name="twin", blocking=True, side_effect=False)
def blocking_twin(kind: str) -> ToolResponse:
    """Behave as told, from a thread.

    Args:
        kind: What to do.
    """
    return behave(kind)  # type: ignore[no-any-return]


@connector_tool(agent_name=AGENT, name="twin", side_effect=False)
async def async_twin(kind: str) -> ToolResponse:
    """Behave as told, on the loop.

    Args:
        kind: What to do.
    """
    return behave(kind)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "kind", ["tool_error", "needs_account", "unexpected", "invalid_dict", "not_a_response", "ok"]
)
async def test_errors_are_handled_as_for_an_async_tool(kind: str) -> None:
    with capture_logs(logging.ERROR) as logs:
        from_thread = await invoke(blocking_twin, kind=kind)
        thread_logs = [record.getMessage() for record in logs.errors()]
        from_loop = await invoke(async_twin, kind=kind)
    loop_logs = [record.getMessage() for record in logs.errors()][len(thread_logs) :]
    assert from_thread == from_loop
    assert thread_logs == loop_logs
    assert SECRET not in json.dumps(from_thread)
    expected = {
        "tool_error": "Error: no forecast for Atlantis; try a real city",
        "unexpected": "Error: twin failed unexpectedly; try again later or try something else",
        "invalid_dict": "Error: twin returned an invalid result; try another way",
        "not_a_response": "Error: twin returned an invalid result; try another way",
    }
    if kind in expected:
        assert from_thread["error_message"] == expected[kind]
    elif kind == "needs_account":
        assert from_thread == dict(CARD.to_dict())
    else:
        assert from_thread["response"] == "ok"
    if kind == "unexpected":  # the stack trace goes to the server log, as for async tools
        record = logs.errors()[0]
        assert record.getMessage() == "tool twin failed (turn None)" and record.exc_info


# --- the thread limit ---


async def test_calls_past_the_thread_limit_wait_for_a_free_thread() -> None:
    releases = [threading.Event() for _ in range(MAX_BLOCKING_CALLS + 1)]
    entered: list[int] = []

    def held(index: int) -> int:
        entered.append(index)
        releases[index].wait(DEADLINE)
        return index

    calls = [
        asyncio.create_task(run_blocking(AGENT, held, index)) for index in range(len(releases))
    ]
    try:
        await wait_until(
            lambda: len(entered) == MAX_BLOCKING_CALLS, what="every thread to be in use"
        )
        last = MAX_BLOCKING_CALLS
        assert last not in entered, "the call past the limit got a thread of its own"
        releases[0].set()
        assert await calls[0] == 0
        await wait_until(lambda: last in entered, what="the waiting call to get the freed thread")
    finally:
        for release in releases:
            release.set()
    assert await asyncio.gather(*calls) == list(range(len(releases)))


def hung_vendor_tool(release: threading.Event, entered: list[str]) -> FunctionTool:
    @connector_tool(agent_name="HangingAgent", blocking=True, side_effect=False)
    def hanging_lookup(city: str) -> ToolResponse:
        """Look a city up with a vendor SDK whose server never answers.

        Args:
            city: The city.
        """
        entered.append(city)
        release.wait(DEADLINE)
        return ToolResponse("text", "HangingAgent", "Lookup", city)

    return hanging_lookup


async def test_one_connectors_hung_calls_leave_another_connectors_threads_free() -> None:
    # A plug-in whose vendor hangs fills every thread of its pool; another connector's
    # blocking tool still gets a thread at once and answers.
    release = threading.Event()
    entered: list[str] = []
    hanging = hung_vendor_tool(release, entered)
    forecast = connector_tool(vendor_forecast, agent_name=AGENT, blocking=True, side_effect=False)
    hung = [
        asyncio.create_task(invoke(hanging, city=f"city {n}")) for n in range(MAX_BLOCKING_CALLS)
    ]
    try:
        await wait_until(
            lambda: len(entered) == MAX_BLOCKING_CALLS, what="the hung plug-in's pool to be full"
        )
        output = await invoke(forecast, city="Oslo", days=1)
        assert output["response"].startswith("1 days of Oslo, from switchboard-blocking ")
        assert not any(call.done() for call in hung), "a hung call ended before it was released"
    finally:
        release.set()
    assert [o["response"] for o in await asyncio.gather(*hung)] == [
        f"city {n}" for n in range(MAX_BLOCKING_CALLS)
    ]


# --- end to end: the real server ---


@dataclass
class Gate:
    """Holds a blocking tool inside its call until the test releases it."""

    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    left: threading.Event = field(default_factory=threading.Event)


def held_lookup(gate: Gate, *, timeout: float | None = None) -> FunctionTool:
    @connector_tool(agent_name=AGENT, blocking=True, side_effect=False, timeout=timeout)
    def slow_vendor_lookup(city: str) -> ToolResponse:
        """Look a city up with a vendor SDK that blocks its thread.

        Args:
            city: The city.
        """
        gate.entered.set()
        try:
            if not gate.release.wait(DEADLINE):
                raise ToolError("the test never released the call")
            return ToolResponse("text", AGENT, "Lookup", f"Found {city}")
        finally:
            gate.left.set()

    return slow_vendor_lookup


def lookup_then_answer(answer: str) -> ScriptedModel:
    return ScriptedModel(
        [
            [function_call("slow_vendor_lookup", {"city": "Oslo"}, call_id="c1")],
            [assistant_message(answer)],
        ]
    )


async def test_a_blocked_tool_does_not_stop_the_server_answering(
    make_settings: Callable[..., Settings],
) -> None:
    gate = Gate()
    model = lookup_then_answer("Found Oslo.")
    hook = scripted(model, [held_lookup(gate)])
    async with serve(make_settings(), hooks=(hook,)) as live:
        try:
            async with open_client(live.ws_url(uuid.uuid4().hex)) as client, live.client() as http:
                await client.send({"type": "prompt", "text": "look up Oslo"})
                await wait_until(gate.entered.is_set, what="the tool to be inside its call")
                for path in ("/healthz", "/readyz"):
                    response = await http.get(path)
                    assert response.status_code == 200, (path, response.text)
                assert not gate.left.is_set(), "the server answered only once the tool returned"
                gate.release.set()
                events = await client.decide_until_end()
        finally:
            gate.release.set()
    output = next(e for e in events if e["type"] == "tool_output")["output"]
    assert output["response"] == "Found Oslo"
    assert events[-1]["status"] == "completed"


async def test_a_blocking_tool_past_its_timeout_is_a_retryable_tool_timeout(
    make_settings: Callable[..., Settings],
) -> None:
    gate = Gate()
    model = lookup_then_answer("The lookup timed out.")
    hook = scripted(model, [held_lookup(gate, timeout=0.2)])
    async with serve(make_settings(), hooks=(hook,)) as live:
        try:
            with capture_logs(logging.INFO) as logs:
                async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
                    events = await client.turn("look up Oslo")
                assert gate.entered.is_set() and not gate.left.is_set()  # it still runs
                gate.release.set()
                # The thread ran on; it ends once released, and says so.
                late = await wait_until(
                    lambda: thread_ended(logs), what="the abandoned thread's end logged"
                )
        finally:
            gate.release.set()
    types = [e["type"] for e in events]
    assert types[:4] == ["user_prompt", "tool_call", "tool_output", "error"], types
    output = events[2]["output"]
    assert output["response_type"] == "error"
    assert output["error_message"].startswith("Error: slow_vendor_lookup timed out")
    assert (events[3]["code"], events[3]["retryable"]) == ("tool_timeout", True)
    assert events[-2]["status"] == "completed"
    assert "timed out" in str(model.calls[1].input)  # the model was told, and went on
    warned = [r.getMessage() for r in logs.at_least(logging.WARNING)]
    assert any(
        m.startswith("tool slow_vendor_lookup timed out after 0.2s")
        and m.endswith("its worker thread cannot be stopped and finishes in the background")
        for m in warned
    ), warned
    assert late.endswith("its caller gone (returned)"), late


def thread_ended(logs: CapturedLogs) -> str:
    """The log line of the abandoned thread's end; "" before it ends."""
    return next(
        (
            r.getMessage()
            for r in logs.records
            if r.getMessage().startswith("blocking call held_lookup.<locals>.slow_vendor_lookup")
        ),
        "",
    )


@pytest.mark.blocking_allowed  # the tool blocks the loop: that is what is under test
async def test_the_watchdog_names_a_sync_call_in_an_async_tool(
    make_settings: Callable[..., Settings],
) -> None:
    # The mistake blocking=True exists for: a sync call inside an async tool. The server's
    # watchdog (started by its lifespan) reports it, naming the tool's function.
    captured: list[CapturedLogs] = []

    def reported(logs: list[CapturedLogs]) -> list[list[str]]:
        """The stacks of the watchdog's warnings so far."""
        records = logs[0].at_least(logging.WARNING) if logs else []
        return [
            [line.strip() for line in r.getMessage().split("last):\n", 1)[1].splitlines()]
            for r in records
            if r.name == "switchboard.watchdog"
        ]

    def naming_the_tool(logs: list[CapturedLogs]) -> list[list[str]]:
        """Those whose innermost frames are the tool's (past it, at most the check it was
        making): another stall on a loaded machine may be reported first."""
        return [
            stack
            for stack in reported(logs)
            if any(line.endswith(" careless_lookup") for line in stack[-3:])
        ]

    @connector_tool(agent_name=AGENT, side_effect=False)
    async def careless_lookup(city: str) -> ToolResponse:
        """Look a city up, blocking the event loop.

        Args:
            city: The city.
        """
        deadline = time.monotonic() + DEADLINE
        while not naming_the_tool(captured) and time.monotonic() < deadline:  # until it speaks
            time.sleep(0.005)  # noqa: ASYNC251 - the very mistake under test
        return ToolResponse("text", AGENT, "Lookup", f"Found {city}")

    model = ScriptedModel(
        [
            [function_call("careless_lookup", {"city": "Oslo"}, call_id="c1")],
            [assistant_message("Found Oslo.")],
        ]
    )
    settings = make_settings(loop_watchdog_seconds=0.2)
    async with serve(settings, hooks=(scripted(model, [careless_lookup]),)) as live:
        with capture_logs(logging.WARNING) as logs:
            captured.append(logs)
            async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
                events = await client.turn("look up Oslo")
    assert events[-2]["status"] == "completed"
    named = naming_the_tool(captured)
    assert len(named) == 1, reported(captured)
    tool_line = next(line for line in named[0] if line.endswith(" careless_lookup"))
    assert tool_line.startswith(f"{__file__}:"), tool_line
