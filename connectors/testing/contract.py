"""``ConnectorContract``: what every connector must do, as pytest tests.

A connector author subclasses it in a test module::

    from connectors.testing import ConnectorContract
    from switchboard_weather import connector

    class TestWeatherContract(ConnectorContract):
        connector = connector
        sample_arguments = {"get_weather_forecast": {"city": "Boston", "days": 3}}
        live_settings = {"connector_options": {"weather": {"base_url": "{base_url}"}}}

and runs ``pytest`` (with ``pytest-asyncio``; ``pip install 'switchboard-server[testing]'``). The
inherited tests check that:

- the connector's metadata is whole: the agent has its declared name, every tool of its
  own has a progress text, the response types include ``error`` (and the connect card's
  type when the connector needs a per-user account);
- every tool is documented: a description (the docstring), a description of every
  parameter, and whether it has side effects (``connector_tool(side_effect=…)``; an MCP
  tool's ``readOnlyHint``/``destructiveHint`` annotations);
- in demo mode every tool is called with its ``sample_arguments`` (if any) and with
  ``generated_examples`` argument sets generated from its JSON schema (Hypothesis,
  derandomized: the same on every run). Each call must answer within
  ``tool_timeout_seconds`` with a valid ToolResponse of a declared ``response_type`` whose
  ``to_plain_text`` is what the model reads, and must not raise. Sample arguments must not
  give an error card; generated ones must not either, unless the tool has sample arguments
  or is listed in ``errors_allowed_for_generated`` (generated input may be nonsense to it,
  e.g. an unknown id);
- a connector that ``needs_account`` answers every tool with its "Connect" card once the
  user has disconnected it (demo), or has not connected it (live);
- in live mode, when the service fails (an HTTP 503 from every request, or a connection
  refused), every tool answers with an ``error`` ToolResponse whose text starts with
  ``Error`` and holds no secret. ``live_settings`` are ``ConnectorSettings`` overrides that
  point the live client at the failing server: ``{base_url}`` in any string is replaced by
  its URL. ``live_credentials`` are stored for connectors that need an account.

Tools from the agent's MCP servers (``agent.mcp_servers``) are connected, listed and called
through the SDK and get the documentation and call checks (an ``isError`` answer counts as
an error card); the account and live-failure tests concern the agent's own tools.

Everything is real: a migrated SQLite database in a temporary directory, the real
``AccountRepository``, the app's HTTP client, the Agents SDK's own tool invocation. Each
failure lists every problem found, with the tool, the arguments and what it answered.
"""

from __future__ import annotations

import json
import unittest
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, ClassVar

from connectors.accounts import demo_credentials, demo_meta
from connectors.adapters import ACCOUNT_NEEDED_TYPES
from connectors.context import ChatContext
from connectors.registry import Connector
from connectors.settings import ConnectorSettings
from connectors.testing.arguments import generated_arguments, simple_arguments
from connectors.testing.checks import (
    documentation_problems,
    outcome_problems,
    response_problems,
    show,
    summary,
)
from connectors.testing.harness import (
    closed_port,
    failing_server,
    fill_base_url,
    harness,
    secret_values,
)
from connectors.testing.invoke import KitTool, KitTools, Outcome, invoke, kit_tools

__all__ = ["ConnectorContract"]


