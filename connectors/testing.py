"""The connector contract kit: what every connector must do, as pytest tests.

A connector author subclasses ``ConnectorContract`` in a test module::

    from connectors.testing import ConnectorContract
    from switchboard_weather import connector

    class TestWeatherContract(ConnectorContract):
        connector = connector
        sample_arguments = {"get_weather_forecast": {"city": "Boston", "days": 3}}
        live_settings = {"connector_options": {"weather": {"base_url": "{base_url}"}}}

and runs ``pytest`` (with ``pytest-asyncio`` installed). The inherited tests check that:

- the connector's metadata is whole: the agent has its declared name, every tool has a
  progress text, the response types include ``error`` (and the connect card's type when
  the connector needs a per-user account);
- in demo mode every tool returns a valid ToolResponse dict with a declared
  ``response_type``, its ``to_plain_text`` rendering works (and is what the model reads),
  and a tool called with the author's ``sample_arguments`` does not fail;
- a connector that ``needs_account`` answers every tool with its "Connect" card once the
  user has disconnected it (demo), or has not connected it (live);
- in live mode, when the service fails (an HTTP 503 from every request, or a connection
  refused), every tool answers with an ``error`` ToolResponse whose text starts with
  ``Error`` and holds no secret. ``live_settings`` are ``ConnectorSettings`` overrides that point
  the live client at the failing server: ``{base_url}`` in any string is replaced by its
  URL. ``live_credentials`` are stored for connectors that need an account.

Everything is real: a migrated SQLite database in a temporary directory, the real
``AccountRepository``, the app's HTTP client, the Agents SDK's own tool invocation.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from agents import FunctionTool
from agents.tool_context import ToolContext
from cryptography.fernet import Fernet, MultiFernet

from connectors.accounts import demo_credentials, demo_meta
from connectors.adapters import ACCOUNT_NEEDED_TYPES, to_plain_text
from connectors.context import ChatContext, DemoStore
from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.service_http import new_client
from connectors.settings import ConnectorSettings

__all__ = ["ConnectorContract", "Harness", "call_tool", "harness", "sample_arguments", "tools_of"]

_TEMPLATE: dict[str, Path] = {}  # the migrated template database, made once per process


# ----------------------------------------------------------------------------- helpers


def tools_of(
    connector: Connector, settings: ConnectorSettings | None = None
) -> dict[str, FunctionTool]:
    agent = connector.build_agent(settings or ConnectorSettings())
    return {tool.name: tool for tool in agent.tools if isinstance(tool, FunctionTool)}


def sample_arguments(tool: FunctionTool, text: str = "test") -> dict[str, Any]:
    """Arguments that satisfy the tool's JSON schema: defaults, else simple values."""
    arguments: dict[str, Any] = {}
    schema = tool.params_json_schema
    for name, spec in (schema.get("properties") or {}).items():
        kinds = spec.get("type")
        if isinstance(kinds, list):
            kinds = next((kind for kind in kinds if kind != "null"), "null")
        if "default" in spec:
            arguments[name] = spec["default"]
        elif "anyOf" in spec:
            arguments[name] = None
        elif "enum" in spec:
            arguments[name] = spec["enum"][0]
        else:
            arguments[name] = {
                "string": text,
                "integer": 1,
                "number": 1.0,
                "boolean": False,
                "array": [],
                "object": {},
            }.get(str(kinds))
    return arguments


