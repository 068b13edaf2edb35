"""``SWITCHBOARD_MCP_SERVERS``: which MCP servers become connectors. Pure: no I/O.

A JSON object mapping each connector name to how its server is reached, either a command
Switchboard starts and talks to over stdio, or a streamable-HTTP URL::

    {"notes": {"command": "python", "args": ["notes_server.py"], "env": {"NOTES_TOKEN": "…"}},
     "tracker": {"url": "https://mcp.example.com/mcp",
                 "headers": {"Authorization": "Bearer …"}, "timeout": 20}}

``env`` and ``headers`` values are secrets (``SecretStr``): never logged, never shown in an
error. Each entry is validated on its own so an error names the server and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    field_validator,
)

# Connector names are REST path segments and settings keys, like every other connector's.
SERVER_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
# A header name is an HTTP token; the values are checked by the HTTP client when sent.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
EXAMPLE = (
    '{"notes": {"command": "python", "args": ["notes_server.py"]}, '
    '"tracker": {"url": "https://mcp.example.com/mcp"}}'
)

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class _ServerBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    # The agent's name ("transfer_to_<name>" is its hand-off tool); default: the name, titled.
    display_name: Text | None = Field(None, max_length=64)
    # What the orchestrator reads to decide when to hand off; default: the tool names.
    description: str | None = Field(None, max_length=4000)
    # Each tool call, else SWITCHBOARD_TOOL_TIMEOUT: past it the call is a tool_timeout.
    timeout: float | None = Field(None, gt=0, le=600)
    # Starting and initialising the server (and each reconnection attempt).
    connect_timeout: float = Field(30.0, gt=0, le=300)

    @property
    def agent_name(self) -> str:
        return self.display_name or self.name.replace("_", " ").title()

    def secrets(self) -> tuple[str, ...]:
        """The secret values of this entry, to scrub from anything logged or shown."""
        return ()


class StdioServer(_ServerBase):
    """A server Switchboard starts as a subprocess and talks to over its stdin/stdout."""

    transport: Literal["stdio"] = "stdio"
    command: Text
    args: list[str] = Field(default_factory=list)
    # Added to a minimal environment (PATH, HOME, …): the process never inherits
    # Switchboard's own variables, so none of its secrets leak to it.
    env: dict[str, SecretStr] = Field(default_factory=dict)
    cwd: str | None = None

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        bad = [name for name in value if not _ENV_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not an environment variable name")
        return value

    def secrets(self) -> tuple[str, ...]:
        return _values(self.env.values())


class HttpServer(_ServerBase):
    """A server already running somewhere, reached over MCP's streamable HTTP transport."""

    transport: Literal["http"] = "http"
    url: Text = Field(max_length=2000)
    headers: dict[str, SecretStr] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/?#]+", value):
            raise ValueError("must be an http:// or https:// URL, e.g. https://mcp.example.com/mcp")
        return value

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        bad = [name for name in value if not _HEADER_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not an HTTP header name")
        return value

    def secrets(self) -> tuple[str, ...]:
        return _values(self.headers.values())


McpServerConfig = StdioServer | HttpServer


def _values(secrets: Iterable[SecretStr]) -> tuple[str, ...]:
    return tuple(value for secret in secrets if (value := secret.get_secret_value()))


def parse_mcp_servers(value: object) -> dict[str, McpServerConfig]:
    """The setting (a JSON object as text, or already decoded) as validated server entries.

    Raises ``ValueError`` whose message names the server and its field, never a secret.
    """
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                f"expected an object like {EXAMPLE}"
            ) from None
    if not isinstance(value, dict):
        raise ValueError(
            f"expected a JSON object mapping each server's name to its settings, e.g. {EXAMPLE}"
        )
    return {str(name): parse_server(str(name), entry) for name, entry in value.items()}


def parse_server(name: str, entry: object) -> McpServerConfig:
    """One entry: a stdio server (``command``) or a streamable-HTTP one (``url``)."""
    if isinstance(entry, StdioServer | HttpServer):
        return entry
    if not SERVER_NAME.fullmatch(name):
        raise ValueError(
            f"server {name!r}: the name must be a lowercase identifier (a letter, then "
            "letters, digits or _; at most 32): it is the connector's name"
        )
    if not isinstance(entry, dict):
        raise ValueError(
            f"server {name!r}: expected an object with a command (stdio) or a url "
            f"(streamable HTTP), got {type(entry).__name__}"
        )
    if "name" in entry:
        raise ValueError(f"server {name!r}: name: the key of the entry is its name; remove it")
    model: type[StdioServer] | type[HttpServer]
    if "command" in entry and "url" in entry:
        raise ValueError(
            f"server {name!r}: has both command and url; give command (a server "
            "Switchboard starts, over stdio) or url (streamable HTTP), not both"
        )
    if "command" in entry:
        model = StdioServer
    elif "url" in entry:
        model = HttpServer
    else:
        raise ValueError(
            f"server {name!r}: needs a command (a server Switchboard starts, over stdio) "
            "or a url (a streamable-HTTP server)"
        )
    try:
        return model.model_validate({**entry, "name": name})
    except ValidationError as exc:
        raise ValueError(f"server {name!r}: {_first_problem(exc)}") from None


def _first_problem(error: ValidationError) -> str:
    problem = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in problem["loc"])
    message = problem["msg"].removeprefix("Value error, ")
    if problem["type"] == "extra_forbidden":
        message = "unknown field (stdio servers take command, args, env, cwd; HTTP servers url, "
        message += "headers; both display_name, description, timeout, connect_timeout)"
    return f"{where}: {message}" if where else message
