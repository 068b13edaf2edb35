"""Every 401 says how to authenticate, and ``/metrics`` is not public outside local mode.

``BearerChallenge`` wraps the whole app: a 401 from any route (REST, ``/v1``, AG-UI,
``/metrics``) gets ``WWW-Authenticate: Bearer realm="switchboard"`` (RFC 6750 §3), with
``error="invalid_token"`` and the reason when a credential was sent and refused
(``app.auth.auth_error_of``). The reason is one of this server's own sentences, never
anything taken from the token.

``/metrics`` answers anyone in local mode (loopback only); in the other modes it needs
the same credential as the API (an API token suits a Prometheus scraper), checked here so
the metrics module stays about metrics; or it is scraped without one on its own listener,
``SWITCHBOARD_METRICS_ADDRESS`` (``switchboard serve`` binds it), which serves nothing else.
"""

from __future__ import annotations

from ipaddress import ip_address

from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.auth import auth_error_of
from app.errors import DATABASE_UNAVAILABLE, api_error, unavailable_response
from app.services import services_of
from app.settings import split_address

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


def on_metrics_listener(scope: Scope, metrics_address: str | None) -> bool:
    """Whether the request came in on ``SWITCHBOARD_METRICS_ADDRESS``'s listener."""
    server = scope.get("server")
    if not metrics_address or not server:
        return False
    host, port = split_address(metrics_address)
    try:
        return int(server[1]) == port and ip_address(server[0]) == ip_address(host)
    except (ValueError, TypeError, IndexError):
        return False


_not_here = api_error(404, "not_found", "this address serves only /metrics")


class BearerChallenge:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        services = services_of(conn)
        if on_metrics_listener(scope, services.settings.metrics_address):
            # The scraper's own address: /metrics without a credential, and nothing else.
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": ""})
                return
            app = self.app if scope["path"] == METRICS_PATH else _not_here
            await app(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_challenging(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                headers = MutableHeaders(scope=message)
                if "www-authenticate" not in headers:
                    headers.append("WWW-Authenticate", challenge(conn))
            await send(message)

        if scope["path"] == METRICS_PATH:
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
