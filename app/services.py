"""The application's shared objects, built once per process and kept on ``app.state``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cryptography.fernet import Fernet, MultiFernet

from app.auth import AppSocketGate, TokenCache
from app.settings import Settings, SettingsError
from storage.engine import Database
from storage.records import UserRecord
from websocket.metrics import Metrics


@dataclass
class Services:
    settings: Settings
    db: Database
    fernet: MultiFernet
    # The websocket side (hub, turn runner, connectors, model provider) is plugged in by
    # ``create_app(lifespan_hooks=...)``.
    hub: Any = None
    turns: Any = None
    store: Any = None
    connections: Any = None
    connectors: Any = None
    # The one outbound httpx.AsyncClient of the app (live connectors, OAuth, Plaid Link).
    http: Any = None
    demo: Any = None
    model_provider: Any = None
    # Auth caches: the local user's record (local mode) and recent token lookups.
    local_user: UserRecord | None = None
    token_cache: TokenCache = field(default_factory=TokenCache)
    metrics: Metrics = field(default_factory=Metrics)
    prompt_limiter: Any = None
    # RAP remote tools (connectors.rap.runtime.RapRuntime), when SWITCHBOARD_RAP_TOOLS is set.
    rap: Any = None

    @property
    def gate(self) -> AppSocketGate:
        """Who may open a chat socket, for the streaming layer."""
        return AppSocketGate(self)


def build_fernet(secret: str) -> MultiFernet:
    """A MultiFernet from ``key1,key2,…``: the first key encrypts, every key decrypts.

    To rotate, put the new key first and keep the old ones after it until every stored
    credential has been re-encrypted.
    """
    keys = [part.strip() for part in secret.split(",") if part.strip()]
    if not keys:
        raise SettingsError("SWITCHBOARD_SECRET_KEY: is empty; unset it or give a Fernet key")
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError:
        raise SettingsError(
            "SWITCHBOARD_SECRET_KEY: not a valid Fernet key (32 url-safe base64-encoded bytes); "
            "generate one with: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())'"
        ) from None


async def build_services(settings: Settings) -> Services:
    """Create the engine and the key ring. Nothing touches the database yet."""
    fernet = build_fernet(settings.resolved_secret_key)
    return Services(settings=settings, db=Database(settings.database_url), fernet=fernet)
