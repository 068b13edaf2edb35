"""Typed configuration from ``SWITCHBOARD_*`` environment variables.

Every setting has a default that works on a laptop: SQLite under ``./data/``, the
offline demo model, demo-mode connectors, local auth on the loopback address.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from connectors.approvals import ApprovalMode, ApprovalPolicy, Override
from connectors.rap.config import RapServerConfig, check_unique_servers, parse_rap_servers
from websocket.protocol import (
    DEFAULT_MAX_PROMPT_CHARS,
    MAX_APPROVAL_ID,
    MAX_APPROVAL_REASON,
    MAX_CLIENT_MESSAGE_ID,
)

ConnectorMode = Literal["demo", "live"]


class SettingsError(RuntimeError):
    """A setting is invalid; the message names the environment variable."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SWITCHBOARD_", extra="ignore", frozen=True)

    database_url: str = "sqlite+aiosqlite:///./data/switchboard.db"
    data_dir: Path = Path("./data")
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    auth_mode: Literal["local", "token"] | None = None
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    secret_key: str | None = None
    model: str = "offline"
    # Model providers (app/models/providers.py); specs are parsed by app/models/spec.py.
    connector_model: str | None = None
    suggest_model: str | None = None
    model_api_key: SecretStr | None = None
    model_timeout: float = Field(60.0, gt=0, le=3600)
    model_call_timeout: float = Field(300.0, gt=0, le=86400)
    model_max_retries: int = Field(2, ge=0, le=10)
    suggest_timeout: float = Field(15.0, gt=0, le=300)
    tracing: bool = False
    timezone: str = "UTC"
    locale: str = Field("en-US", min_length=2, max_length=35, pattern=r"^[A-Za-z0-9-]+$")
    # The offline demo model streams a word every 20 ms, about a real model's pace, so a
    # person trying `make run` sees the answer stream; tests and benchmarks set their own.
    offline_delta_delay: float = Field(0.02, ge=0, le=5)
    connector_modes: Annotated[dict[str, ConnectorMode], NoDecode] = Field(default_factory=dict)
    expose_debug_info: bool = False
    max_prompt_chars: int = Field(DEFAULT_MAX_PROMPT_CHARS, ge=1)
    # Unset: derived from max_prompt_chars (which must come first), so that every legal
    # prompt fits in a frame however a client encodes it; see min_frame_bytes.
    max_frame_bytes: int = Field(default_factory=lambda data: min_frame_bytes(
        data.get("max_prompt_chars", DEFAULT_MAX_PROMPT_CHARS)))
    max_connections_per_user: int = Field(32, ge=1)
    prompts_per_minute: int = Field(30, ge=1)
    max_turns_per_user: int = Field(4, ge=1)
    shutdown_grace_seconds: float = Field(10.0, ge=0)
    redis_url: str | None = None
    turn_lease_seconds: float = Field(15.0, ge=1)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # Connectors in live mode (SWITCHBOARD_CONNECTOR_MODES=gmail=live,…): outbound HTTP,
    # keys and base URLs. Every base URL is configurable so tests point clients at fakes.
    http_timeout: float = Field(15.0, gt=0, le=120)
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
    connector_options: Annotated[dict[str, dict[str, str]], NoDecode] = Field(
        default_factory=dict)
    # RAP remote tools (connectors/rap, docs/rap.md): tool servers by URL, the base URL
    # they POST results back to, and how long a call may wait for its result.
    rap_tools: Annotated[list[RapServerConfig], NoDecode] = Field(default_factory=list)
    rap_callback_url: str | None = None
    rap_timeout: float = Field(120.0, gt=0, le=86_400)
    # Approvals (docs/approvals.md, PROTOCOL.md §3a): which tool calls wait for the person.
    # side_effects: every tool that sends, pays, writes or deletes (or does not say);
    # always: every tool call; off: none (trusted automation only, logged at start-up).
    approvals: ApprovalMode = "side_effects"
    approval_overrides: Annotated[dict[str, Override], NoDecode] = Field(default_factory=dict)
    # Seconds a pending approval waits before it expires (treated as a rejection).
    approval_timeout: float = Field(86_400.0, gt=0, le=30 * 86_400)

    @field_validator("allowed_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        # Accept "a,b" as well as a JSON list, which is what people type in a shell.
        if isinstance(value, str) and value.lstrip().startswith("["):
            return json.loads(value)
        if isinstance(value, str):
            return [part.strip().rstrip("/") for part in value.split(",") if part.strip()]
        return value

    @field_validator("connector_modes", mode="before")
    @classmethod
    def _parse_modes(cls, value: object) -> object:
        # "gmail=live,plaid=demo" as well as JSON.
        return _name_value_pairs(value, "expected name=mode pairs separated by commas, "
                                        "e.g. gmail=live")

    @field_validator("rap_tools", mode="before")
    @classmethod
    def _parse_rap_tools(cls, value: object) -> object:
        return parse_rap_servers(value)

    @field_validator("rap_tools")
    @classmethod
    def _unique_rap_tools(cls, value: list[RapServerConfig]) -> list[RapServerConfig]:
        return check_unique_servers(value)

    @field_validator("rap_callback_url")
    @classmethod
    def _check_rap_callback_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not value.startswith(("http://", "https://")) or len(value) < 10:
            raise ValueError("must be this server's http:// or https:// base URL as the "
                             "RAP tool servers reach it, e.g. https://switchboard.example.com")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _check_rap_callback(self) -> Settings:
        if self.rap_tools and self.rap_callback_url is None and not self.is_loopback:
            raise ValueError("SWITCHBOARD_RAP_CALLBACK_URL must be set when "
                             "SWITCHBOARD_RAP_TOOLS is and the server is not bound to a "
                             "loopback address: RAP tools POST their results to it")
        return self

    @property
    def resolved_rap_callback_url(self) -> str:
        """Where RAP tools send results: the setting, else this loopback server's address."""
        if self.rap_callback_url is not None:
            return self.rap_callback_url
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value or None

    @field_validator("approval_overrides", mode="before")
    @classmethod
    def _parse_overrides(cls, value: object) -> object:
        # "send_google_email=ask,search_google=auto" as well as JSON.
        pairs = _name_value_pairs(value, "expected tool_name=ask or tool_name=auto pairs "
                                         "separated by commas, e.g. send_google_email=ask")
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
                    raise ValueError("expected connector.option=value pairs separated by "
                                     "commas, e.g. weather.base_url=https://example.org")
                options.setdefault(name, {})[field.strip()] = option.strip()
            return options
        return value

    @field_validator("google_auth_url", "google_oauth_base_url", "gmail_base_url",
                     "plaid_base_url", "yelp_base_url", "google_search_base_url",
                     "searxng_base_url", "google_redirect_uri")
    @classmethod
    def _check_http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not value.startswith(("http://", "https://")) or len(value) < 10:
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")

    @field_validator("model", "connector_model", "suggest_model")
    @classmethod
    def _check_model_spec(cls, value: str | None, info: ValidationInfo) -> str | None:
        from app.models.spec import parse_optional_spec

        if value is None or not value.strip():
            return None if info.field_name != "model" else "offline"
        if info.field_name == "suggest_model" and value.strip().lower() == "off":
            return "off"
        parse_optional_spec(value)  # ValueError says which form was expected
        return value.strip()

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA time zone, e.g. Europe/Paris") from None
        return value

    @model_validator(mode="after")
    def _check_model_key(self) -> Settings:
        from app.models.spec import parse_optional_spec

        chosen = {"SWITCHBOARD_MODEL": self.model,
                  "SWITCHBOARD_CONNECTOR_MODEL": self.connector_model,
                  "SWITCHBOARD_SUGGEST_MODEL": self.suggest_model}
        using_openai = [name for name, value in chosen.items() if value and value != "off"
                        and (spec := parse_optional_spec(value)) and spec.kind == "openai"]
        has_key = bool(self.model_api_key and self.model_api_key.get_secret_value()
                       or os.environ.get("OPENAI_API_KEY"))
        if using_openai and not has_key:
            raise ValueError(f"{' and '.join(using_openai)}=openai:… needs an API key: set "
                             "SWITCHBOARD_MODEL_API_KEY or OPENAI_API_KEY")
        return self

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str) -> str:
        if not value.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
            raise ValueError(
                "must start with sqlite+aiosqlite:// or postgresql+asyncpg:// (async drivers only)"
            )
        return value

    @model_validator(mode="after")
    def _check_auth(self) -> Settings:
        if self.resolved_auth_mode == "local" and not self.is_loopback:
            raise ValueError(
                f"auth_mode=local is only allowed on a loopback address, not {self.host!r}; "
                "set SWITCHBOARD_AUTH_MODE=token"
            )
        return self

    @model_validator(mode="after")
    def _check_live_connectors(self) -> Settings:
        problems = missing_live_settings(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _check_frame_limit(self) -> Settings:
        # A frame limit below the longest legal prompt makes the server close the socket
        # (1009) on prompts it would accept, and clients that resend on reconnect loop.
        needed = min_frame_bytes(self.max_prompt_chars)
        if self.max_frame_bytes < needed:
            raise ValueError(
                f"SWITCHBOARD_MAX_FRAME_BYTES={self.max_frame_bytes} is too small for "
                f"SWITCHBOARD_MAX_PROMPT_CHARS={self.max_prompt_chars}: a prompt that long "
                f"can take up to {needed} bytes as a frame ({ESCAPED_BYTES_PER_CHAR} bytes a "
                f"character when a JSON encoder escapes it as \\uXXXX\\uXXXX); set it to at "
                f"least {needed}, or leave it unset to derive it from the prompt limit")
        return self

    @property
    def is_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def resolved_auth_mode(self) -> Literal["local", "token"]:
        if self.auth_mode is not None:
            return self.auth_mode
        return "local" if self.is_loopback else "token"

    def connector_mode(self, name: str) -> ConnectorMode:
        if any(server.name == name for server in self.rap_tools):
            return "live"  # a RAP tool server is always a real remote service
        return self.connector_modes.get(name, "demo")

    @cached_property
    def resolved_secret_key(self) -> str:
        """The Fernet key: the configured one, else one generated once under ``data_dir``."""
        if self.secret_key:
            return self.secret_key
        return _load_or_create_key(self.data_dir / "secret.key")


# The most bytes one prompt character can take in a frame: an ASCII-only JSON encoder
# (Python's json.dumps by default) writes a character outside the BMP, which the prompt
# limit counts once (a code point), as a surrogate pair of escapes, "\ud83d\ude00".
ESCAPED_BYTES_PER_CHAR = 12
# The keys, the type and the whitespace around them, with room to spare.
FRAME_SLACK_BYTES = 1024


def min_frame_bytes(max_prompt_chars: int) -> int:
    """The smallest frame limit that lets through every frame a client may legally send.

    The largest is a prompt of ``max_prompt_chars`` characters with a client_message_id,
    or (for a tiny prompt limit) an approval with its id and the longest reason; every
    character of them escaped at the worst case.
    """
    longest_text = max(max_prompt_chars + MAX_CLIENT_MESSAGE_ID,
                       MAX_APPROVAL_ID + MAX_APPROVAL_REASON)
    return ESCAPED_BYTES_PER_CHAR * longest_text + FRAME_SLACK_BYTES


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


def missing_live_settings(settings: Settings) -> list[str]:
    """One line per live connector whose keys are missing, naming the variables."""
    problems = []
    needs = dict(LIVE_REQUIREMENTS)
    needs["search"] = (("google_search_api_key", "google_search_engine_id")
                       if settings.search_provider == "google" else ("searxng_base_url",))
    for connector, fields in needs.items():
        if settings.connector_mode(connector) != "live":
            continue
        missing = [f"SWITCHBOARD_{field.upper()}" for field in fields
                   if not _is_set(getattr(settings, field))]
        if missing:
            problems.append(f"{' and '.join(missing)} must be set when {connector} runs in "
                            f"live mode (SWITCHBOARD_CONNECTOR_MODES={connector}=live)")
    return problems


def _is_set(value: object) -> bool:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    return isinstance(value, str) and bool(value.strip())


def _load_or_create_key(path: Path) -> str:
    from cryptography.fernet import Fernet

    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key().decode()
    # O_EXCL so two processes starting at once cannot both write a different key.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(key)
    return key


def load_settings(**overrides: object) -> Settings:
    """Build settings from the environment; raise ``SettingsError`` naming the variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = [str(part) for part in error["loc"]]
            variable = f"SWITCHBOARD_{loc[0].upper()}" if loc else "settings"
            if len(loc) > 1:  # which entry of a mapping or list: "… (send_email)"
                variable += f" ({'.'.join(loc[1:])})"
            problems.append(f"{variable}: {error['msg']}")
        raise SettingsError("invalid configuration:\n  " + "\n  ".join(problems)) from None


def new_token() -> str:
    return "sb_" + secrets.token_urlsafe(32)
