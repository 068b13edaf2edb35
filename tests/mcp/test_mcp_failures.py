"""A crashed, killed, hung or unreachable MCP server: a ``tool_error`` or ``tool_timeout``
card (never a failed turn), then the connection comes back by itself."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents.testing import ScriptedModel, assistant_message, function_call

from connectors.mcp.tools import arguments_schema, invoke
from connectors.tool_result import ToolResult
from tests.mcp.test_mcp_turns import of_type, run_turn, script
from tests.support.clients import open_client
from tests.support.logs import capture_logs
from tests.support.mcp import (
    TOKEN,
    Notes,
    is_running,
    notes_server,
    pid_in,
    python_without_mcp,
    stdio_entry,
)
from tests.support.servers import LiveServer
from tests.support.waiting import wait_until

SECRET = "env-secret-0d9f3a6e21"


def connection(live: LiveServer, name: str = "notes") -> Any:
    assert live.services.mcp is not None
    return live.services.mcp.connections[name]


async def reconnected(live: LiveServer, generation: int) -> None:
    """Wait until the notes server is connected again, as connection ``generation``."""
    notes = connection(live)
    await wait_until(
        lambda: notes.state == "connected" and notes.generation >= generation,
        what=f"the notes server to be connected again (connection {generation})",
    )


async def call_tool(notes_connection: Any, name: str, arguments: dict[str, Any]) -> ToolResult:
    """Call ``name`` as the agent's tool does (its timeout, its error cards)."""
    [tool] = [tool for tool in notes_connection.tools if tool.name == name]
    return await invoke(
        notes_connection, "Notes", tool, arguments_schema(tool), json.dumps(arguments)
    )


def look_up_again(model: ScriptedModel, answer: str = "Tuesdays.") -> None:
    model.extend(
        [
            [function_call("transfer_to_notes", {}, call_id=f"handoff_{uuid.uuid4().hex[:6]}")],
            [function_call("look_up", {"query": "deploys"}, call_id="call_look_up_2")],
            [assistant_message(answer)],
        ]
    )


async def test_a_crash_mid_call_is_a_tool_error_then_the_server_is_back(
    notes: Notes, app: Callable[..., Any]
) -> None:
    model = script(("crash", {}), answer="The notes server crashed; try again.")
    async with app({"notes": notes.entry}, model=model) as live:
        first_pid = notes.pid()
        events = await run_turn(live, "crash the notes server")
        if notes.http is not None:  # nobody restarts a remote server but its operator
            await notes.http.start()
        await reconnected(live, generation=2)
        look_up_again(model)
        after = await run_turn(live, "when do we deploy?")

    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response_type"] == "error"
    message = shown["output"]["error_message"]
    if notes.http is None:  # read-only: run once more on the restarted server, which crashed
        assert message.startswith("Error: the Notes server stopped while running crash (")
        assert message.endswith(
            "and again when it was run once more after a restart, so it was given up"
        )
    else:  # nobody restarted it before the call gave up waiting
        assert message.startswith("Error: Notes is unavailable (")
    [error] = of_type(events, "error")
    assert error["code"] == "tool_error"  # a tool's failure, not the model's
    assert error["retryable"] is False and "try again" not in message
    assert events[-2]["status"] == "completed"
    assert of_type(after, "error") == []
    assert "Tuesdays" in of_type(after, "tool_output")[0]["output"]["display_as"][0]["content"]
    assert notes.pid() != first_pid


