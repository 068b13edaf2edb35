"""uvicorn with a graceful drain: on SIGTERM running turns finish before sockets close.

uvicorn's own shutdown closes every connection at once. Ours first stops listening,
refuses new prompts, lets running turns finish for ``SWITCHBOARD_SHUTDOWN_GRACE_SECONDS``
(then cancels them, which persists them as ``cancelled``), and closes each socket with
1001 so clients reconnect, to another instance or to this one once it is back, and resume.
"""

from __future__ import annotations

import logging
import socket

import uvicorn

from app.services import Services
from websocket.handler import CLOSE_GOING_AWAY

logger = logging.getLogger("switchboard.server")


async def drain(services: Services) -> None:
    services.turns.draining = True
    running = services.turns.running_count
    if running:
        logger.info("draining: waiting for running turns", extra={"turns": running})
    await services.turns.shutdown(services.settings.shutdown_grace_seconds)
    await services.connections.close_all(CLOSE_GOING_AWAY, "server shutting down; resume")


class GracefulServer(uvicorn.Server):
    """uvicorn, draining the app's turns first; the services are those the app's lifespan
    left in the lifespan state uvicorn keeps for it."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in getattr(self, "servers", []):
            server.close()  # stop accepting first; the rest of the drain takes a while
        lifespan = getattr(self, "lifespan", None)  # set by startup
        services = lifespan.state.get("services") if lifespan is not None else None
        if isinstance(services, Services):
            await drain(services)
        await super().shutdown(sockets)
