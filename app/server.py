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
from starlette.applications import Starlette

from websocket.handler import CLOSE_GOING_AWAY

logger = logging.getLogger("switchboard.server")


async def drain(app: Starlette) -> None:
    services = getattr(app.state, "services", None)
    if services is None or services.turns is None:
        return
    services.turns.draining = True
    running = services.turns.running_count
    if running:
        logger.info("draining: waiting for running turns", extra={"turns": running})
    await services.turns.shutdown(services.settings.shutdown_grace_seconds)
    await services.connections.close_all(CLOSE_GOING_AWAY, "server shutting down; resume")


class GracefulServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: Starlette) -> None:
        super().__init__(config)
        self.app = app

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in getattr(self, "servers", []):
            server.close()  # stop accepting first; the rest of the drain takes a while
        await drain(self.app)
        await super().shutdown(sockets)