async def test_a_killed_stdio_server_is_restarted_before_the_next_call(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    model = ScriptedModel([])
    async with (
        notes_server("stdio", tmp_path) as notes,
        app({"notes": notes.entry}, model=model) as live,
    ):
        first_pid = notes.pid()
        notes.kill()
        # Noticed without any call: its change subscription dropped.
        await reconnected(live, generation=2)
        look_up_again(model)
        events = await run_turn(live, "when do we deploy?")

    assert of_type(events, "error") == []
    assert notes.pid() not in (None, first_pid)


async def test_a_call_made_at_once_after_a_crash_runs_on_the_restarted_server(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    async with (
        notes_server("stdio", tmp_path, timeout=60) as notes,
        app({"notes": notes.entry}) as live,
    ):
        notes_connection = connection(live)
        first_pid = notes.pid()
        notes.kill()
        # Before the loss is noticed: the call is sent to a dead process, and as the tool
        # only reads, it is run again once the server is back.
        assert notes_connection.state == "connected"
        result = await call_tool(notes_connection, "look_up", {"query": "deploys"})
        assert notes_connection.generation == 2

    assert result["response_type"] == "mcp_result"
    assert "Tuesdays" in result["display_as"][0]["content"]
    assert notes.pid() not in (None, first_pid)


async def test_a_turn_right_after_a_crash_waits_for_the_restart(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    model = ScriptedModel([])
    async with (
        notes_server("stdio", tmp_path, timeout=60) as notes,
        app({"notes": notes.entry}, model=model) as live,
    ):
        first_pid = notes.pid()
        notes.kill()
        look_up_again(model)
        events = await run_turn(live, "when do we deploy?")

    assert of_type(events, "error") == []
    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response_type"] == "mcp_result"
    assert notes.pid() not in (None, first_pid)


async def test_a_write_the_crash_interrupted_is_not_run_again(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    model = script(("archive_all", {}), ("look_up", {"query": "deploys"}), answer="It crashed.")
    async with (
        notes_server("stdio", tmp_path, timeout=60) as notes,
        app({"notes": notes.entry}, model=model) as live,
    ):
        first_pid = notes.pid()
        events = await run_turn(live, "archive every note")

    archived, looked_up = of_type(events, "tool_output")
    message = archived["output"]["error_message"]
    assert message.startswith("Error: the Notes server stopped while running archive_all (")
    assert message.endswith(
        "so it may or may not have done it; it was not run again. Check before asking for it again"
    )
    [error] = of_type(events, "error")
    assert error["code"] == "tool_error" and error["retryable"] is False
    # The next call of the turn waited for the restart.
    assert looked_up["output"]["response_type"] == "mcp_result"
    assert notes.pid() not in (None, first_pid)
    assert events[-2]["status"] == "completed"


async def test_a_remote_server_that_is_down_is_unavailable_until_it_is_back(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    model = script(("look_up", {"query": "deploys"}), answer="Notes is down.")
    async with (
        notes_server("http", tmp_path) as notes,
        app({"notes": notes.entry}, model=model) as live,
    ):
        assert notes.http is not None
        notes.kill()
        await wait_until(lambda: connection(live).state == "failed", what="the loss noticed")
        down = await run_turn(live, "when do we deploy?")
        await notes.http.start()
        await reconnected(live, generation=2)
        look_up_again(model)
        back = await run_turn(live, "when do we deploy?")

    [error] = of_type(down, "error")
    assert error["code"] == "tool_error"
    message = of_type(down, "tool_output")[0]["output"]["error_message"]
    assert message.startswith("Error: Notes is unavailable (")
    assert message.endswith("Switchboard keeps reconnecting to it in the background")
    assert down[-2]["status"] == "completed"
    assert of_type(back, "error") == []


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_hanging_tool_is_a_retryable_tool_timeout(
    transport: str, tmp_path: Path, app: Callable[..., Any]
) -> None:
    model = script(("hang", {}), ("look_up", {"query": "deploys"}), answer="It timed out.")
    async with (
        notes_server(transport, tmp_path, timeout=1) as notes,
        app({"notes": notes.entry}, model=model) as live,
    ):
        events = await run_turn(live, "run the hanging tool")
        generation = connection(live).generation

    hang, look_up = of_type(events, "tool_output")
    assert hang["output"]["error_message"].startswith("Error: hang did not answer within 1 seconds")
    errors = of_type(events, "error")
    assert len(errors) == 1, [(e["code"], e["message"]) for e in errors]
    assert errors[0]["code"] == "tool_timeout" and errors[0]["retryable"] is True
    # The server itself still answers: the next call in the same turn works.
    assert look_up["output"]["response_type"] == "mcp_result"
    assert generation == 1
    assert events[-2]["status"] == "completed"


async def test_a_hung_server_is_a_tool_timeout_and_is_restarted(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    model = script(("look_up", {"query": "deploys"}), answer="Notes hung.")
    async with (
        notes_server("stdio", tmp_path, timeout=1) as notes,
        app({"notes": notes.entry}, model=model) as live,
    ):
        hung = notes.pid()
        assert hung is not None
        os.kill(hung, signal.SIGSTOP)  # alive, answering nothing
        try:
            events = await run_turn(live, "when do we deploy?")
            await reconnected(live, generation=2)  # its ping went unanswered
        finally:
            if is_running(hung):
                os.kill(hung, signal.SIGKILL)
        look_up_again(model)
        after = await run_turn(live, "when do we deploy?")

    [error] = of_type(events, "error")
    assert error["code"] == "tool_timeout"
    assert of_type(after, "error") == []
    assert notes.pid() != hung


async def test_a_server_that_cannot_start_is_reported_and_the_rest_is_served(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    servers = {
        "broken": {"command": "/nonexistent/notes-server", "env": {"TOKEN": SECRET}},
        "notes": stdio_entry(tmp_path / "notes.pid"),
    }
    with capture_logs(logging.INFO) as logs:
        async with app(servers) as live:
            assert live.services.mcp is not None
            status = {s.name: s for s in live.services.mcp.status()}
            events = await run_turn(live, "ask Notes to look up deploys")

    assert status["broken"].state == "failed" and status["broken"].tools == ()
    assert status["broken"].reason == "the command was not found (/nonexistent/notes-server)"
    assert status["notes"].state == "connected"
    [line] = [
        r.getMessage() for r in logs.errors() if r.getMessage().startswith("MCP server 'broken'")
    ]
    assert line.startswith("MCP server 'broken' unavailable: the command was not found")
    assert of_type(events, "tool_output")[0]["output"]["response_type"] == "mcp_result"
    assert SECRET not in logs.describe(logs.records)


async def test_a_server_that_exits_at_start_says_why_in_its_last_stderr_lines(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    script = tmp_path / "notes_server.py"
    script.write_text("from mcp.server.mcpserver import MCPServer\n")
    python = python_without_mcp(tmp_path / "bin")
    async with app({"notes": {"command": str(python), "args": [str(script)]}}) as live:
        reason = connection(live).reason
        async with live.client() as http:
            [listed] = [
                c
                for c in (await http.get("/api/connectors")).json()["connectors"]
                if c["name"] == "notes"
            ]

    assert reason.startswith(
        "the connection closed (the server exited or crashed); its last lines on stderr: "
        "Traceback (most recent call last): / "
    )
    assert reason.endswith(" / ModuleNotFoundError: No module named 'mcp'")
    assert listed["server"] == {"state": "failed", "reason": reason}


STDERR = r"""
import sys
for n in range(3):
    print(f"starting {n}", file=sys.stderr)
print("\x1b[31mred\x1b[0m and \u202ereversed\x07", file=sys.stderr)
print("token=" + sys.argv[1], file=sys.stderr)
print("x" * 5_000, file=sys.stderr)
sys.stderr.write("no newline at the end")
sys.exit(1)
"""


async def test_a_server_s_stderr_is_bounded_and_cleaned_before_it_is_shown(
    app: Callable[..., Any],
) -> None:
    entry = {"command": sys.executable, "args": ["-c", STDERR, SECRET], "env": {"TOKEN": SECRET}}
    with capture_logs(logging.INFO) as logs:
        async with app({"notes": entry}) as live:
            reason = connection(live).reason

    base = "the connection closed (the server exited or crashed); its last lines on stderr: "
    assert reason.startswith(base)
    lines = reason.removeprefix(base).split(" / ")
    assert lines == [
        "starting 2",
        "red and reversed",
        "token=***",
        "x" * 299 + "…",
        "no newline at the end",
    ]
    logged = logs.describe(logs.records)
    assert "MCP server 'notes' stderr: starting 0" in logged  # every line, in the log
    assert SECRET not in logged


async def test_a_wrong_token_fails_the_connection_without_showing_the_token(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    wrong = "wrong-token-4c2d8e"
    async with notes_server("http", tmp_path) as notes:
        assert notes.http is not None
        with capture_logs(logging.DEBUG) as logs:
            async with app({"notes": notes.http.entry(token=wrong)}) as live:
                state, reason = connection(live).state, connection(live).reason

    assert state == "failed"
    assert reason.startswith("it answered with an HTTP error status (check its url and headers")
    assert wrong not in reason and TOKEN not in reason
    assert wrong not in logs.describe(logs.records)


async def test_shutdown_stops_the_stdio_server(tmp_path: Path, app: Callable[..., Any]) -> None:
    async with notes_server("stdio", tmp_path) as notes, app({"notes": notes.entry}) as live:
        pid = notes.pid()
        assert pid is not None and is_running(pid)
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            await client.send({"type": "ping"})
            await client.until("pong")

    assert not is_running(pid)


async def test_a_server_whose_name_is_taken_is_refused_and_stopped(
    tmp_path: Path, app: Callable[..., Any]
) -> None:
    pid_file = tmp_path / "search.pid"
    async with app({"search": stdio_entry(pid_file)}) as live:
        [failed] = [
            f for f in live.services.failed_connectors if f.origin == "SWITCHBOARD_MCP_SERVERS"
        ]
        search = connection(live, "search")
        await wait_until(lambda: search.state == "stopped", what="the refused server stopped")
        served = [c for c in live.services.connectors if c.name == "search"]

    assert failed.name == "search" and "already taken" in failed.reason
    assert [c.agent_name for c in served] == ["Search"]  # the built-in, untouched
    pid = pid_in(pid_file)
    assert pid is not None and not is_running(pid)
