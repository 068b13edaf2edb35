"""The settings connectors read, from ``SWITCHBOARD_*`` environment variables.

``app.settings.Settings`` extends this with the server's own settings, so connectors
depend on nothing above them and a plug-in types its ``build_agent`` with this class.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from typing import Annotated, Literal, TypeVar, cast

from pydantic import Field, PrivateAttr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from connectors.approvals import ApprovalMode, ApprovalPolicy, Override
from connectors.mcp.config import McpServerConfig, parse_mcp_servers
from connectors.rap.config import RapServerConfig, check_unique_servers, parse_rap_servers
from connectors.result_size import DEFAULT_MAX_CHARS

ConnectorMode = Literal["demo", "live"]
T = TypeVar("T")


class ConnectorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SWITCHBOARD_", extra="ignore", frozen=True)

    _memo: dict[object, object] = PrivateAttr(default_factory=dict)

    # Where this server listens: RAP tool servers call back to it when it is on loopback.
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    connector_modes: Annotated[dict[str, ConnectorMode], NoDecode] = Field(default_factory=dict)
    # Connectors in live mode (SWITCHBOARD_CONNECTOR_MODES=name=live,…): outbound HTTP.
    # Each connector's keys and base URLs are its own typed options (connectors.options).
    http_timeout: float = Field(15.0, gt=0, le=120)
    # Every connector tool call, unless the tool sets its own: past it the call is stopped
    # and reported as a retryable ``tool_timeout``. Above a live call's retry budget
    # (timeout × tries + waits) so that retries are not cut short.
    tool_timeout: float = Field(60.0, gt=0, le=600)
    # The most a tool's result may hold (characters, about its JSON's length): a longer
    # one is cut to its first part before anything reads it, marked ``truncated``, and the
    # model is told (connectors.result_size). 256 KiB.
    tool_result_max_chars: int = Field(DEFAULT_MAX_CHARS, ge=4_096, le=16_777_216)
    # The most a tool call's arguments may hold (characters of their JSON): a longer call
    # is refused before the tool runs, and the model is told the limit (connectors.arguments).
    tool_argument_max_chars: int = Field(65_536, ge=1_024, le=16_777_216)
    http_retries: int = Field(2, ge=0, le=5)
    http_retry_max_wait: float = Field(10.0, ge=0, le=120)
    connector_options: Annotated[dict[str, dict[str, str]], NoDecode] = Field(default_factory=dict)
    # RAP remote tools (connectors/rap, docs/rap.md): tool servers by URL, the base URL
    # they POST results back to, and how long a call may wait for its result.
    rap_tools: Annotated[list[RapServerConfig], NoDecode] = Field(default_factory=list)
    rap_callback_url: str | None = None
    rap_timeout: float = Field(120.0, gt=0, le=86_400)
    # MCP servers as connectors (connectors/mcp, docs/mcp.md): a JSON object, name → a
    # stdio command (args, env) or a streamable-HTTP URL (headers).
    mcp_servers: Annotated[dict[str, McpServerConfig], NoDecode] = Field(default_factory=dict)
    # Approvals (docs/approvals.md, docs/protocol.md §3a): which tool calls wait for the person.
    # side_effects: every tool that sends, pays, writes or deletes (or does not say);
    # always: every tool call; off: none (trusted automation only, logged at start-up).
    approvals: ApprovalMode = "side_effects"
    approval_overrides: Annotated[dict[str, Override], NoDecode] = Field(default_factory=dict)

    @field_validator("connector_modes", mode="before")
    @classmethod
    def _parse_modes(cls, value: object) -> object:
        # "weather=live,tides=demo" as well as JSON.
        return _name_value_pairs(
            value, "expected name=mode pairs separated by commas, e.g. weather=live"
        )

    @field_validator("rap_tools", mode="before")
    @classmethod
    def _parse_rap_tools(cls, value: object) -> object:
        return parse_rap_servers(value)

    @field_validator("rap_tools")
    @classmethod
    def _unique_rap_tools(cls, value: list[RapServerConfig]) -> list[RapServerConfig]:
        return check_unique_servers(value)

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _parse_mcp_servers(cls, value: object) -> object:
        return parse_mcp_servers(value)

    @field_validator("rap_callback_url")
    @classmethod
    def _check_rap_callback_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not value.startswith(("http://", "https://")) or len(value) < 10:
            raise ValueError(
                "must be this server's http:// or https:// base URL as the "
                "RAP tool servers reach it, e.g. https://switchboard.example.com"
            )
        return value.rstrip("/")

    @model_validator(mode="after")
    def _check_rap_callback(self) -> ConnectorSettings:
        if self.rap_tools and self.rap_callback_url is None and not self.is_loopback:
            raise ValueError(
                "SWITCHBOARD_RAP_CALLBACK_URL must be set when "
                "SWITCHBOARD_RAP_TOOLS is and the server is not bound to a "
                "loopback address: RAP tools POST their results to it"
            )
        return self

    @property
    def resolved_rap_callback_url(self) -> str:
        """Where RAP tools send results: the setting, else this loopback server's address."""
        if self.rap_callback_url is not None:
            return self.rap_callback_url
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @field_validator("approval_overrides", mode="before")
    @classmethod
    def _parse_overrides(cls, value: object) -> object:
        # "create_issue=ask,list_issues=auto" as well as JSON.
        pairs = _name_value_pairs(
            value,
            "expected tool_name=ask or tool_name=auto pairs "
            "separated by commas, e.g. create_issue=ask",
        )
        if isinstance(pairs, dict) and isinstance(value, str):
            return {name: str(choice).lower() for name, choice in pairs.items()}
        return pairs

    @property
    def approval_policy(self) -> ApprovalPolicy:
        return ApprovalPolicy(self.approvals, dict(self.approval_overrides))

    @field_validator("connector_options", mode="before")
    @classmethod
    def _parse_connector_options(cls, value: object) -> object:
        # "weather.base_url=https://…,weather.units=metric" as well as JSON.
        if isinstance(value, str) and value.lstrip().startswith("{"):
            return json.loads(value)
        if isinstance(value, str):
            options: dict[str, dict[str, str]] = {}
            for part in (p.strip() for p in value.split(",")):
                if not part:
                    continue
                key, sep, option = part.partition("=")
                name, dot, field = key.strip().partition(".")
                if not sep or not dot or not name or not field:
                    raise ValueError(
                        "expected connector.option=value pairs separated by "
                        "commas, e.g. weather.base_url=https://example.org"
                    )
                options.setdefault(name, {})[field.strip()] = option.strip()
            return options
        return value

    @property
    def is_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def connector_mode(self, name: str) -> ConnectorMode:
        """An installed connector's mode. A remote server (RAP, MCP) is always live
        (``Connector.mode``); one named like an installed connector is refused, so its
        name never switches that connector to live mode."""
        return self.connector_modes.get(name, "demo")

    def remembered(self, key: object, build: Callable[[], T]) -> T:
        """``build()`` once per settings object (a connector's parsed options)."""
        if key not in self._memo:
            self._memo[key] = build()
        return cast(T, self._memo[key])


def _name_value_pairs(value: object, expected: str) -> object:
    """``"a=x,b=y"`` (what people type in a shell) or a JSON object, as a dict."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        return json.loads(value)
    if not isinstance(value, str):
        return value
    pairs = [part.split("=", 1) for part in value.split(",") if part.strip()]
    if any(len(pair) != 2 or not pair[0].strip() for pair in pairs):
        raise ValueError(expected)
    return {name.strip(): item.strip() for name, item in pairs}
