"""The contract kit fails the connectors it should: each flawed plug-in below breaks one rule
and the matching kit test must reject it (so the kit's passes over the built-ins mean
something)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from agents import Agent, RunContextWrapper

from connectors.context import ChatContext
from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.service_http import ServiceHttp, shared_client
from connectors.testing import ConnectorContract
from connectors.tooling import ToolError, connector_tool


def plugin(
    tool: Any,
    response_types: tuple[str, ...],
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


@connector_tool(agent_name="Flawed")
async def undeclared(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Answers a response type its connector does not declare.

    Args:
        query: Anything.
    """
    return ToolResponse("surprise", "Flawed", "Surprise", {"query": query})


@connector_tool(agent_name="Flawed")
async def ignores_accounts(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """Never checks whether the user is connected.

    Args:
        query: Anything.
    """
    return ToolResponse("flawed_result", "Flawed", "Result", {"query": query})


@connector_tool(agent_name="Flawed")
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
    return ToolResponse("flawed_result", "Flawed", "Result", {"query": query})


class UndeclaredContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(undeclared, ("error",))


class MissingDescriptionContract(ConnectorContract):
    connector: ClassVar[Connector] = plugin(
        ignores_accounts, ("flawed_result", "error"), descriptions={}
    )


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


async def test_an_undeclared_response_type_fails() -> None:
    with pytest.raises(AssertionError, match="does not declare"):
        await UndeclaredContract().test_every_tool_returns_a_valid_tool_response()


def test_a_tool_without_a_progress_text_fails() -> None:
    with pytest.raises(AssertionError, match="tool_descriptions lacks"):
        MissingDescriptionContract().test_metadata_is_complete()


async def test_a_connector_that_ignores_disconnection_fails() -> None:
    with pytest.raises(AssertionError, match="ignores_accounts"):
        await IgnoresAccountsContract().test_not_connected_returns_the_connect_card()


async def test_a_secret_in_an_error_fails() -> None:
    with pytest.raises(AssertionError, match="leaked a secret"):
        await LeakyContract().test_client_failures_become_error_responses()
