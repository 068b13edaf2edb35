"""The application factory: ``uvicorn --factory app.main:create_app``.

There is deliberately no module-level ``app``: importing this module has no side effects.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from sqlalchemy.engine import make_url
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.approvals_api import approval_routes
from app.errors import exception_handlers
from app.metrics import metrics_route
from app.rest import rest_routes, services_of
from app.services import Services, build_services
from app.settings import Settings, load_settings
from app.ui import ui_routes
from storage.migrate import check_current
from storage.users import UserRepository

logger = logging.getLogger("switchboard.app")

# Seconds /readyz waits for the database before answering 503.
READY_TIMEOUT = 3.0

LifespanHook = Callable[[Services], AbstractAsyncContextManager[object]]
"""Started after the services, stopped (in reverse order) before the engine is disposed.

The websocket side plugs in here: a hook sets ``services.hub`` / ``services.turns`` / …,
yields while the app serves, and drains its turns when the app shuts down.
"""


class StartupError(RuntimeError):
    """The app cannot start; the message says what to do."""


def safe_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    # Not asyncio.wait_for: after its timeout it waits for the cancelled ping to end, which
    # during a database hang is the driver's own time. ping returns within its timeout.
    services = services_of(request)
    checks = {"database": "ok" if await services.db.ping(READY_TIMEOUT) else "unavailable"}
    if services.turns is not None and services.turns.cluster.remote:
        checks["redis"] = "ok" if services.turns.cluster.healthy else "unreachable"
    if checks["database"] != "ok":
        return JSONResponse({"status": "unavailable", **checks}, status_code=503)
    # Without Redis this instance still serves safely (the database decides who runs a
    # turn), but other instances' events reach its sockets late: degraded, not unready.
    degraded = any(state != "ok" for state in checks.values())
    return JSONResponse({"status": "degraded" if degraded else "ok", **checks})


async def prepare_database(services: Services) -> None:
    """Refuse to serve an unmigrated database; finish turns a crash left running."""
    settings = services.settings
    try:
        migrated = await check_current(services.db)
    except Exception as exc:
        raise StartupError(
            f"cannot reach the database at {safe_url(settings.database_url)}: "
            f"{type(exc).__name__}: {exc}; check SWITCHBOARD_DATABASE_URL"
        ) from exc
    if not migrated:
        raise StartupError("database is not migrated: run `switchboard migrate`")
    if settings.resolved_auth_mode == "local":
        services.local_user = await UserRepository(services.db).ensure_local_user()
    # Turns a crash left running are closed by the streaming side, which knows whether
    # another instance still runs them (app.streaming).


def create_app(
    settings: Settings | None = None,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    lifespan_hooks: Sequence[LifespanHook] = (),
) -> Starlette:
    """Build the ASGI app. ``settings`` default to the environment (``SWITCHBOARD_*``).

    ``extra_routes`` (the WebSocket endpoint, the UI, metrics, connectors API) are added
    after the built-in ones; ``lifespan_hooks`` run inside the lifespan, see ``LifespanHook``.
    """
    settings = settings if settings is not None else load_settings()
    # Imported here: the streaming side imports app.auth, which imports this package.
    from app.connectors_api import connector_routes, http_lifespan
    from app.openresponses.routes import open_responses_routes
    from app.rap_api import rap_lifespan, rap_routes
    from app.streaming import streaming_lifespan
    from websocket.handler import websocket_routes

    # The HTTP client first: the turns use it, and they drain before it is closed.
    # RAP discovery needs the HTTP client and must finish before the orchestrator is built.
    lifespan_hooks = (http_lifespan, rap_lifespan, streaming_lifespan, *lifespan_hooks)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        services = await build_services(settings)
        async with AsyncExitStack() as stack:
            stack.push_async_callback(services.db.dispose)
            await prepare_database(services)
            app.state.services = services
            for hook in lifespan_hooks:
                await stack.enter_async_context(hook(services))
            logger.info(
                "switchboard started",
                extra={
                    "auth_mode": settings.resolved_auth_mode,
                    "database": safe_url(settings.database_url),
                },
            )
            yield
        logger.info("switchboard stopped")

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        metrics_route(),
        *rest_routes(),
        *approval_routes(),
        *websocket_routes(),
        *connector_routes(),
        *rap_routes(),
        *open_responses_routes(),
        *extra_routes,
        *ui_routes(),
    ]
    return Starlette(routes=routes, exception_handlers=exception_handlers(), lifespan=lifespan)
