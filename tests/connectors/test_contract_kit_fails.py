"""The contract kit fails the connectors it should: each flawed plug-in below breaks one rule
and the matching kit test must reject it, with a message that shows the values behind the
failure (so the kit's passes over the built-ins mean something)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from agents import Agent, RunContextWrapper, function_tool

from connectors.context import ChatContext
from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.service_http import ServiceHttp, shared_client
from connectors.testing import ConnectorContract
from connectors.tooling import ToolError, connector_tool

ROOT = Path(__file__).resolve().parents[2]
LISTENER_URL = "http://127.0.0.1:9"  # set by the test that runs uses_a_sync_sdk


def plugin(
    tool: Any,
    response_types: tuple[str, ...] = ("flawed_result", "error"),
    needs_account: bool = False,
    descriptions: dict[str, str] | None = None,
) -> Connector:
    return Connector(
        name="flawed",
        agent_name="Flawed",
        display_name="Flawed",
        build_agent=lambda settings: Agent[ChatContext](
            name="Flawed", handoff_description="Checks flawed things.", tools=[tool]
        ),
        tool_descriptions=descriptions if descriptions is not None else {tool.name: "Checking"},
        response_types=response_types,
        needs_account=needs_account,
    )


def result(query: str) -> ToolResponse:
    return ToolResponse("flawed_result", "Flawed", "Result", {"query": query})


# ----------------------------------------------------------------------------- flawed tools


@connector_tool(agent_name="Flawed", side_effect=False)
async def undeclared(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Answers a response type its connector does not declare.

    Args:
        query: Anything.
    """
    return ToolResponse("surprise", "Flawed", "Surprise", {"query": query})


