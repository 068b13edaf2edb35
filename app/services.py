"""The application's shared objects, built whole, once, when the app starts.

``start_services(settings)`` builds each part as soon as what it needs exists (the engine
and the key ring, the local user, the outbound HTTP client, the RAP tools, the streaming
side) and then the ``Services`` from them, in one piece; when the app stops it stops the
parts in reverse order. The app's lifespan hands them to every request and socket through
Starlette's lifespan state: ``services_of(request)``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TypedDict

import httpx
from cryptography.fernet import Fernet, MultiFernet
from sqlalchemy.engine import make_url
from starlette.requests import HTTPConnection

from app.attachments.service import AttachmentService
from app.attachments.store import blob_store_for
from app.auth import AppSocketGate, Authenticator
from app.llm.providers import ConfiguredModels
from app.settings import Settings, SettingsError
from app.streaming import streaming_lifespan
from app.telemetry import start_tracing
from app.watchdog import LoopStalls, watch_loop
from connectors.context import DemoStore
from connectors.mcp.runtime import McpRuntime
from connectors.rap.runtime import RapRuntime
from connectors.registry import Connector, FailedConnector
from connectors.service_http import new_client
from storage.engine import Database, PoolSizing
from storage.events import EventStore
from storage.migrate import check_current
from storage.records import UserRecord
from storage.users import UserRepository
from websocket.handler import ConnectionCounter
from websocket.hub import Hub
from websocket.limits import PromptLimiter
from websocket.metrics import Metrics
from websocket.turn import TurnManager


class StartupError(RuntimeError):
    """The app cannot start; the message says what to do."""


@dataclass(frozen=True, eq=False)
class Services:
    """Everything the endpoints share, for the life of the app (``start_services``)."""

    settings: Settings
    db: Database
    fernet: MultiFernet
    # Who is calling: the local user or the token's (with its cache), and the socket rules.
    auth: Authenticator
    gate: AppSocketGate
    # The one outbound httpx.AsyncClient of the app (live connectors and their account flows).
    http: httpx.AsyncClient
    # RAP remote tools, when SWITCHBOARD_RAP_TOOLS is set.
    rap: RapRuntime | None
    # MCP servers as connectors, when SWITCHBOARD_MCP_SERVERS is set.
    mcp: McpRuntime | None
    connectors: tuple[Connector, ...]
    failed_connectors: tuple[FailedConnector, ...]
    demo: DemoStore
    store: EventStore
    connections: ConnectionCounter
    model_provider: ConfiguredModels
    hub: Hub
    turns: TurnManager
    prompt_limiter: PromptLimiter
    metrics: Metrics
    # Uploaded files (app/attachments): their rows and the blob store of their bytes.
    attachments: AttachmentService


class AppState(TypedDict):
    """What the app's lifespan puts in Starlette's lifespan state."""

    services: Services


def services_of(conn: HTTPConnection) -> Services:
    """The app's services, from the lifespan state of this request or socket."""
    services = getattr(conn.state, "services", None)
    if not isinstance(services, Services):
        raise RuntimeError(
            "no services in the lifespan state: the app's lifespan has not run "
            "(serve it with lifespan on)"
        )
    return services


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


def pool_sizing(settings: Settings) -> PoolSizing:
    return PoolSizing(
        size=settings.database_pool_size,
        max_overflow=settings.database_max_overflow,
        timeout=settings.database_pool_timeout,
    )


def safe_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


async def prepare_database(settings: Settings, db: Database) -> UserRecord | None:
    """Refuse to serve an unmigrated database; the local user in local mode."""
    try:
        migrated = await check_current(db)
    except Exception as exc:
        raise StartupError(
            f"cannot reach the database at {safe_url(settings.database_url)}: "
            f"{type(exc).__name__}: {exc}; check SWITCHBOARD_DATABASE_URL"
        ) from exc
    if not migrated:
        raise StartupError("database is not migrated: run `switchboard migrate`")
    # Turns a crash left running are closed by the streaming side, which knows whether
    # another instance still runs them (app.streaming).
    if settings.resolved_auth_mode == "local":
        return await UserRepository(db).ensure_local_user()
    return None


@asynccontextmanager
async def start_services(settings: Settings) -> AsyncIterator[Services]:
    """Build the services; stop them, in reverse order, when the block ends.

    The HTTP client comes before the turns, which use it and drain before it is closed;
    RAP discovery needs the client and must finish before the orchestrator is built; the
    engine is disposed last.
    """
    fernet = build_fernet(settings.resolved_secret_key)
    async with AsyncExitStack() as stack:
        metrics = Metrics()
        # First in, last out: it also watches start-up and the drain at shutdown.
        watchdog = stack.enter_context(
            watch_loop(settings.loop_watchdog_seconds, on_stall=LoopStalls(metrics.registry).count)
        )
        db = Database(settings.database_url, pool=pool_sizing(settings))
        stack.push_async_callback(db.dispose)
        local_user = await prepare_database(settings, db)
        # httpx logs every request URL at INFO; URLs carry users' search terms and ids.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        http = new_client()
        stack.push_async_callback(http.aclose)
        rap = RapRuntime(settings, http, db) if settings.rap_tools else None
        if rap is not None:
            await rap.start()
        # Connected before the orchestrator is built; one that cannot start is retried.
        mcp = McpRuntime(settings) if settings.mcp_servers else None
        if mcp is not None:
            stack.push_async_callback(mcp.aclose)
            await mcp.start()
        # Before the turns (they trace into it), closed after they have drained.
        tracing = start_tracing(settings, db)
        blobs = blob_store_for(settings)
        if tracing is not None:
            stack.push_async_callback(tracing.aclose)
        streaming = await stack.enter_async_context(
            streaming_lifespan(
                settings,
                db,
                fernet=fernet,
                http=http,
                rap=rap,
                mcp=mcp,
                metrics=metrics,
                tracer=tracing.tracer if tracing is not None else None,
                blobs=blobs,
            )
        )
        if watchdog is not None:  # a stall in a tool is counted under its connector's name
            watchdog.connector_names = {c.agent_name: c.name for c in streaming.connectors}
        auth = Authenticator.for_settings(settings, db, local_user, http)
        yield Services(
            settings=settings,
            db=db,
            fernet=fernet,
            auth=auth,
            gate=AppSocketGate(settings, auth),
            http=http,
            rap=rap,
            mcp=mcp,
            connectors=streaming.connectors,
            failed_connectors=streaming.failed_connectors,
            demo=streaming.demo,
            store=streaming.store,
            connections=streaming.connections,
            model_provider=streaming.models,
            hub=streaming.hub,
            turns=streaming.turns,
            prompt_limiter=streaming.prompt_limiter,
            metrics=metrics,
            attachments=AttachmentService(
                db,
                blobs,
                max_bytes=settings.attachment_max_bytes,
                types=frozenset(settings.attachment_types),
            ),
        )
