"""The settings connectors read, from ``SWITCHBOARD_*`` environment variables.

``app.settings.Settings`` extends this with the server's own settings, so connectors
depend on nothing above them and a plug-in types its ``build_agent`` with this class.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from connectors.approvals import ApprovalMode, ApprovalPolicy, Override
from connectors.mcp.config import McpServerConfig, parse_mcp_servers
from connectors.rap.config import RapServerConfig, check_unique_servers, parse_rap_servers

ConnectorMode = Literal["demo", "live"]


class ConnectorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SWITCHBOARD_", extra="ignore", frozen=True)

    # Where this server listens: RAP tool servers call back to it when it is on loopback.
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    connector_modes: Annotated[dict[str, ConnectorMode], NoDecode] = Field(default_factory=dict)
    # Connectors in live mode (SWITCHBOARD_CONNECTOR_MODES=gmail=live,…): outbound HTTP,
    # keys and base URLs. Every base URL is configurable so tests point clients at fakes.
    http_timeout: float = Field(15.0, gt=0, le=120)
    # Every connector tool call, unless the tool sets its own: past it the call is stopped
    # and reported as a retryable ``tool_timeout``. Above a live call's retry budget
    # (timeout × tries + waits) so that retries are not cut short.
    tool_timeout: float = Field(60.0, gt=0, le=600)
    http_retries: int = Field(2, ge=0, le=5)
    http_retry_max_wait: float = Field(10.0, ge=0, le=120)
    google_client_id: str | None = None
    google_client_secret: SecretStr | None = None
    google_redirect_uri: str | None = None
    google_auth_url: str = "https://accounts.google.com/o/oauth2/v2/auth"
    google_oauth_base_url: str = "https://oauth2.googleapis.com"
    gmail_base_url: str = "https://gmail.googleapis.com"
    plaid_client_id: str | None = None
    plaid_secret: SecretStr | None = None
    plaid_environment: Literal["sandbox", "development", "production"] = "sandbox"
    plaid_base_url: str | None = None
    yelp_api_key: SecretStr | None = None
    yelp_base_url: str = "https://api.yelp.com"
    yelp_default_location: str | None = None
    search_provider: Literal["google", "searxng"] = "google"
    google_search_api_key: SecretStr | None = None
    google_search_engine_id: str | None = None
    google_search_base_url: str = "https://www.googleapis.com"
    searxng_base_url: str | None = None
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
        # "gmail=live,plaid=demo" as well as JSON.
        return _name_value_pairs(
            value, "expected name=mode pairs separated by commas, e.g. gmail=live"
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
        # "send_google_email=ask,search_google=auto" as well as JSON.
        pairs = _name_value_pairs(
            value,
            "expected tool_name=ask or tool_name=auto pairs "
            "separated by commas, e.g. send_google_email=ask",
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

    @field_validator(
        "google_auth_url",
        "google_oauth_base_url",
        "gmail_base_url",
        "plaid_base_url",
        "yelp_base_url",
        "google_search_base_url",
        "searxng_base_url",
        "google_redirect_uri",
    )
    @classmethod
    def _check_http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not value.startswith(("http://", "https://")) or len(value) < 10:
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _check_live_connectors(self) -> ConnectorSettings:
        problems = missing_live_settings(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def is_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def connector_mode(self, name: str) -> ConnectorMode:
        if any(server.name == name for server in self.rap_tools):
            return "live"  # a RAP tool server is always a real remote service
        if name in self.mcp_servers:
            return "live"  # so is an MCP server
        return self.connector_modes.get(name, "demo")


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


# The settings each built-in connector needs in live mode.
LIVE_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "gmail": ("google_client_id", "google_client_secret"),
    "plaid": ("plaid_client_id", "plaid_secret"),
    "yelp": ("yelp_api_key",),
}


def missing_live_settings(settings: ConnectorSettings) -> list[str]:
    """One line per live connector whose keys are missing, naming the variables."""
    problems = []
    needs = dict(LIVE_REQUIREMENTS)
    needs["search"] = (
        ("google_search_api_key", "google_search_engine_id")
        if settings.search_provider == "google"
        else ("searxng_base_url",)
    )
    for connector, fields in needs.items():
        # The explicit mode only: a RAP server of the same name is refused at start-up
        # (connectors.registry), not taken for this connector in live mode.
        if settings.connector_modes.get(connector) != "live":
            continue
        missing = [
            f"SWITCHBOARD_{field.upper()}"
            for field in fields
            if not _is_set(getattr(settings, field))
        ]
        if missing:
            problems.append(
                f"{' and '.join(missing)} must be set when {connector} runs in "
                f"live mode (SWITCHBOARD_CONNECTOR_MODES={connector}=live)"
            )
    return problems


def _is_set(value: object) -> bool:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    return isinstance(value, str) and bool(value.strip())