async def call_tool(
    connector: Connector, name: str, context: ChatContext, arguments: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Invoke a tool exactly as the Agents SDK does: JSON arguments in, its output out."""
    tool = tools_of(connector, context.settings)[name]
    payload = json.dumps(arguments if arguments is not None else sample_arguments(tool))
    output = await tool.on_invoke_tool(
        ToolContext(context, tool_name=name, tool_call_id="call_contract", tool_arguments=payload),
        payload,
    )
    assert isinstance(output, dict), f"{name} returned {type(output).__name__}, not a dict"
    return output


async def _template_database() -> Path:
    if "path" not in _TEMPLATE:
        from storage.migrate import upgrade

        path = Path(tempfile.mkdtemp(prefix="switchboard-kit-")) / "template.db"
        await asyncio.to_thread(upgrade, f"sqlite+aiosqlite:///{path}")
        _TEMPLATE["path"] = path
    return _TEMPLATE["path"]


@dataclass
class Harness:
    """A user with a real accounts store, the app's HTTP client and a demo state."""

    settings: ConnectorSettings
    accounts: Any  # storage.accounts.AccountRepository
    http: httpx.AsyncClient
    user_id: str
    demo: DemoStore

    def context(self, settings: ConnectorSettings | None = None) -> ChatContext:
        return ChatContext(
            user_id=self.user_id,
            chat_id="chat-contract",
            turn_id="turn-contract",
            settings=settings or self.settings,
            demo=self.demo.for_user(self.user_id),
            accounts=self.accounts,
            http=self.http,
        )


@asynccontextmanager
async def harness(settings: ConnectorSettings | None = None) -> AsyncIterator[Harness]:
    """A fresh copy of the migrated template database with one user."""
    from storage.accounts import AccountRepository
    from storage.engine import Database
    from storage.users import UserRepository

    directory = Path(tempfile.mkdtemp(prefix="switchboard-kit-"))
    path = directory / "kit.db"
    shutil.copyfile(await _template_database(), path)
    db = Database(f"sqlite+aiosqlite:///{path}")
    http = new_client()
    try:
        user, _token = await UserRepository(db).create_user("contract")
        fernet = MultiFernet([Fernet(Fernet.generate_key())])
        yield Harness(
            settings or ConnectorSettings(),
            AccountRepository(db, user.id, fernet),
            http,
            user.id,
            DemoStore(),
        )
    finally:
        await http.aclose()
        await db.dispose()
        shutil.rmtree(directory, ignore_errors=True)


@asynccontextmanager
async def failing_server() -> AsyncIterator[str]:
    """A loopback HTTP server that answers every request with 503 and a JSON error."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            body = b'{"error": {"code": 503, "message": "service unavailable"}}'
            writer.write(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json"
                b"\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


def _closed_port() -> str:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _fill(value: Any, base_url: str) -> Any:
    if isinstance(value, str):
        return value.replace("{base_url}", base_url)
    if isinstance(value, dict):
        return {key: _fill(item, base_url) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, base_url) for item in value]
    return value


def _secret_values(value: Any) -> list[str]:
    """String values long enough to be keys or tokens (URLs and short words excluded)."""
    if isinstance(value, str):
        return [value] if len(value) >= 8 and "://" not in value and " " not in value else []
    if isinstance(value, dict):
        return [s for item in value.values() for s in _secret_values(item)]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _secret_values(item)]
    return []


# ----------------------------------------------------------------------------- the contract


class ConnectorContract:
    """Subclass as ``TestSomething(ConnectorContract)`` and set ``connector``."""

    connector: ClassVar[Connector]
    # Good arguments per tool (the result must not be an error); others come from the schema.
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {}
    # ConnectorSettings overrides for live mode, "{base_url}" replaced by the failing server's URL;
    # None skips the live failure test (a connector without a live client).
    live_settings: ClassVar[dict[str, Any] | None] = None
    # Stored for the user before the live tools run (connectors that need an account).
    live_credentials: ClassVar[dict[str, Any] | None] = None

    # -------------------------------------------------------------- plumbing

    def arguments(self, tool: FunctionTool) -> dict[str, Any]:
        return self.sample_arguments.get(tool.name) or sample_arguments(tool)

    def demo_settings(self) -> ConnectorSettings:
        return ConnectorSettings(connector_modes={self.connector.name: "demo"})

    def check_response(self, name: str, output: dict[str, Any]) -> ToolResponse:
        assert ToolResponse.is_tool_response(output), f"{name} returned {output!r}"
        response = ToolResponse.from_dict(output)  # raises on any invalid field
        assert response.response_type in self.connector.response_types, (
            f"{name} returned response_type {response.response_type!r}, which "
            f"{self.connector.name} does not declare in response_types "
            f"{self.connector.response_types}"
        )
        text = to_plain_text(output)
        assert isinstance(text, str) and text.strip(), f"{name}: to_plain_text gave nothing"
        # The SDK gives the model str(output): a connector_tool's result renders as this text.
        assert str(output) == text, (
            f"{name}: the model would not read the plain text "
            "(declare the tool with connectors.tooling.connector_tool)"
        )
        return response

    # -------------------------------------------------------------- the tests

    def test_metadata_is_complete(self) -> None:
        connector = self.connector
        assert isinstance(connector, Connector)
        agent = connector.build_agent(ConnectorSettings())
        assert agent.name == connector.agent_name
        assert agent.handoff_description, "the orchestrator routes by handoff_description"
        tools = tools_of(connector)
        assert tools, f"{connector.name} has no tools"
        missing = set(tools) - set(connector.tool_descriptions)
        assert not missing, f"tool_descriptions lacks {sorted(missing)}"
        assert "error" in connector.response_types
        if connector.needs_account:
            card = connector.connect_card()
            assert card.response_type in ACCOUNT_NEEDED_TYPES
            assert card.response_type in connector.response_types

    @pytest.mark.asyncio
    async def test_every_tool_returns_a_valid_tool_response(self) -> None:
        async with harness(self.demo_settings()) as kit:
            for name, tool in tools_of(self.connector).items():
                output = await call_tool(self.connector, name, kit.context(), self.arguments(tool))
                response = self.check_response(name, output)
                if name in self.sample_arguments:
                    assert response.response_type != "error", (
                        f"{name} failed with its sample arguments: {response.error_message}"
                    )

    @pytest.mark.asyncio
    async def test_not_connected_returns_the_connect_card(self) -> None:
        if not self.connector.needs_account:
            return await self._answers_without_an_account()
        expected = self.connector.connect_card().response_type
        async with harness(self.demo_settings()) as kit:
            # Demo: after the user disconnected it.
            await kit.accounts.connect(
                self.connector.name, demo_credentials(False), demo_meta(self.connector, False)
            )
            for name, tool in tools_of(self.connector).items():
                output = await call_tool(self.connector, name, kit.context(), self.arguments(tool))
                self.check_response(name, output)
                assert output["response_type"] == expected, f"{name}: {output}"
            # Live: never connected (the demo row does not count).
            if self.live_settings is not None:
                live = self._live(self.live_settings, "http://127.0.0.1:9")
                for name, tool in tools_of(self.connector, live).items():
                    output = await call_tool(
                        self.connector, name, kit.context(live), self.arguments(tool)
                    )
                    assert output["response_type"] == expected, f"{name} (live): {output}"

    async def _answers_without_an_account(self) -> None:
        """A connector that declares no per-user account must never ask for one."""
        async with harness(self.demo_settings()) as kit:
            for name, tool in tools_of(self.connector).items():
                output = await call_tool(self.connector, name, kit.context(), self.arguments(tool))
                self.check_response(name, output)
                assert output["response_type"] not in ACCOUNT_NEEDED_TYPES, (
                    f"{name} asked for an account, but {self.connector.name} declares "
                    f"needs_account=False: {output}"
                )

    @pytest.mark.asyncio
    async def test_client_failures_become_error_responses(self) -> None:
        if self.live_settings is None:
            pytest.skip("no live_settings: declare them to test the live client's failures")
        async with failing_server() as failing:
            for base_url in (failing, _closed_port()):
                settings = self._live(self.live_settings, base_url)
                secrets = _secret_values(_fill(self.live_settings, base_url)) + _secret_values(
                    self.live_credentials or {}
                )
                async with harness(settings) as kit:
                    if self.connector.needs_account:
                        await kit.accounts.connect(
                            self.connector.name,
                            {"mode": "live", **(self.live_credentials or {})},
                            {"mode": "live"},
                        )
                    for name, tool in tools_of(self.connector, settings).items():
                        output = await call_tool(
                            self.connector, name, kit.context(), self.arguments(tool)
                        )
                        self.check_response(name, output)
                        assert output["response_type"] == "error", (
                            f"{name} against a failing service gave {output['response_type']}"
                        )
                        assert str(output["error_message"]).startswith("Error"), output
                        shown = json.dumps(output) + str(output)
                        for secret in secrets:
                            assert secret not in shown, f"{name} leaked a secret in {output}"

    def _live(self, overrides: dict[str, Any], base_url: str) -> ConnectorSettings:
        values = _fill(overrides, base_url)
        modes = {**values.pop("connector_modes", {}), self.connector.name: "live"}
        return ConnectorSettings(
            **{"http_retries": 0, "http_timeout": 5.0, **values, "connector_modes": modes}
        )
