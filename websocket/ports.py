"""What the streaming layer needs from the application, declared here so that it depends
on nothing above it. The app passes its implementations in: the services (with the gate)
through Starlette's lifespan state, the failure reporter with the turn engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from starlette.requests import HTTPConnection

from storage.records import UserRecord
from wire.events import ErrorEvent

if TYPE_CHECKING:
    from storage.engine import Database
    from storage.events import EventStore
    from websocket.handler import ConnectionCounter
    from websocket.hub import Hub
    from websocket.limits import PromptLimiter
    from websocket.metrics import Metrics
    from websocket.turn import TurnManager


class SocketGate(Protocol):
    """Who may open a chat socket: the app's origin and sign-in rules."""

    def origin_allowed(self, conn: HTTPConnection) -> bool: ...

    async def authenticate(self, conn: HTTPConnection) -> UserRecord | None: ...


class FailureReporter(Protocol):
    """Logs why a turn failed, server-side, and returns its ``error`` event: a short,
    secret-free ``code``, ``message`` and ``retryable``."""

    def __call__(self, exc: BaseException, extra: Mapping[str, Any]) -> ErrorEvent: ...


class SocketLimits(Protocol):
    """The settings a chat socket enforces (``app.settings.Settings`` has them)."""

    @property
    def max_connections_per_user(self) -> int: ...

    @property
    def max_frame_bytes(self) -> int: ...

    @property
    def max_prompt_chars(self) -> int: ...

    @property
    def max_turns_per_user(self) -> int: ...


class SocketServices(Protocol):
    """What the chat socket endpoint uses of the app's services (``app.services.Services``),
    which the app's lifespan puts in Starlette's lifespan state as ``services``."""

    @property
    def settings(self) -> SocketLimits: ...

    @property
    def gate(self) -> SocketGate: ...

    @property
    def db(self) -> Database: ...

    @property
    def store(self) -> EventStore: ...

    @property
    def hub(self) -> Hub: ...

    @property
    def turns(self) -> TurnManager: ...

    @property
    def connections(self) -> ConnectionCounter: ...

    @property
    def prompt_limiter(self) -> PromptLimiter: ...

    @property
    def metrics(self) -> Metrics: ...


def socket_services(conn: HTTPConnection) -> SocketServices:
    """The app's services, from the lifespan state of this socket (``websocket.state``)."""
    services: SocketServices | None = getattr(conn.state, "services", None)
    if services is None:
        raise RuntimeError(
            "no services in the lifespan state: the app's lifespan has not run "
            "(serve it with lifespan on)"
        )
    return services
