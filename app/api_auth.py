"""Sign-in for the HTTP endpoints that need a user: Starlette's ``AuthenticationMiddleware``.

A route that needs a user takes ``middleware=needs_user()``; its endpoint reads the user
with ``signed_in(request)``. The backend refuses a browser page from an Origin the server
does not allow (403) and finds the user (``app.auth.Authenticator``); nobody signed in is
a 401 from ``signed_in``. A route with its own error shape passes its own ``on_error``
(``app.openresponses.routes``).

The chat socket keeps its own path (``websocket.ports.SocketGate``): the middleware
refuses a socket by closing it before it is accepted, which a client sees as an HTTP 403
without the protocol's close code; it would run before the socket's own checks (its chat
id, ``after_seq``); and a socket opened while the database is down must be accepted and
closed 1013, not refused.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    BaseUser,
)
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import Response

from app.auth import ORIGIN_REFUSED, auth_error_of, check_origin
from app.errors import DATABASE_UNAVAILABLE, ApiError, api_error, unavailable_response
from app.oidc import ProviderUnreachable
from app.services import services_of
from storage.records import UserRecord

AuthErrorHandler = Callable[[HTTPConnection, AuthenticationError], Response]


class SignedIn(BaseUser):
    """``request.user`` of a signed-in request: its ``UserRecord`` is ``record``."""

    def __init__(self, record: UserRecord) -> None:
        self.record = record

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.record.name

    @property
    def identity(self) -> str:
        return self.record.id


class OriginRefused(AuthenticationError):
    """A browser page from an Origin the server does not allow."""


class UsersUnavailable(AuthenticationError):
    """The user could not be looked up: the database is unavailable (``cause``)."""

    def __init__(self, cause: Exception) -> None:
        super().__init__("the database is unavailable")
        self.cause = cause


class ProviderDown(AuthenticationError):
    """The identity provider's keys could not be fetched to check a token: temporary."""


class UserBackend(AuthenticationBackend):
    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        services = services_of(conn)
        if not check_origin(conn, services.settings):
            raise OriginRefused(ORIGIN_REFUSED)
        try:
            user = await services.auth.user_for(conn)
        except ProviderUnreachable as exc:
            raise ProviderDown(str(exc)) from exc
        except DATABASE_UNAVAILABLE as exc:
            raise UsersUnavailable(exc) from exc
        if user is None:
            return None
        return AuthCredentials(["authenticated"]), SignedIn(user)


def api_auth_error(conn: HTTPConnection, exc: AuthenticationError) -> Response:
    """The REST answer when the backend refused: 403, or 503 while the database is down."""
    if isinstance(exc, UsersUnavailable):
        return unavailable_response(conn, exc.cause)
    if isinstance(exc, ProviderDown):
        return api_error(503, "server_error", str(exc), headers={"Retry-After": "5"})
    return api_error(403, "forbidden", str(exc))


def needs_user(on_error: AuthErrorHandler = api_auth_error) -> list[Middleware]:
    """The ``middleware`` of a route whose endpoint needs a user (``signed_in``)."""
    return [Middleware(AuthenticationMiddleware, backend=UserBackend(), on_error=on_error)]


def signed_in(conn: HTTPConnection) -> UserRecord:
    """The signed-in user; a 401 ``ApiError`` when nobody is."""
    if "user" not in conn.scope:
        raise RuntimeError(f"{conn.url.path}: its route needs middleware=needs_user()")
    user = conn.user
    if isinstance(user, SignedIn):
        return user.record
    refused = auth_error_of(conn)
    if refused is not None:
        raise ApiError(
            401,
            "unauthorized",
            f"invalid credential: {refused}; send a valid 'Authorization: Bearer <token>'",
        )
    raise ApiError(
        401,
        "unauthorized",
        "missing or invalid token: send 'Authorization: Bearer <token>' "
        "(create one with `switchboard users create NAME`)",
    )