@connector_tool(agent_name="Flawed", side_effect=False)
async def ignores_accounts(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Never checks whether the user is connected.

    Args:
        query: Anything.
    """
    return result(query)


@connector_tool(agent_name="Flawed", side_effect=False)
async def leaky(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """A live client that puts its key in the error text.

    Args:
        query: Anything.
    """
    key = ctx.context.settings.connector_options.get("flawed", {}).get("api_key", "")
    if ctx.context.settings.connector_mode("flawed") == "live":
        http = ServiceHttp.for_settings(
            shared_client(ctx.context.http, "Flawed"), "Flawed", ctx.context.settings
        )
        base = ctx.context.settings.connector_options["flawed"]["base_url"]
        response = await http.send("GET", f"{base}/x")
        raise ToolError(f"HTTP {response.status_code} with key {key}")
    return result(query)


@connector_tool(agent_name="Flawed", side_effect=False)
async def no_docstring(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    return result(query)


@connector_tool(agent_name="Flawed", side_effect=False)
async def no_parameter_description(
    ctx: RunContextWrapper[ChatContext], query: str, limit: int = 3
) -> ToolResponse:
    """Documents the tool but not its parameters."""
    return result(query)


@connector_tool(agent_name="Flawed")
async def no_side_effect(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Says nothing about what it changes.

    Args:
        query: Anything.
    """
    return result(query)


@connector_tool(agent_name="Flawed", side_effect=False)
async def invalid_result(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Returns a dict that is not a ToolResponse.

    Args:
        query: Anything.
    """
    return {"answer": query, "response_type": 42}  # type: ignore[return-value]


@function_tool
async def plain_string(ctx: RunContextWrapper[ChatContext], query: str) -> str:
    """A plain SDK tool that answers a string, not a ToolResponse.

    Args:
        query: Anything.
    """
    return f"plain {query}"


plain_string.switchboard_side_effect = False  # type: ignore[attr-defined]


@connector_tool(agent_name="Flawed", side_effect=False)
async def hangs(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Waits for something that never comes.

    Args:
        query: Anything.
    """
    await asyncio.Event().wait()
    return result(query)


@connector_tool(agent_name="Flawed", side_effect=False)
async def raises(ctx: RunContextWrapper[ChatContext], item_id: str) -> ToolResponse:
    """Looks an item up, and crashes on every id.

    Args:
        item_id: The item's id.
    """
    raise KeyError(item_id)


@connector_tool(agent_name="Flawed", side_effect=False)
async def refuses(ctx: RunContextWrapper[ChatContext], item_id: str) -> ToolResponse:
    """Looks an item up; knows only the item "known".

    Args:
        item_id: The item's id.
    """
    if item_id != "known":
        raise ToolError(f"no item with id {item_id!r}; list the items first")
    return result(item_id)


@connector_tool(agent_name="Flawed", side_effect=False)
async def sleeps(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Waits for a vendor's rate limit the synchronous way (issue 33: it froze every chat).

    Args:
        query: Anything.
    """
    time.sleep(15)  # noqa: ASYNC251 - the mistake under test (line: SLEEP_LINE)
    return result(query)


def vendor_sdk_get(url: str) -> bytes:
    """A vendor SDK's synchronous HTTP call: a blocking socket on the caller's thread."""
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:  # (line: CONNECT_LINE)
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        return sock.recv(1024)


@connector_tool(agent_name="Flawed", side_effect=False)
async def uses_a_sync_sdk(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Calls a vendor's synchronous SDK from async code.

    Args:
        query: Anything.
    """
    vendor_sdk_get(LISTENER_URL)  # (line: SDK_CALL_LINE)
    return result(query)


@connector_tool(agent_name="Flawed", side_effect=False, blocking=True)
def sleeps_in_a_thread(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Waits for a vendor's rate limit in its worker thread, as blocking=True allows.

    Args:
        query: Anything.
    """
    time.sleep(0.01)
    return result(query)


@connector_tool(agent_name="Flawed", side_effect=False)
async def computes_too_long(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Holds the loop with pure computation, which no detector of blocking calls sees.

    Args:
        query: Anything.
    """
    until = time.monotonic() + 0.5
    while time.monotonic() < until:
        pass
    return result(query)


def line_of(marker: str) -> int:
    """The line of this file that carries ``(line: marker)``."""
    lines = Path(__file__).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if f"(line: {marker})" in line)


# ----------------------------------------------------------------------------- contracts


class UndeclaredContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(undeclared, ("error",))


class MissingProgressTextContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(ignores_accounts, descriptions={})


class IgnoresAccountsContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(
        ignores_accounts, ("flawed_result", "account_needed", "error"), needs_account=True
    )


class LeakyContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(leaky, ("flawed_result", "account_needed", "error"))
    live_settings: ClassVar[dict[str, Any] | None] = {
        "connector_options": {
            "flawed": {"base_url": "{base_url}", "api_key": "flawed-secret-key-42"}
        }
    }


class NoDocstringContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(no_docstring)


class NoParameterDescriptionContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(no_parameter_description)


class NoSideEffectContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(no_side_effect)


class InvalidResultContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(invalid_result)
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {"invalid_result": {"query": "q-7"}}


class PlainStringContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(plain_string)
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {"plain_string": {"query": "q-8"}}


class HangsContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(hangs)
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {"hangs": {"query": "q-9"}}
    generated_examples: ClassVar[int] = 0
    tool_timeout_seconds: ClassVar[float] = 0.5


class RaisesContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(raises)


class RefusesContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(refuses)


class RefusesAllowedContract(RefusesContract):
    errors_allowed_for_generated: ClassVar[frozenset[str] | set[str]] = {"refuses"}


class RefusesWithSampleContract(RefusesContract):
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {"refuses": {"item_id": "known"}}


class RefusesItsSampleContract(RefusesContract):
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {"refuses": {"item_id": "other"}}


class SleepsContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(sleeps)
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {"sleeps": {"query": "q-10"}}
    generated_examples: ClassVar[int] = 0


class SyncSdkContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(uses_a_sync_sdk)
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {"uses_a_sync_sdk": {"query": "q"}}
    generated_examples: ClassVar[int] = 0


class SleepsInAThreadContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(sleeps_in_a_thread)


class ComputesTooLongContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(computes_too_long)
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {"computes_too_long": {"query": "q"}}
    generated_examples: ClassVar[int] = 0
    tool_timeout_seconds: ClassVar[float] = 0.2


# ----------------------------------------------------------------------------- the tests


async def failure(test: Any) -> str:
    with pytest.raises(AssertionError) as raised:
        await test()
    return str(raised.value)


async def test_an_undeclared_response_type_fails() -> None:
    message = await failure(UndeclaredContract().test_every_tool_returns_a_valid_tool_response)
    assert "does not declare in response_types ['error']" in message
    assert "'surprise'" in message and '"response_type": "surprise"' in message


async def test_a_tool_without_a_progress_text_fails() -> None:
    message = await failure(MissingProgressTextContract().test_metadata_is_complete)
    assert "tool_descriptions lacks ['ignores_accounts']" in message


async def test_a_connector_that_ignores_disconnection_fails() -> None:
    message = await failure(IgnoresAccountsContract().test_not_connected_returns_the_connect_card)
    assert "ignores_accounts (demo, disconnected) answered 'flawed_result'" in message
    assert '"response": {"query": "test"}' in message  # the answer itself


async def test_a_secret_in_an_error_fails() -> None:
    message = await failure(LeakyContract().test_client_failures_become_error_responses)
    assert "leaked a secret (flaw… from live_settings" in message
    assert 'leaky (service HTTP 503, arguments {"query": "test"})' in message
    assert '"error_message": "Error: HTTP 503 with key flawed-secret-key-42"' in message


async def test_a_tool_without_a_docstring_fails_saying_where_to_add_it() -> None:
    message = await failure(NoDocstringContract().test_every_tool_is_documented)
    assert "no_docstring has no description: add a docstring to `async def no_docstring(...)`" in (
        message
    )
    assert f"({__file__}:" in message  # where the function is
    # Without a docstring, its parameter is undocumented too.
    assert "parameter 'query' of no_docstring has no description" in message


async def test_a_parameter_without_a_description_fails_naming_it() -> None:
    message = await failure(NoParameterDescriptionContract().test_every_tool_is_documented)
    assert "2 problems" in message
    for parameter in ("query", "limit"):
        assert f"parameter {parameter!r} of no_parameter_description has no description" in (
            message
        )
        assert f"Args:\n          {parameter}: <what it is" in message
    assert "- no_parameter_description has no description" not in message


async def test_a_tool_without_a_side_effect_declaration_fails() -> None:
    message = await failure(NoSideEffectContract().test_every_tool_is_documented)
    assert "no_side_effect does not declare whether it has side effects" in message
    assert "@connector_tool(..., side_effect=False)" in message
    assert "side_effect=True if it sends, pays, writes or deletes" in message


async def test_an_invalid_result_fails_with_the_arguments_and_the_log() -> None:
    message = await failure(InvalidResultContract().test_every_tool_returns_a_valid_tool_response)
    assert 'invalid_result called with {"query": "q-7"} returned an invalid result' in message
    assert "the tool logged" in message and "invalid ToolResponse dict" in message


async def test_a_result_that_is_not_a_tool_response_dict_fails() -> None:
    message = await failure(PlainStringContract().test_every_tool_returns_a_valid_tool_response)
    assert 'plain_string called with {"query": "q-8"} returned str' in message
    assert '"plain q-8"' in message


async def test_a_hanging_tool_fails_within_the_kit_timeout() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    message = await failure(HangsContract().test_every_tool_returns_a_valid_tool_response)
    # Its own timeout is the settings' 60 s: the kit's 0.5 s is what ended the call.
    assert loop.time() - started < 30
    assert 'hangs called with {"query": "q-9"} did not answer within 0.5 s' in message
    assert "tool_timeout_seconds" in message


async def test_a_tool_that_sleeps_on_the_loop_fails_naming_the_call_and_its_line() -> None:
    message = await failure(SleepsContract().test_every_tool_returns_a_valid_tool_response)
    assert 'sleeps called with {"query": "q-10"} blocked the event loop' in message
    assert f"time.sleep at {__file__}:{line_of('SLEEP_LINE')} in sleeps" in message
    assert "blocking=True" in message and "asyncio.sleep" in message


async def test_a_sync_sdk_call_fails_naming_the_socket_call_and_the_tools_line() -> None:
    server = await asyncio.start_server(lambda reader, writer: writer.close(), "127.0.0.1", 0)
    global LISTENER_URL
    LISTENER_URL = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        message = await failure(SyncSdkContract().test_every_tool_returns_a_valid_tool_response)
    finally:
        server.close()
    # The socket call where the standard library makes it, and the way there from the tool.
    assert "blocked the event loop:\n  socket.socket.connect at " in message, message
    tool_line = f"{__file__}:{line_of('SDK_CALL_LINE')} in uses_a_sync_sdk"
    helper_line = f"{__file__}:{line_of('CONNECT_LINE')} in vendor_sdk_get"
    assert f"in create_connection, from {tool_line} -> {helper_line}\n" in message, message
    assert message.count(" at ") == 1, "one blocking call, named once"


async def test_a_blocking_true_tool_may_block_its_own_thread() -> None:
    await SleepsInAThreadContract().test_every_tool_returns_a_valid_tool_response()


async def test_a_tool_that_holds_the_loop_past_the_limit_fails() -> None:
    # Its timeout's timer cannot fire while it computes: it answers, late, and still fails.
    message = await failure(ComputesTooLongContract().test_every_tool_returns_a_valid_tool_response)
    assert 'computes_too_long called with {"query": "q"} did not answer within 0.2 s' in message
    assert "held the event loop for " in message


async def test_a_tool_that_raises_on_generated_arguments_fails() -> None:
    message = await failure(RaisesContract().test_every_tool_returns_a_valid_tool_response)
    assert "(generated" not in message  # a crash is a crash, whatever the input
    assert 'raises called with {"item_id": ' in message and "raised KeyError" in message
    assert "raise connectors.tooling.ToolError(" in message
    assert "the tool logged" in message and "[KeyError:" in message


async def test_an_error_card_for_generated_arguments_fails_and_says_how_to_allow_it() -> None:
    message = await failure(RefusesContract().test_every_tool_returns_a_valid_tool_response)
    assert 'refuses called with {"item_id": ' in message
    assert "(generated from its JSON schema) answered an error card: Error: no item" in message
    assert '"error_message": "Error: no item with id' in message  # the card itself
    assert "errors_allowed_for_generated = {'refuses'}" in message
    assert "sample_arguments = {'refuses': {...}}" in message


async def test_declared_refusals_and_a_working_sample_pass() -> None:
    await RefusesAllowedContract().test_every_tool_returns_a_valid_tool_response()
    await RefusesWithSampleContract().test_every_tool_returns_a_valid_tool_response()


async def test_a_sample_that_fails_fails_even_when_generated_errors_are_allowed() -> None:
    message = await failure(
        RefusesItsSampleContract().test_every_tool_returns_a_valid_tool_response
    )
    assert (
        'refuses called with {"item_id": "other"} (its sample_arguments) answered an error card'
        in message
    )


async def test_generated_arguments_are_the_same_on_every_run() -> None:
    from connectors.testing import generated_arguments

    schema = refuses.params_json_schema
    first = generated_arguments(schema, 4)
    assert first == generated_arguments(schema, 4)
    assert len(first) == 4 and all(set(args) == {"item_id"} for args in first)


# ----------------------------------------------------------------------------- under pytest

HANGING_PLUGIN = '''
import asyncio
from typing import ClassVar

from agents import Agent, RunContextWrapper

from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.testing import ConnectorContract
from connectors.tooling import connector_tool


@connector_tool(agent_name="Stuck", side_effect=False)
async def wait_forever(ctx: RunContextWrapper, ticket: str) -> ToolResponse:
    """Waits on a queue nobody fills.

    Args:
        ticket: The ticket to wait for.
    """
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


class TestStuckContract(ConnectorContract):
    connector: ClassVar[Connector] = Connector(
        name="stuck",
        agent_name="Stuck",
        display_name="Stuck",
        build_agent=lambda settings: Agent(
            name="Stuck", handoff_description="Waits.", tools=[wait_forever]
        ),
        tool_descriptions={"wait_forever": "Waiting"},
        response_types=("stuck", "error"),
    )
    sample_arguments = {"wait_forever": {"ticket": "T-1234"}}
    generated_examples = 1
    tool_timeout_seconds = 1.0
'''


def test_pytest_fails_a_hanging_plugin_in_time_and_shows_the_call(tmp_path: Path) -> None:
    """A connector author's own pytest run: the kit's tests are collected from the subclass,
    the hanging tool fails them (it does not hang the run) and the report shows the call."""
    (tmp_path / "test_stuck.py").write_text(HANGING_PLUGIN)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-o", "asyncio_mode=auto", "--rootdir", str(tmp_path), "test_stuck.py"]
    finished = subprocess.run(
        command,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,  # bounds a broken kit; a working one takes seconds
    )
    report = finished.stdout + finished.stderr
    assert finished.returncode == 1, report
    # Both tests that call its tools fail, each within the kit's second per call.
    assert "2 failed, 2 passed, 1 skipped" in report, report
    for test in ("test_every_tool_returns_a_valid_tool_response", "test_not_connected_returns"):
        assert f"FAILED test_stuck.py::TestStuckContract::{test}" in report
    assert 'wait_forever called with {"ticket": "T-1234"} did not answer within 1.0 s' in report
