"""The RAP runtime side: discover toolsets, invoke remote tools, wait for their results.

One ``RapRuntime`` per app (``app.services.start_services``). Each configured server becomes
a ``Connector`` whose agent's tools send an invocation (https://infinity.hydro.run/docs/rap,
"Tool Invocation")::

    POST <endpoint>
    {"operation": "edit_file", "arguments": {…}, "id": "call_abc", "call_id": "fc_123",
     "callback_url": "https://switchboard.example.com/rap/callback?token=…",
     "group_id": "<chat id>", "user_id": "<user id>"}

and then wait (``SWITCHBOARD_RAP_TIMEOUT`` or the server's ``timeout``) for the
``tool_result`` that ``app.rap_api`` hands over. Invocations are retried on 5xx and
connection failures, never on 4xx (RAP "Transport").
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx
from agents import Agent, FunctionTool
from agents.tool_context import ToolContext
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from connectors.approvals import declare_side_effect
from connectors.arguments import bound_arguments
from connectors.context import ChatContext
from connectors.rap.config import TOOLSET_PATH, RapServerConfig, RapToolDefinition, RapToolset
from connectors.rap.pending import DuplicateCall, PendingCalls
from connectors.rap.results import RESPONSE_TYPE, result_from_message, timeout_result
from connectors.rap.signing import SIGNATURE_HEADER, sign
from connectors.registry import Connector
from connectors.service_http import ServiceError, ServiceHttp
from connectors.settings import ConnectorSettings
from connectors.text import truncate
from connectors.tooling import ToolResult, error_result
from storage.engine import Database
from storage.rap import SubscriptionRepository

logger = logging.getLogger("switchboard.rap")

CALLBACK_PATH = "/rap/callback"
# What the Agents SDK uses as the item id when a provider has none (Chat Completions).
_NO_ITEM_ID = "__fake_id__"
# How much of the validator's message the model reads: enough to fix the call.
MAX_PROBLEM_CHARS = 300

INSTRUCTIONS = """\
You are {agent}, the agent of the remote tool server "{toolset}"{about}.

Your tools run on that server; their results can take a while. Use them for what the user
asks that they cover, with arguments that follow each tool's schema. A result that starts
with "Error" means the tool failed: say what failed and what to try next. If a tool did
not answer in time, say so; do not pretend it finished."""


@dataclass(frozen=True)
class RapServer:
    """A configured server with its (declared or discovered) toolset."""

    config: RapServerConfig
    toolset_name: str
    endpoint: str
    tools: tuple[RapToolDefinition, ...]
    description: str | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def agent_name(self) -> str:
        # Also the display name: "transfer_to_<name>" is what the orchestrator calls.
        return self.config.display_name or self.toolset_name

    def timeout(self, settings: ConnectorSettings) -> float:
        return self.config.timeout or settings.rap_timeout


def server_from_toolset(config: RapServerConfig, toolset: RapToolset) -> RapServer:
    return RapServer(
        config=config,
        toolset_name=toolset.name,
        endpoint=config.endpoint or toolset.endpoint,
        tools=tuple(toolset.tools),
        description=config.description or toolset.description,
    )


def declared_server(config: RapServerConfig) -> RapServer:
    assert config.tools is not None
    return RapServer(
        config=config,
        toolset_name=config.display_name or config.name,
        endpoint=config.endpoint or config.url,
        tools=tuple(config.tools),
        description=config.description,
    )


async def discover(config: RapServerConfig, http: ServiceHttp) -> RapServer:
    """The server's toolset from ``GET <url>/.well-known/rap-toolset``; raises ``ServiceError``
    (unreachable, HTTP error, not a valid toolset) with a message naming the server."""
    if config.tools is not None:
        return declared_server(config)
    response = await http.send(
        "GET", config.url + TOOLSET_PATH, headers={"Accept": "application/json"}
    )
    if response.status_code != 200:
        raise http.status_error(response)
    try:
        toolset = RapToolset.model_validate_json(response.content)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise ServiceError(
            f"{config.name}: {TOOLSET_PATH} is not a valid RAP toolset ({where}: {first['msg']})"
        ) from None
    return server_from_toolset(config, toolset)


def describe_tool(server: RapServer, tool: RapToolDefinition) -> str:
    """The progress text of ``tool_call`` ("Running edit file on Notes")."""
    return f"Running {tool.name.replace('_', ' ')} on {server.agent_name}"


def schema_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """The first way ``arguments`` break the tool's schema, as one line, or None."""
    error = next(
        iter(
            sorted(
                Draft202012Validator(schema).iter_errors(arguments),
                key=lambda e: list(e.absolute_path),
            )
        ),
        None,
    )
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path)
    # jsonschema's message quotes the value ("'…' is too long"): a pasted text would be
    # carried on to the model in full, so only its start is kept.
    message = truncate(error.message, MAX_PROBLEM_CHARS)
    return f"{truncate(where, 100)}: {message}" if where else message


