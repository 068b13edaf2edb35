"""``GET /api/auth/config``: how the bundled UI signs in on this server (public).

In oidc mode the page needs the provider's endpoints and this server's public client id
to run the authorization-code flow with PKCE itself (``static/js/oidc.js``); the server
hands them over from its cached discovery document, so the page makes no discovery
request of its own. Nothing here is secret: a public client has no secret.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.errors import api_error
from app.oidc import ProviderUnreachable
from app.services import services_of

PATH = "/api/auth/config"


async def auth_config(request: Request) -> Response:
    services = services_of(request)
    settings = services.settings
    mode = settings.resolved_auth_mode
    body: dict[str, object] = {"mode": mode}
    verifier = services.auth.oidc
    if mode == "oidc" and verifier is not None:
        try:
            metadata = await verifier.metadata()
        except ProviderUnreachable as exc:
            return api_error(503, "server_error", str(exc), headers={"Retry-After": "5"})
        body["oidc"] = {
            "issuer": metadata.issuer,
            "client_id": settings.oidc_client_id,
            "scopes": settings.oidc_scopes,
            "audience": settings.oidc_audience,
            "authorization_endpoint": metadata.authorization_endpoint,
            "token_endpoint": metadata.token_endpoint,
            "end_session_endpoint": metadata.end_session_endpoint,
        }
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


def auth_config_routes() -> list[Route]:
    return [Route(PATH, auth_config, methods=["GET"])]
