"""The application factory: ``uvicorn --factory app.main:create_app``.

There is deliberately no module-level ``app``: importing this module has no side effects.
"""

from __future__ import annotations

import logging
import mimetypes
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Literal

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from app.agui.routes import agui_routes
from app.api_docs import Answer, Operation, documented
from app.api_models import Health, Readiness, json_answer
from app.approvals_api import approval_routes
from app.attachments.routes import attachment_routes
from app.auth import HostGuard, trusted_hosts
from app.auth_challenge import BearerChallenge
from app.auth_config import auth_config_routes
from app.connectors_api import connector_routes
from app.errors import DatabaseErrors, exception_handlers
from app.feedback_api import feedback_routes
from app.metrics import metrics_route
from app.openapi import openapi_routes
from app.openresponses.routes import open_responses_routes
from app.rap_api import rap_routes
from app.rest import rest_routes
from app.services import AppState, Services, safe_url, services_of, start_services
from app.settings import Settings, load_settings
from app.ui import ui_routes
from websocket.handler import websocket_routes

logger = logging.getLogger("switchboard.app")

# Seconds /readyz waits for the database before answering 503.
READY_TIMEOUT = 3.0

LifespanHook = Callable[[Services], AbstractAsyncContextManager[object]]
"""Started once the services are built, stopped (in reverse order) before they are.

Tests and benchmarks plug in here to reach into the parts (a scripted model, a barrier on
the event store) before the app serves.
"""


@documented(
    "GET",
    Operation(
        summary="Liveness: the process answers",
        tag="service",
        signed_in=False,
        answers={200: Answer("Alive", Health)},
    ),
)
async def healthz(request: Request) -> Response:
    return json_answer(Health(status="ok"))


@documented(
    "GET",
    Operation(
        summary="Readiness: the database answers (and Redis, when configured)",
        tag="service",
        signed_in=False,
        answers={
            200: Answer("Ready (ok), or serving without Redis (degraded)", Readiness),
            503: Answer("The database is unreachable", Readiness),
        },
    ),
)
async def readyz(request: Request) -> Response:
    # Not asyncio.wait_for: after its timeout it waits for the cancelled ping to end, which
    # during a database hang is the driver's own time. ping returns within its timeout.
    services = services_of(request)
    database: Literal["ok", "unavailable"] = (
        "ok" if await services.db.ping(READY_TIMEOUT) else "unavailable"
    )
    redis: Literal["ok", "unreachable"] | None = None
    if services.turns.cluster.remote:
        redis = "ok" if services.turns.cluster.healthy else "unreachable"
    if database != "ok":
        return json_answer(
            Readiness(status="unavailable", database=database, redis=redis), status_code=503
        )
    # Without Redis this instance still serves safely (the database decides who runs a
    # turn), but other instances' events reach its sockets late: degraded, not unready.
    status: Literal["ok", "degraded"] = "degraded" if redis not in (None, "ok") else "ok"
    return json_answer(Readiness(status=status, database=database, redis=redis))


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
    # The first guess of a static file's type reads the system's MIME tables from disk:
    # here, at start-up, rather than on the event loop while a request waits.
    mimetypes.init()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[AppState]:
        async with start_services(settings) as services, AsyncExitStack() as hooks:
            for hook in lifespan_hooks:
                await hooks.enter_async_context(hook(services))
            logger.info(
                "switchboard started",
                extra={
                    "auth_mode": settings.resolved_auth_mode,
                    "database": safe_url(settings.database_url),
                },
            )
            # Starlette copies this into every request's and socket's state.
            yield {"services": services}
        logger.info("switchboard stopped")

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        metrics_route(),
        *rest_routes(),
        *feedback_routes(),
        *attachment_routes(),
        *auth_config_routes(),
        *approval_routes(),
        *websocket_routes(),
        *connector_routes(),
        *rap_routes(),
        *open_responses_routes(),
        *agui_routes(),
        *openapi_routes(),
        *extra_routes,
        *ui_routes(),
    ]
    hosts = trusted_hosts(settings)  # local mode: the DNS-rebinding defence
    middleware = [Middleware(HostGuard, allowed_hosts=hosts)] if hosts is not None else []
    middleware.append(Middleware(BearerChallenge))  # 401s say how; /metrics not public
    middleware.append(Middleware(DatabaseErrors))  # innermost: 503, a lost read run again
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers=exception_handlers(),
        lifespan=lifespan,
    )