@dataclass
class RapRuntime:
    settings: ConnectorSettings
    http: httpx.AsyncClient
    db: Database | None = None
    calls: PendingCalls = field(default_factory=PendingCalls)
    servers: dict[str, RapServer] = field(default_factory=dict)

    @property
    def callback_base(self) -> str:
        return self.settings.resolved_rap_callback_url + CALLBACK_PATH

    def service(self, server: RapServer) -> ServiceHttp:
        secret = server.config.secret.get_secret_value() if server.config.secret else None
        return ServiceHttp.for_settings(
            self.http, server.agent_name, self.settings, secrets=(secret,)
        )

    async def start(self) -> None:
        """Discover every configured server; one that cannot be reached is skipped (logged)
        so a remote outage never stops the app; declare its tools to not depend on it."""
        for config in self.settings.rap_tools:
            probe = ServiceHttp.for_settings(self.http, config.name, self.settings)
            try:
                server = await discover(config, probe)
            except ServiceError as exc:
                logger.error(
                    "RAP server %r skipped: %s", config.name, exc, extra={"rap_server": config.name}
                )
                continue
            self.servers[server.name] = server
            logger.info(
                "RAP server ready",
                extra={"rap_server": server.name, "tools": [t.name for t in server.tools]},
            )

    # ------------------------------------------------------------------ connectors

    def connectors(self) -> list[tuple[Connector, list[str]]]:
        """A connector per discovered server, with its tool names (for the one namespace
        every connector name lives in, ``connectors.registry.Namespace``)."""
        return [
            (self._connector(server), [tool.name for tool in server.tools])
            for server in self.servers.values()
        ]

    def _connector(self, server: RapServer) -> Connector:
        def build_agent(settings: ConnectorSettings) -> Agent[ChatContext]:
            del settings  # the runtime already holds them
            return self.build_agent(server)

        return Connector(
            name=server.name,
            agent_name=server.agent_name,
            display_name=server.agent_name,
            build_agent=build_agent,
            tool_descriptions={tool.name: describe_tool(server, tool) for tool in server.tools},
            response_types=(RESPONSE_TYPE, "error", "open_window"),
            mode="live",
        )

    def build_agent(self, server: RapServer) -> Agent[ChatContext]:
        about = f" ({server.description.strip()})" if server.description else ""
        summary = server.description or ", ".join(tool.name for tool in server.tools)
        return Agent[ChatContext](
            name=server.agent_name,
            handoff_description=f"Remote tools of {server.agent_name}: {summary}"[:1000],
            instructions=INSTRUCTIONS.format(
                agent=server.agent_name, toolset=server.toolset_name, about=about
            ),
            tools=[self.function_tool(server, tool) for tool in server.tools],
        )

    def function_tool(self, server: RapServer, tool: RapToolDefinition) -> FunctionTool:
        async def on_invoke(ctx: ToolContext[ChatContext], arguments: str) -> ToolResult:
            try:
                return await self.invoke(server, tool, ctx, arguments)
            except Exception as exc:
                # As connector_tool does: a tool never raises into the SDK (which would
                # fail the turn); the trace stays in the log.
                logger.exception("RAP tool %s failed", tool.name, extra={"rap_server": server.name})
                return error_result(
                    server.agent_name,
                    f"{tool.name} failed unexpectedly; try again later",
                    {"rap_server": server.name, "exception": type(exc).__name__},
                )

        function = FunctionTool(
            name=tool.name,
            description=tool.description or tool.name,
            params_json_schema=tool.input_schema,
            on_invoke_tool=on_invoke,
            # A remote schema is taken as published, not made "strict".
            strict_json_schema=False,
        )
        return declare_side_effect(bound_arguments(function), tool.side_effect)

    # ------------------------------------------------------------------ one call

    async def invoke(
        self,
        server: RapServer,
        tool: RapToolDefinition,
        ctx: ToolContext[ChatContext],
        raw_arguments: str,
    ) -> ToolResult:
        agent = server.agent_name
        context = ctx.context
        debug = {"rap_server": server.name, "operation": tool.name}
        try:
            arguments = json.loads(raw_arguments or "{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            return error_result(agent, f"the arguments of {tool.name} must be a JSON object", debug)
        problem = schema_problem(tool.input_schema, arguments)
        if problem is not None:
            return error_result(
                agent,
                f"invalid arguments for {tool.name}: {problem}. Fix "
                "them to match the tool's schema.",
                debug,
            )
        item_id = getattr(ctx.tool_call, "id", None)
        secondary = item_id if isinstance(item_id, str) and item_id != _NO_ITEM_ID else None
        try:
            call, token = self.calls.open(
                server=server.name,
                operation=tool.name,
                group_id=context.chat_id,
                id=ctx.tool_call_id,
                call_id=secondary,
                user_id=context.user_id,
                turn_id=context.turn_id,
            )
        except DuplicateCall as exc:
            return error_result(agent, str(exc), debug)
        body = json.dumps(
            {
                "operation": tool.name,
                "arguments": arguments,
                "id": call.id,
                "call_id": call.call_id,
                "callback_url": f"{self.callback_base}?token={token}",
                "group_id": call.group_id,
                "user_id": call.user_id,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()
        headers = {"Content-Type": "application/json"}
        if server.config.secret is not None:
            headers[SIGNATURE_HEADER] = sign(server.config.secret.get_secret_value(), body)
        log_extra = {
            "chat_id": call.group_id,
            "turn_id": call.turn_id,
            "rap_server": server.name,
            "operation": tool.name,
        }
        http = self.service(server)
        try:
            response = await http.send("POST", server.endpoint, content=body, headers=headers)
        except ServiceError as exc:
            self.calls.close(call)
            return error_result(agent, str(exc), {**debug, **(exc.debug_info or {})})
        except BaseException:
            self.calls.close(call)
            raise
        if not 200 <= response.status_code < 300:
            self.calls.close(call)
            advice = (
                "its tools changed since this server started; restart Switchboard to "
                "load them again"
                if response.status_code == 409
                else None
            )
            failure = http.status_error(response, advice=advice)
            return error_result(agent, str(failure), {**debug, **(failure.debug_info or {})})
        seconds = server.timeout(self.settings)
        try:
            message = await self.calls.wait(call, seconds)
        except TimeoutError:
            logger.warning("RAP tool gave no result in time", extra=log_extra)
            return timeout_result(
                agent_name=agent, operation=tool.name, seconds=seconds, debug_info=debug
            )
        if getattr(message, "subscription", False):
            await self._record_subscription(
                call.group_id, call.id, server.name, tool.name, log_extra
            )
        return result_from_message(
            message,
            agent_name=agent,
            friendly_name=f"{agent}: {tool.name.replace('_', ' ')}",
            debug_info=debug,
            max_chars=self.settings.tool_result_max_chars,
        )

    async def _record_subscription(
        self, chat_id: str, call_id: str, server: str, operation: str, log_extra: dict[str, Any]
    ) -> None:
        if self.db is None:
            return
        try:
            await SubscriptionRepository(self.db).record(chat_id, call_id, server, operation)
        except Exception:
            # The result still reaches the model; only the bookkeeping is missing.
            logger.exception("could not record a RAP subscription", extra=log_extra)
