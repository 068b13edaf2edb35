"""Every 401 says how to authenticate, and ``/metrics`` is not public outside local mode.

``BearerChallenge`` wraps the whole app: a 401 from any route (REST, ``/v1``, AG-UI,
``/metrics``) gets ``WWW-Authenticate: Bearer realm="switchboard"`` (RFC 6750 §3), with
``error="invalid_token"`` and the reason when a credential was sent and refused
(``app.auth.auth_error_of``). The reason is one of this server's own sentences, never
anything taken from the token.

``/metrics`` answers anyone in local mode (loopback only); in the other modes it needs
the same credential as the API (an API token suits a Prometheus scraper), checked here so
the metrics module stays about metrics.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.auth import auth_error_of
from app.errors import DATABASE_UNAVAILABLE, api_error, unavailable_response
from app.services import services_of

REALM = "switchboard"
METRICS_PATH = "/metrics"


def _quoted(text: str) -> str:
    # A quoted-string (RFC 9110 §5.6.4) of printable ASCII without quotes or backslashes.
    kept = "".join(ch for ch in text if 0x20 <= ord(ch) < 0x7F and ch not in '"\\')
    return f'"{kept}"'


def challenge(conn: HTTPConnection) -> str:
    """The ``WWW-Authenticate`` value for a 401 of this request."""
    error = auth_error_of(conn)
    value = f"Bearer realm={_quoted(REALM)}"
    if error is not None:
        value += f", error={_quoted('invalid_token')}, error_description={_quoted(error)}"
    return value


class BearerChallenge:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)

        async def send_challenging(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                headers = MutableHeaders(scope=message)
                if "www-authenticate" not in headers:
                    headers.append("WWW-Authenticate", challenge(conn))
            await send(message)

        if scope["path"] == METRICS_PATH:
            services = services_of(conn)
            if services.settings.resolved_auth_mode != "local":
                try:
                    user = await services.auth.user_for(conn)
                except DATABASE_UNAVAILABLE as exc:
                    await unavailable_response(conn, exc)(scope, receive, send)
                    return
                if user is None:
                    refused = api_error(
                        401,
                        "unauthorized",
                        "/metrics needs a credential: send 'Authorization: Bearer <token>' "
                        "(e.g. a token from `switchboard users token NAME`)",
                    )
                    await refused(scope, receive, send_challenging)
                    return
        await self.app(scope, receive, send_challenging)
