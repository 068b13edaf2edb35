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
from urllib.parse import urlsplit

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import NoDecode, SettingsConfigDict

from connectors.settings import ConnectorSettings
from websocket.protocol import (
    DEFAULT_MAX_PROMPT_CHARS,
    MAX_APPROVAL_ID,
    MAX_APPROVAL_REASON,
    MAX_ATTACHMENT_ID,
    MAX_ATTACHMENTS,
    MAX_CLIENT_MESSAGE_ID,
)

AuthMode = Literal["local", "token", "oidc", "header"]

# What app.attachments.sniff recognises from a file's bytes (kept here, not imported, so
# that settings stay free of the app's modules; a test holds the two lists together).
SNIFFABLE_TYPES = (
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
    "text/plain",
    "text/csv",
    "text/markdown",
    "application/json",
)
DEFAULT_ATTACHMENT_TYPES = SNIFFABLE_TYPES


class SettingsError(RuntimeError):
    """A setting is invalid; the message names the environment variable."""


class Settings(ConnectorSettings):
    """Every setting: the connectors' (inherited) and the server's own."""

    model_config = SettingsConfigDict(env_prefix="SWITCHBOARD_", extra="ignore", frozen=True)

    database_url: str = "sqlite+aiosqlite:///./data/switchboard.db"
    # PostgreSQL connections per process (storage.engine.PoolSizing): kept open, opened
    # beyond that under load, and seconds a transaction waits for one before it fails.
    database_pool_size: int = Field(20, ge=1, le=1000)
    database_max_overflow: int = Field(20, ge=0, le=1000)
    database_pool_timeout: float = Field(30.0, gt=0, le=600)
    data_dir: Path = Path("./data")
    auth_mode: AuthMode | None = None
    # oidc mode (app/oidc.py): bearer JWTs of this issuer, for this audience.
    oidc_issuer: str | None = None
    oidc_audience: str | None = None
    # The bundled UI's sign-in (authorization code + PKCE, a public client).
    oidc_client_id: str | None = None
    oidc_scopes: str = "openid profile email"
    oidc_leeway_seconds: float = Field(30.0, ge=0, le=600)
    # At most one JWKS refetch (a token signed by an unknown key) per this many seconds.
    oidc_jwks_refresh_seconds: float = Field(60.0, ge=0, le=86_400)
    oidc_timeout: float = Field(10.0, gt=0, le=120)
    # header mode (app/auth.py): the authenticating proxy's user and e-mail headers, and
    # the addresses (IPs or CIDR networks) that proxy connects from.
    auth_user_header: str = Field("X-Forwarded-User", min_length=1, max_length=100)
    auth_email_header: str = Field("X-Forwarded-Email", min_length=1, max_length=100)
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # host:port of a second listener serving only /metrics, without a credential (bind it
    # where only the scraper reaches); /metrics on the main address still needs one.
    metrics_address: str | None = None
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    secret_key: str | None = None
    model: str = "offline"
    # Model providers (app/llm/providers.py); specs are parsed by app/llm/spec.py.
    connector_model: str | None = None
    suggest_model: str | None = None
    model_api_key: SecretStr | None = None
    model_timeout: float = Field(60.0, gt=0, le=3600)
    model_call_timeout: float = Field(300.0, gt=0, le=86400)
    model_max_retries: int = Field(2, ge=0, le=10)
    suggest_timeout: float = Field(15.0, gt=0, le=300)
    # The model's context window in tokens (docs/memory.md); unset, known OpenAI models'
    # own (app/llm/context_sizes.py) and 32,768 for any other. Of it, the answer keeps
    # ``answer_reserve_tokens`` (unset: an eighth, at most 16,384); the history is
    # summarised to fit the rest with the instructions, the tools and the prompt.
    model_context_tokens: int | None = Field(None, ge=1024, le=10_000_000)
    answer_reserve_tokens: int | None = Field(None, ge=0, le=1_000_000)
    tracing: bool = False
    # OpenTelemetry tracing over OTLP/HTTP (app.telemetry, the ``otel`` extra): the
    # collector's base URL (``/v1/traces`` is added) or its full traces URL. The standard
    # OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variables turn it on too.
    otlp_endpoint: str | None = None
    # Prompt, answer and tool argument text in trace spans (OpenAI's and OTLP's): off, so a
    # trace carries ids, names, outcomes and token counts only.
    trace_content: bool = False
    timezone: str = "UTC"
    locale: str = Field("en-US", min_length=2, max_length=35, pattern=r"^[A-Za-z0-9-]+$")
    # The offline demo model streams a word every 20 ms, about a real model's pace, so a
    # person trying `make run` sees the answer stream; tests and benchmarks set their own.
    offline_delta_delay: float = Field(0.02, ge=0, le=5)
    expose_debug_info: bool = False
    max_prompt_chars: int = Field(DEFAULT_MAX_PROMPT_CHARS, ge=1)
    # Unset: derived from max_prompt_chars (which must come first), so that every legal
    # prompt fits in a frame however a client encodes it; see min_frame_bytes.
    max_frame_bytes: int = Field(
        default_factory=lambda data: min_frame_bytes(
            data.get("max_prompt_chars", DEFAULT_MAX_PROMPT_CHARS)
        )
    )
    max_connections_per_user: int = Field(32, ge=1)
    # WebSocket compression (permessage-deflate). Off by default: its zlib state, taken at
    # the handshake, was most of an idle socket's memory (docs/benchmarks.md, idle
    # sockets), and the frames are small JSON that compresses little per message. Turn it
    # on for clients on slow links with long answers.
    ws_per_message_deflate: bool = False
    prompts_per_minute: int = Field(30, ge=1)
    max_turns_per_user: int = Field(4, ge=1)
    shutdown_grace_seconds: float = Field(10.0, ge=0)
    # Seconds the event loop may be blocked (a sync call in async code) before the watchdog
    # logs one warning with the loop's stack (app/watchdog.py); 0 turns it off.
    loop_watchdog_seconds: float = Field(1.0, ge=0, le=3600)
    redis_url: str | None = None
    # Where the shared prompt rate limits live in Redis (websocket.limits); deployments
    # sharing one Redis keep theirs apart with their own prefix.
    rate_limit_key_prefix: str = Field(
        "sb:ratelimit", min_length=1, max_length=100, pattern=r"^[A-Za-z0-9:_.-]+$"
    )
    turn_lease_seconds: float = Field(15.0, ge=1)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # Seconds a pending approval waits before it expires (treated as a rejection).
    approval_timeout: float = Field(86_400.0, gt=0, le=30 * 86_400)
    # How long one Open Responses WebSocket may stay open (the spec's 60 minutes).
    responses_socket_seconds: float = Field(3600.0, gt=0, le=86_400)
    # Attachments (app/attachments): the largest file accepted, and the types accepted, as
    # sniffed from the bytes (app.attachments.sniff.KNOWN_TYPES lists what can be sniffed).
    attachment_max_bytes: int = Field(10 * 1024 * 1024, ge=1, le=100 * 1024 * 1024)
    attachment_types: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_ATTACHMENT_TYPES)
    )
    # Where their bytes go: "local" (files under <data dir>/attachments) or "s3" (an
    # S3-compatible bucket; the ``s3`` extra).
    attachment_store: Literal["local", "s3"] = "local"
    attachment_s3_bucket: str | None = None
    # Unset: AWS itself; else the base URL of an S3-compatible server (MinIO, Ceph, R2).
    attachment_s3_endpoint: str | None = None
    attachment_s3_region: str = "us-east-1"
    attachment_s3_access_key_id: str | None = None
    attachment_s3_secret_access_key: SecretStr | None = None

    @field_validator("attachment_types", mode="before")
    @classmethod
    def _split_types(cls, value: object) -> object:
        if isinstance(value, str) and value.lstrip().startswith("["):
            return json.loads(value)
        if isinstance(value, str):
            return [part.strip().lower() for part in value.split(",") if part.strip()]
        return value

    @field_validator("attachment_types")
    @classmethod
    def _check_types(cls, value: list[str]) -> list[str]:
        unknown = [item for item in value if item not in SNIFFABLE_TYPES]
        if unknown:
            raise ValueError(
                f"{', '.join(unknown)}: not a type the server can recognise; "
                f"choose from {', '.join(SNIFFABLE_TYPES)}"
            )
        return value

    @field_validator("allowed_origins", "trusted_proxies", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        # Accept "a,b" as well as a JSON list, which is what people type in a shell.
        if isinstance(value, str) and value.lstrip().startswith("["):
            return json.loads(value)
        if isinstance(value, str):
            return [part.strip().rstrip("/") for part in value.split(",") if part.strip()]
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _check_proxies(cls, value: list[str]) -> list[str]:
        for item in value:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(
                    f"{item!r} is not an IP address or network (e.g. 10.0.0.5 or 10.0.0.0/24)"
                ) from None
        return value

    @field_validator("metrics_address")
    @classmethod
    def _check_metrics_address(cls, value: str | None) -> str | None:
        if not value or not value.strip():
            return None
        split_address(value.strip())  # ValueError says what was expected
        return value.strip()

    @field_validator("oidc_issuer")
    @classmethod
    def _check_issuer(cls, value: str | None) -> str | None:
        if not value:
            return None
        value = value.strip().rstrip("/")
        if not value.startswith(("https://", "http://")):
            raise ValueError("must be the issuer's URL, e.g. https://id.example.com/realms/main")
        # Plain HTTP would let anyone on the path swap the signing keys: loopback only.
        host = urlsplit(value).hostname or ""
        if value.startswith("http://") and host not in ("localhost", "127.0.0.1", "::1"):
            raise ValueError("must use https:// (plain http:// only for a provider on loopback)")
        return value

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value or None

    @field_validator("otlp_endpoint")
    @classmethod
    def _check_otlp_endpoint(cls, value: str | None) -> str | None:
        value = (value or "").strip()
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL (OTLP over HTTP)")
        return value or None

    @field_validator("model", "connector_model", "suggest_model")
    @classmethod
    def _check_model_spec(cls, value: str | None, info: ValidationInfo) -> str | None:
        from app.llm.spec import parse_optional_spec

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
        from app.llm.spec import parse_optional_spec

        chosen = {
            "SWITCHBOARD_MODEL": self.model,
            "SWITCHBOARD_CONNECTOR_MODEL": self.connector_model,
            "SWITCHBOARD_SUGGEST_MODEL": self.suggest_model,
        }
        using_openai = [
            name
            for name, value in chosen.items()
            if value
            and value != "off"
            and (spec := parse_optional_spec(value))
            and spec.kind == "openai"
        ]
        has_key = bool(
            self.model_api_key
            and self.model_api_key.get_secret_value()
            or os.environ.get("OPENAI_API_KEY")
        )
        if using_openai and not has_key:
            raise ValueError(
                f"{' and '.join(using_openai)}=openai:… needs an API key: set "
                "SWITCHBOARD_MODEL_API_KEY or OPENAI_API_KEY"
            )
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
    def _check_attachment_store(self) -> Settings:
        if self.attachment_store == "s3" and not self.attachment_s3_bucket:
            raise ValueError(
                "SWITCHBOARD_ATTACHMENT_STORE=s3 needs SWITCHBOARD_ATTACHMENT_S3_BUCKET "
                "(and, for a server other than AWS, SWITCHBOARD_ATTACHMENT_S3_ENDPOINT)"
            )
        return self

    @model_validator(mode="after")
    def _check_auth(self) -> Settings:
        if self.resolved_auth_mode == "local" and not self.is_loopback:
            raise ValueError(
                f"auth_mode=local is only allowed on a loopback address, not {self.host!r}; "
                "set SWITCHBOARD_AUTH_MODE=token, oidc or header"
            )
        if self.resolved_auth_mode == "oidc":
            missing = [
                name
                for name, value in (
                    ("SWITCHBOARD_OIDC_ISSUER", self.oidc_issuer),
                    ("SWITCHBOARD_OIDC_AUDIENCE", self.oidc_audience),
                )
                if not value
            ]
            if missing:
                raise ValueError(f"auth_mode=oidc needs {' and '.join(missing)}")
        if self.resolved_auth_mode == "header" and not self.trusted_proxies:
            raise ValueError(
                "auth_mode=header trusts a user header only from the authenticating proxy: "
                "set SWITCHBOARD_TRUSTED_PROXIES to its addresses (e.g. 127.0.0.1 or "
                "10.0.0.0/24); without it anyone could send the header"
            )
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
                f"least {needed}, or leave it unset to derive it from the prompt limit"
            )
        return self

    @property
    def resolved_auth_mode(self) -> AuthMode:
        if self.auth_mode is not None:
            return self.auth_mode
        return "local" if self.is_loopback else "token"

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

    The largest is a prompt of ``max_prompt_chars`` characters with a client_message_id
    and the most attachment ids, or (for a tiny prompt limit) an approval with its id and the longest reason; every
    character of them escaped at the worst case.
    """
    longest_text = max(
        max_prompt_chars + MAX_CLIENT_MESSAGE_ID + MAX_ATTACHMENTS * MAX_ATTACHMENT_ID,
        MAX_APPROVAL_ID + MAX_APPROVAL_REASON,
    )
    return ESCAPED_BYTES_PER_CHAR * longest_text + FRAME_SLACK_BYTES


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


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` for IPv6) as (host, port); ValueError if it is not."""
    host, sep, port = address.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{address!r} is not host:port, e.g. 127.0.0.1:9100 or [::1]:9100")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"{host!r} is not an IP address (bind to an address)") from None
    return host, int(port)


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