class ConnectorContract:
    """Subclass as ``TestSomething(ConnectorContract)`` and set ``connector``."""

    connector: ClassVar[Connector]
    # Good arguments per tool: the first call made, and it must not answer an error.
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {}
    # Tools that may answer an error card to arguments generated from their schema.
    errors_allowed_for_generated: ClassVar[frozenset[str] | set[str]] = frozenset()
    # How many argument sets to generate per tool (0: only the sample arguments).
    generated_examples: ClassVar[int] = 4
    # The kit's own hard limit on one call, in seconds.
    tool_timeout_seconds: ClassVar[float] = 10.0
    # And on starting and connecting an MCP server and listing its tools: a stdio server
    # is a new process importing its SDK, seconds on a busy machine, and not what a tool's
    # limit is about.
    connect_timeout_seconds: ClassVar[float] = 60.0
    # ConnectorSettings overrides for live mode, "{base_url}" replaced by the failing server's URL;
    # None skips the live failure test (a connector without a live client).
    live_settings: ClassVar[dict[str, Any] | None] = None
    # Stored for the user before the live tools run (connectors that need an account).
    live_credentials: ClassVar[dict[str, Any] | None] = None

    # -------------------------------------------------------------- plumbing

    def arguments(self, tool: KitTool) -> dict[str, Any]:
        """The sample arguments, else simple ones that fit the schema."""
        sample = self.sample_arguments.get(tool.name)
        return sample if sample is not None else simple_arguments(tool.tool.params_json_schema)

    def cases(self, tool: KitTool) -> list[tuple[dict[str, Any], bool]]:
        """(arguments, generated?) for each call of ``tool``: the sample first."""
        cases = []
        sample = self.sample_arguments.get(tool.name)
        if sample is not None:
            cases.append((sample, False))
        schema = tool.tool.params_json_schema
        for arguments in generated_arguments(schema, self.generated_examples):
            if arguments != sample:
                cases.append((arguments, True))
        return cases

    def demo_settings(self) -> ConnectorSettings:
        return ConnectorSettings(connector_modes={self.connector.name: "demo"})

    @asynccontextmanager
    async def tools(self, context: ChatContext) -> AsyncIterator[KitTools]:
        async with kit_tools(self.connector, context, self.connect_timeout_seconds) as tools:
            yield tools

    async def call(
        self, tools: KitTools, tool: KitTool, context: ChatContext, arguments: dict[str, Any]
    ) -> Outcome:
        return await invoke(tools, tool, context, arguments, self.tool_timeout_seconds)

    def fail_on(self, problems: list[str], what: str) -> None:
        if problems:
            raise AssertionError(summary(self.connector, what, problems))

    def answered(self, outcome: Outcome) -> dict[str, Any] | None:
        """The ToolResponse dict a call answered; None (and a problem noted) otherwise."""
        if outcome.timed_out or not isinstance(outcome.output, dict):
            return None
        return outcome.output

    # -------------------------------------------------------------- the tests

    async def test_metadata_is_complete(self) -> None:
        connector = self.connector
        assert isinstance(connector, Connector), (
            f"connector is {type(connector).__name__}, not a connectors.registry.Connector"
        )
        problems = []
        async with harness(self.demo_settings()) as kit, self.tools(kit.context()) as found:
            agent, tools = found.agent, found.tools
        if agent.name != connector.agent_name:
            problems.append(
                f"build_agent made an agent named {agent.name!r}, but the connector declares "
                f"agent_name={connector.agent_name!r}"
            )
        if not agent.handoff_description:
            problems.append(
                f"agent {agent.name!r} has no handoff_description: the orchestrator routes "
                "by it; say in one sentence what it can do"
            )
        if not tools:
            problems.append(f"agent {agent.name!r} has no tools (and no MCP server lists any)")
        own = {name for name, tool in tools.items() if tool.server is None}
        missing = sorted(own - set(connector.tool_descriptions))
        if missing:
            problems.append(
                f"tool_descriptions lacks {missing}: give each a progress text, e.g. "
                f"{{{missing[0]!r}: 'Checking …'}} (it has {show(connector.tool_descriptions)})"
            )
        if "error" not in connector.response_types:
            problems.append(
                f"response_types {list(connector.response_types)} lacks 'error' (every tool "
                "can answer an error card)"
            )
        if connector.needs_account:
            card = connector.connect_card()
            if card.response_type not in ACCOUNT_NEEDED_TYPES:
                problems.append(
                    f"the connect card's response_type {card.response_type!r} is not one of "
                    f"{sorted(ACCOUNT_NEEDED_TYPES)}"
                )
            if card.response_type not in connector.response_types:
                problems.append(
                    f"response_types {list(connector.response_types)} lacks the connect card's "
                    f"{card.response_type!r}"
                )
        self.fail_on(problems, "in its metadata")

    async def test_every_tool_is_documented(self) -> None:
        async with harness(self.demo_settings()) as kit, self.tools(kit.context()) as found:
            problems = [p for tool in found.tools.values() for p in documentation_problems(tool)]
        self.fail_on(problems, "in its tools' documentation")

    async def test_every_tool_returns_a_valid_tool_response(self) -> None:
        problems: list[str] = []
        async with harness(self.demo_settings()) as kit:
            context = kit.context()
            async with self.tools(context) as found:
                for tool in found.tools.values():
                    allowed = (
                        tool.name in self.errors_allowed_for_generated
                        or tool.name in self.sample_arguments
                    )
                    for arguments, generated in self.cases(tool):
                        outcome = await self.call(found, tool, context, arguments)
                        problems += outcome_problems(
                            self.connector,
                            outcome,
                            generated=generated,
                            errors_allowed=allowed,
                            timeout=self.tool_timeout_seconds,
                        )
        unknown = sorted(set(self.sample_arguments) - set(found.tools))
        if unknown:
            problems.append(
                f"sample_arguments names {unknown}, which are not tools of this agent "
                f"(its tools: {sorted(found.tools)})"
            )
        self.fail_on(problems, "when its tools were called in demo mode")

    async def test_not_connected_returns_the_connect_card(self) -> None:
        if not self.connector.needs_account:
            return await self._answers_without_an_account()
        expected = self.connector.connect_card().response_type
        problems: list[str] = []
        async with harness(self.demo_settings()) as kit:
            # Demo: after the user disconnected it.
            await kit.accounts.connect(
                self.connector.name, demo_credentials(False), demo_meta(self.connector, False)
            )
            problems += await self._expect_type(kit.context(), expected, "demo, disconnected")
            # Live: never connected (the demo row does not count).
            if self.live_settings is not None:
                live = self._live(self.live_settings, "http://127.0.0.1:9")
                problems += await self._expect_type(kit.context(live), expected, "live, none")
        self.fail_on(problems, "while the user had no account connected")

    async def _own_answers(
        self, context: ChatContext
    ) -> tuple[list[tuple[KitTool, dict[str, Any]]], list[str]]:
        """Each of the connector's own tools called once (an MCP server has no notion of
        the user's Switchboard account): the answers, and the problems of calls that gave
        none."""
        answers: list[tuple[KitTool, dict[str, Any]]] = []
        problems: list[str] = []
        async with self.tools(context) as found:
            for tool in found.tools.values():
                if tool.server is not None:
                    continue
                outcome = await self.call(found, tool, context, self.arguments(tool))
                output = self.answered(outcome)
                if output is None:
                    problems += outcome_problems(
                        self.connector,
                        outcome,
                        generated=False,
                        errors_allowed=True,
                        timeout=self.tool_timeout_seconds,
                    )
                else:
                    answers.append((tool, output))
        return answers, problems

    async def _expect_type(self, context: ChatContext, expected: str, when: str) -> list[str]:
        answers, problems = await self._own_answers(context)
        for tool, output in answers:
            if output.get("response_type") != expected:
                problems.append(
                    f"{tool.label} ({when}) answered {output.get('response_type')!r}, not "
                    f"the connect card {expected!r}: {show(output)}. Check the account "
                    "before anything else (raise connectors.tooling.NeedsAccount)."
                )
        return problems

    async def _answers_without_an_account(self) -> None:
        """A connector that declares no per-user account must never ask for one."""
        async with harness(self.demo_settings()) as kit:
            answers, problems = await self._own_answers(kit.context())
        for tool, output in answers:
            if output.get("response_type") in ACCOUNT_NEEDED_TYPES:
                problems.append(
                    f"{tool.label} asked for an account, but {self.connector.name} "
                    f"declares needs_account=False: {show(output)}"
                )
        self.fail_on(problems, "about accounts")

    async def test_client_failures_become_error_responses(self) -> None:
        if self.live_settings is None:
            # pytest reports unittest's SkipTest as a skip; the kit imports no pytest itself.
            raise unittest.SkipTest(
                "no live_settings: declare them to test the live client's failures"
            )
        problems: list[str] = []
        async with failing_server() as failing:
            for base_url, failure in ((failing, "HTTP 503"), (closed_port(), "refused")):
                problems += await self._live_failures(base_url, failure)
        self.fail_on(problems, "when its service failed (live mode)")

    async def _live_failures(self, base_url: str, failure: str) -> list[str]:
        assert self.live_settings is not None
        settings = self._live(self.live_settings, base_url)
        secrets = secret_values(fill_base_url(self.live_settings, base_url)) + secret_values(
            self.live_credentials or {}
        )
        problems: list[str] = []
        async with harness(settings) as kit:
            if self.connector.needs_account:
                await kit.accounts.connect(
                    self.connector.name,
                    {"mode": "live", **(self.live_credentials or {})},
                    {"mode": "live"},
                )
            context = kit.context()
            async with self.tools(context) as found:
                for tool in found.tools.values():
                    if tool.server is not None:
                        continue
                    outcome = await self.call(found, tool, context, self.arguments(tool))
                    output = self.answered(outcome)
                    label = f"{tool.label} (service {failure}, arguments {show(outcome.arguments)})"
                    if output is None:
                        problems += outcome_problems(
                            self.connector,
                            outcome,
                            generated=False,
                            errors_allowed=True,
                            timeout=self.tool_timeout_seconds,
                        )
                        continue
                    problems += response_problems(self.connector, label, output)
                    if output.get("response_type") != "error":
                        problems.append(
                            f"{label} answered {output.get('response_type')!r}, not an error "
                            f"card: {show(output)}"
                        )
                    elif not str(output.get("error_message")).startswith("Error"):
                        problems.append(
                            f"{label}: its error_message does not start with 'Error': "
                            f"{output.get('error_message')!r}"
                        )
                    shown = json.dumps(output) + str(output)
                    for secret in secrets:
                        if secret in shown:
                            problems.append(
                                f"{label} leaked a secret ({secret[:4]}… from live_settings or "
                                f"live_credentials) in {show(output)}"
                            )
        return problems

    def _live(self, overrides: dict[str, Any], base_url: str) -> ConnectorSettings:
        values = fill_base_url(overrides, base_url)
        modes = {**values.pop("connector_modes", {}), self.connector.name: "live"}
        return ConnectorSettings(
            **{"http_retries": 0, "http_timeout": 5.0, **values, "connector_modes": modes}
        )
