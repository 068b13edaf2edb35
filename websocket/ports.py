"""What the streaming layer needs from the application, declared here so that it depends
on nothing above it. The app passes its implementations in: the gate with the services,
the failure reporter with the turn engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from starlette.requests import HTTPConnection

from storage.records import UserRecord
from wire.events import ErrorEvent


class SocketGate(Protocol):
    """Who may open a chat socket: the app's origin and sign-in rules."""

    def origin_allowed(self, conn: HTTPConnection) -> bool: ...

    async def authenticate(self, conn: HTTPConnection) -> UserRecord | None: ...


class FailureReporter(Protocol):
    """Logs why a turn failed, server-side, and returns its ``error`` event: a short,
    secret-free ``code``, ``message`` and ``retryable``."""

    def __call__(self, exc: BaseException, extra: Mapping[str, Any]) -> ErrorEvent: ...
