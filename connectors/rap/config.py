"""What a RAP tool server is: its configuration, its toolset and the messages it sends.

Pydantic models at the edges, pure (no I/O): the settings (``SWITCHBOARD_RAP_TOOLS``), the
toolset a server publishes at ``/.well-known/rap-toolset`` and the ``tool_result`` /
``oauth`` messages it POSTs to our callback (docs/rap.md; https://infinity.hydro.run/docs/rap).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    field_validator,
)

from connectors.names import CONNECTOR_NAME, name_problem
from connectors.responses import DisplayHint

TOOLSET_PATH = "/.well-known/rap-toolset"
# What a callback may carry: enough for a large file or diff, not enough to exhaust memory.
MAX_RESULT_TEXT = 1_000_000
MAX_SEGMENTS = 16
MAX_SEGMENT_TYPE = 64
# A server is a connector: its name lives in the connectors' one namespace
# (connectors.names; clashes with installed connectors are refused at start-up).
SERVER_NAME = f"^{CONNECTOR_NAME.pattern}$"
TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

HttpUrl = Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000)]


def check_http_url(value: str) -> str:
    if not re.match(r"^https?://[^\s/?#]+", value):
        raise ValueError(f"{value!r} is not an http:// or https:// URL")
    return value.rstrip("/")


class RapToolDefinition(BaseModel):
    """One operation of a toolset: its name becomes the invocation's ``operation``."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    name: str = Field(pattern=TOOL_NAME)
    description: str = Field("", max_length=4000)
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: dict(EMPTY_SCHEMA), alias="inputSchema"
    )
    # Whether the operation changes something for the user (sends, pays, writes,
    # deletes). Not declared (None) counts as yes: every call waits for approval.
    side_effect: bool | None = Field(None, alias="sideEffect")

    @field_validator("input_schema")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            Draft202012Validator.check_schema(value)
        except SchemaError as exc:
            raise ValueError(f"inputSchema is not a valid JSON Schema: {exc.message}") from None
        if value.get("type", "object") != "object":
            raise ValueError(
                'inputSchema must describe an object ("type": "object"): '
                "tool arguments are always a JSON object"
            )
        return value


def _require_unique(kind: str, names: list[str]) -> None:
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{kind} names must be unique; repeated: {', '.join(repeated)}")


def _unique_tools(tools: list[RapToolDefinition]) -> list[RapToolDefinition]:
    _require_unique("tool", [tool.name for tool in tools])
    return tools


class RapToolset(BaseModel):
    """The toolset document a server publishes at ``/.well-known/rap-toolset``."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str = Field(min_length=1, max_length=128)
    description: str | None = Field(None, max_length=4000)
    endpoint: HttpUrl
    tools: list[RapToolDefinition] = Field(min_length=1, max_length=128)

    _endpoint = field_validator("endpoint")(check_http_url)
    _unique = field_validator("tools")(_unique_tools)


class RapServerConfig(BaseModel):
    """One entry of ``SWITCHBOARD_RAP_TOOLS``.

    ``tools`` declared here are used as they are; without them the toolset is fetched
    from ``url`` + ``/.well-known/rap-toolset`` at start-up. ``secret`` (shared with the
    tool server) makes both directions carry an HMAC signature.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(pattern=SERVER_NAME)
    url: HttpUrl
    endpoint: HttpUrl | None = None
    display_name: str | None = Field(None, min_length=1, max_length=64)
    description: str | None = Field(None, max_length=4000)
    secret: SecretStr | None = None
    timeout: float | None = Field(None, gt=0, le=86_400)
    tools: list[RapToolDefinition] | None = Field(None, min_length=1, max_length=128)

    _urls = field_validator("url", "endpoint")(
        lambda value: None if value is None else check_http_url(value)
    )
    _unique = field_validator("tools")(
        lambda value: None if value is None else _unique_tools(value)
    )

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        problem = name_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("secret")
    @classmethod
    def _long_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("secret must be at least 16 characters")
        return value


def parse_rap_servers(value: object) -> object:
    """``SWITCHBOARD_RAP_TOOLS``: a JSON list of server objects, or ``name=URL`` pairs
    separated by commas (tools discovered from each URL).

    Each entry is validated here so the error names the entry and its field.
    """
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        if text.startswith("["):
            value = json.loads(text)
        else:
            pairs: list[dict[str, str]] = []
            for part in (piece.strip() for piece in text.split(",")):
                if not part:
                    continue
                name, sep, url = part.partition("=")
                if not sep or not name.strip() or not url.strip():
                    raise ValueError(
                        "expected name=URL pairs separated by commas (e.g. "
                        "notes=https://notes.example.com) or a JSON list of "
                        "objects"
                    )
                pairs.append({"name": name.strip(), "url": url.strip()})
            value = pairs
    if not isinstance(value, list):
        return value
    servers = []
    for index, entry in enumerate(value):
        if isinstance(entry, RapServerConfig):
            servers.append(entry)
            continue
        label = entry.get("name") if isinstance(entry, dict) else None
        try:
            servers.append(RapServerConfig.model_validate(entry))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "entry"
            raise ValueError(
                f"server {index}" + (f" ({label})" if label else "") + f": {where}: {first['msg']}"
            ) from None
    return servers


def check_unique_servers(servers: list[RapServerConfig]) -> list[RapServerConfig]:
    _require_unique("server", [server.name for server in servers])
    return servers


# ----------------------------------------------------------------------------- callbacks


class DiffContent(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    path: str = Field(max_length=4096)
    patch: str = Field(max_length=MAX_RESULT_TEXT)


def _rap_segment(segment: DisplayHint) -> DisplayHint:
    """A RAP segment follows the ToolResponse's rules for a hint (``wire.tool_response``:
    text is a string, a link leads to an http(s) page, an unknown type may hold any JSON,
    for a client that does not know it to skip), and RAP's own: a diff is {path, patch}."""
    kind, content = segment["type"], segment["content"]
    if len(kind) > MAX_SEGMENT_TYPE:
        raise ValueError(f"a segment's type is at most {MAX_SEGMENT_TYPE} characters")
    if kind == "diff":
        if not isinstance(content, dict):
            raise ValueError("a 'diff' segment's content must be an object with 'path' and 'patch'")
        DiffContent.model_validate(content)
    return segment


DisplaySegment = Annotated[DisplayHint, AfterValidator(_rap_segment)]


class ToolResultMessage(BaseModel):
    """``{"type": "tool_result", …}`` (docs/rap.md)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    type: Literal["tool_result"]
    group_id: str = Field(min_length=1, max_length=200)
    id: str = Field(min_length=1, max_length=200)
    call_id: str | None = Field(None, max_length=200)
    text: str = Field(max_length=MAX_RESULT_TEXT)
    display_as: list[DisplaySegment] | None = Field(None, max_length=MAX_SEGMENTS)
    subscription: bool = False


class OAuthMessage(BaseModel):
    """``{"type": "oauth", …}``: the tool needs the user to authorize it first."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    type: Literal["oauth"]
    group_id: str = Field(min_length=1, max_length=200)
    id: str = Field(min_length=1, max_length=200)
    call_id: str | None = Field(None, max_length=200)
    auth_url: HttpUrl

    _url = field_validator("auth_url")(check_http_url)


CallbackMessage = Annotated[ToolResultMessage | OAuthMessage, Field(discriminator="type")]
