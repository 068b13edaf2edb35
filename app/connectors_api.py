"""Connector accounts over REST (docs/protocol.md §7), and where the live flows complete.

``GET /api/connectors``                 every connector, its tools, mode and the user's state
``POST /api/connectors/{name}/connect`` demo: connected at once; live Gmail: the Google
                                        OAuth URL; live Plaid: a Link token
``DELETE /api/connectors/{name}``       disconnect and delete the credentials
``POST /api/connectors/plaid/exchange`` Plaid Link's ``public_token`` → a linked bank
``GET /oauth/google/callback``          Google sends the browser back here with the code

Same auth and origin checks as the rest of the API, except the Google callback: Google's
redirect carries no token, so it is accepted from the state's signed-in user or from the
browser that pressed Connect (the ``sb_oauth`` binding cookie). The shapes are documented in
``docs/protocol.md`` ("Connector endpoints"). Credentials are Fernet-encrypted by
``storage.accounts``; nothing here returns or logs a token.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.api_auth import needs_user, signed_in
from app.api_json import rfc3339
from app.auth import own_origin
from app.errors import ApiError
from app.request_input import json_body
from app.services import Services, services_of
from connectors.accounts import (
    DEMO,
    connection_state,
    demo_credentials,
    demo_meta,
    live_credentials,
)
from connectors.gmail import oauth as google
from connectors.plaid import client as plaid
from connectors.registry import Connector
from connectors.service_http import ServiceError, ServiceHttp, read_json
from storage.accounts import AccountRepository
from storage.records import ConnectedAccount, UserRecord

logger = logging.getLogger("switchboard.connectors")

CALLBACK_PATH = "/oauth/google/callback"
# Binds a Google flow to the browser that started it; its hash is sealed in the state.
BINDING_COOKIE = "sb_oauth"
_GOOGLE_ERROR = re.compile(r"[a-z_]{1,40}")


# ----------------------------------------------------------------------------- helpers


def _connector(services: Services, name: str) -> Connector:
    for connector in services.connectors:
        if connector.name == name:
            return connector
    raise ApiError(404, "not_found", f"no connector named {name!r}; GET /api/connectors lists them")


def _accounts(services: Services, user: UserRecord) -> AccountRepository:
    return AccountRepository(services.db, user.id, services.fernet)


def describe(
    services: Services, connector: Connector, row: ConnectedAccount | None
) -> dict[str, Any]:
    mode = services.settings.connector_mode(connector.name)
    state = connection_state(connector, mode, row.meta if row else None)
    return {
        "name": connector.name,
        "display_name": connector.display_name,
        "agent_name": connector.agent_name,
        "mode": mode,
        "needs_account": connector.needs_account,
        "connected": state.connected,
        "account": state.account,
        "connected_at": rfc3339(row.connected_at) if row and state.connected else None,
        "tools": [
            {"name": name, "description": description}
            for name, description in connector.tool_descriptions.items()
        ],
    }


async def _described(services: Services, user: UserRecord, connector: Connector) -> dict[str, Any]:
    rows = {row.connector: row for row in await _accounts(services, user).list()}
    return describe(services, connector, rows.get(connector.name))


def _upstream(exc: ServiceError) -> ApiError:
    # The message is already safe to show (connectors.service_http); 502: the service failed us.
    status = 400 if exc.status == 400 else 502
    code = "invalid_request" if status == 400 else "server_error"
    return ApiError(status, code, str(exc))


# ----------------------------------------------------------------------------- GET


async def list_connectors(request: Request) -> Response:
    user = signed_in(request)
    services = services_of(request)
    rows = {row.connector: row for row in await _accounts(services, user).list()}
    return JSONResponse(
        {
            "connectors": [
                describe(services, connector, rows.get(connector.name))
                for connector in services.connectors
            ],
            # Installed but not served (a broken plug-in), and why: no secrets in a reason.
            "failed": [
                {"name": failed.name, "origin": failed.origin, "reason": failed.reason}
                for failed in services.failed_connectors
            ],
        }
    )


# ----------------------------------------------------------------------------- connect

LiveFlow = Callable[[Request, Services, UserRecord], Awaitable[Response]]


def _bind_browser(response: Response, request: Request, nonce: str) -> None:
    """Give the starting browser the flow's nonce, for the callback to check.

    Lax, so it comes back on Google's top-level redirect; HttpOnly and limited to the
    callback path, since nothing else needs it; it lives as long as the state does.
    """
    response.set_cookie(
        BINDING_COOKIE,
        nonce,
        max_age=google.STATE_MAX_AGE,
        path=CALLBACK_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="lax",
    )


async def _start_google(request: Request, services: Services, user: UserRecord) -> Response:
    settings = services.settings
    redirect_uri = settings.google_redirect_uri
    if redirect_uri is None:
        origin = own_origin(request)
        if origin is None:
            raise ApiError(
                400,
                "invalid_request",
                "cannot tell this server's address from the "
                "request; set SWITCHBOARD_GOOGLE_REDIRECT_URI",
            )
        redirect_uri = origin + CALLBACK_PATH
    verifier = google.new_verifier()
    nonce, browser_hash = google.new_browser_binding()
    state = google.pack_state(
        services.fernet, google.PendingAuthorization(user.id, verifier, redirect_uri, browser_hash)
    )
    response = JSONResponse(
        {
            "status": "redirect",
            "url": google.authorization_url(settings, state, verifier, redirect_uri),
        }
    )
    _bind_browser(response, request, nonce)
    return response


async def _start_plaid(request: Request, services: Services, user: UserRecord) -> Response:
    api = plaid.api_for(services.http, services.settings)
    try:
        token = await api.create_link_token(user.id, "Switchboard")
    except ServiceError as exc:
        raise _upstream(exc) from None
    return JSONResponse(
        {
            "status": "link_token",
            "link_token": token.get("link_token"),
            "expiration": token.get("expiration"),
        }
    )


LIVE_FLOWS: dict[str, LiveFlow] = {"gmail": _start_google, "plaid": _start_plaid}


async def connect(request: Request) -> Response:
    user = signed_in(request)
    services = services_of(request)
    connector = _connector(services, request.path_params["name"])
    mode = services.settings.connector_mode(connector.name)
    if connector.needs_account and mode == DEMO:
        await _accounts(services, user).connect(
            connector.name, demo_credentials(True), demo_meta(connector, True)
        )
    elif connector.needs_account:
        flow = LIVE_FLOWS.get(connector.name)
        if flow is None:
            raise ApiError(
                400,
                "invalid_request",
                f"{connector.name} has no live connection flow in this server; run it in demo mode",
            )
        return await flow(request, services, user)
    # Connectors without a per-user account (server keys) are always connected.
    return JSONResponse(
        {"status": "connected", "connector": await _described(services, user, connector)}
    )


# ----------------------------------------------------------------------------- disconnect


async def _forget_google(services: Services, credentials: dict[str, Any]) -> None:
    token = credentials.get("refresh_token") or credentials.get("access_token")
    if token:
        oauth = google.GoogleOAuth(_google_http(services, credentials), services.settings)
        await oauth.revoke(str(token))


async def _forget_plaid(services: Services, credentials: dict[str, Any]) -> None:
    await plaid.remove_items(plaid.api_for(services.http, services.settings), credentials)


FORGET: dict[str, Callable[[Services, dict[str, Any]], Awaitable[None]]] = {
    "gmail": _forget_google,
    "plaid": _forget_plaid,
}


async def disconnect(request: Request) -> Response:
    user = signed_in(request)
    services = services_of(request)
    connector = _connector(services, request.path_params["name"])
    if not connector.needs_account:
        raise ApiError(
            400,
            "invalid_request",
            f"{connector.name} has no per-user account to disconnect: it uses the server's keys",
        )
    accounts = _accounts(services, user)
    if services.settings.connector_mode(connector.name) == DEMO:
        # Recorded, so the demo connector stays disconnected until connected again.
        await accounts.connect(connector.name, demo_credentials(False), demo_meta(connector, False))
    else:
        credentials = await live_credentials(accounts, connector.name)
        forget = FORGET.get(connector.name)
        if credentials is not None and forget is not None:
            try:  # best effort: the credentials are deleted here whatever the provider says
                await forget(services, credentials)
            except ServiceError:
                logger.warning("could not revoke %s credentials at the provider", connector.name)
        await accounts.disconnect(connector.name)
    return JSONResponse(
        {"status": "disconnected", "connector": await _described(services, user, connector)}
    )


# ----------------------------------------------------------------------------- plaid exchange


class Institution(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str | None = Field(None, max_length=200)
    institution_id: str | None = Field(None, max_length=100)


class ExchangeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    public_token: str = Field(min_length=1, max_length=500)
    institution: Institution | None = None


async def plaid_exchange(request: Request) -> Response:
    user = signed_in(request)
    services = services_of(request)
    connector = _connector(services, "plaid")
    body: ExchangeRequest = await json_body(
        request, ExchangeRequest, '{"public_token": "public-…", "institution": {"name": …}}'
    )
    if services.settings.connector_mode(connector.name) == DEMO:
        raise ApiError(
            400,
            "invalid_request",
            "plaid runs in demo mode on this server: connect "
            "it with POST /api/connectors/plaid/connect (there is no Plaid Link)",
        )
    accounts = _accounts(services, user)
    institution = body.institution.model_dump() if body.institution else {}
    api = plaid.api_for(services.http, services.settings)
    try:
        credentials = await plaid.add_item(
            api, await live_credentials(accounts, "plaid"), body.public_token.strip(), institution
        )
    except plaid.PlaidError as exc:
        if exc.error_code == "INVALID_PUBLIC_TOKEN":
            raise ApiError(
                400,
                "invalid_request",
                "Plaid did not accept this public token "
                "(expired or already used); open Plaid Link again",
            ) from None
        raise _upstream(exc) from None
    except ServiceError as exc:
        raise _upstream(exc) from None
    await accounts.connect(connector.name, credentials, plaid.plaid_meta(credentials))
    return JSONResponse(
        {"status": "connected", "connector": await _described(services, user, connector)}
    )


# ----------------------------------------------------------------------------- google callback


def _page(status: int, title: str, message: str, connected: bool = False) -> HTMLResponse:
    """The page the browser lands on; tells an opener window (popup flow) how it went."""
    notice = json.dumps(
        {
            "type": "switchboard:connector",
            "name": "gmail",
            "status": "connected" if connected else "error",
            "message": message,
        }
    ).replace("<", "\\u003c")
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchboard · {html.escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto;">
<h1>{html.escape(title)}</h1>
<p>{html.escape(message)}</p>
<p><a href="/">Back to Switchboard</a></p>
<script>
if (window.opener) {{
  window.opener.postMessage({notice}, window.location.origin);
  window.close();
}}
</script>
</body></html>
"""
    return HTMLResponse(
        body,
        status_code=status,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


def _google_http(services: Services, credentials: dict[str, Any] | None = None) -> ServiceHttp:
    secret = services.settings.google_client_secret
    secrets = [secret.get_secret_value() if secret else None]
    if credentials:
        secrets += [credentials.get("access_token"), credentials.get("refresh_token")]
    return ServiceHttp.for_settings(services.http, "Google", services.settings, secrets)


async def _gmail_address(services: Services, access_token: str) -> str:
    """The connected mailbox's address (``users.getProfile``), also proving Gmail access."""
    http = _google_http(services, {"access_token": access_token})
    response = await http.send(
        "GET",
        f"{services.settings.gmail_base_url}/gmail/v1/users/me/profile",
        headers={"Authorization": f"Bearer {access_token}"},
    )
    if not response.is_success:
        raise http.status_error(response)
    body = read_json(response, "Gmail")
    address = body.get("emailAddress") if isinstance(body, dict) else None
    if not isinstance(address, str) or "@" not in address:
        raise ServiceError("Gmail did not say which address was connected; try again")
    return address


async def google_callback(request: Request) -> Response:
    response = await _google_callback(request)
    # Used once: whatever the outcome, another try starts at Connect with a new nonce.
    response.delete_cookie(
        BINDING_COOKIE,
        path=CALLBACK_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="lax",
    )
    return response


async def _google_callback(request: Request) -> Response:
    services = services_of(request)
    settings = services.settings
    query = request.query_params
    try:
        pending = google.unpack_state(services.fernet, query.get("state") or "")
    except google.InvalidState as exc:
        return _page(400, "Gmail was not connected", f"{str(exc)[0].upper()}{str(exc)[1:]}.")
    # Google's redirect carries no token (the UI keeps it out of cookies), so the browser
    # that pressed Connect proves itself with the binding cookie. The state alone is not
    # enough: whoever started a flow could get someone else to finish it.
    user = await services.auth.user_for(request)
    if user is not None and user.id != pending.user_id:
        return _page(
            403,
            "Gmail was not connected",
            "This sign-in was started by another "
            "Switchboard user. Use the Connect button of your own account.",
        )
    if user is None and not google.same_browser(pending, request.cookies.get(BINDING_COOKIE)):
        return _page(
            401,
            "Gmail was not connected",
            "This sign-in was not started in this "
            "browser. Finish it in the same browser that pressed Connect: use "
            "Connect again there.",
        )
    if query.get("error"):
        error = query["error"] if _GOOGLE_ERROR.fullmatch(query["error"]) else "error"
        return _page(
            400,
            "Gmail was not connected",
            f"Google sign-in ended with {error!r}; "
            "nothing was connected. Use Connect again to retry.",
        )
    code = query.get("code")
    if not code:
        return _page(
            400, "Gmail was not connected", "Google sent no authorization code. Use Connect again."
        )
    if settings.connector_mode("gmail") != "live":
        return _page(400, "Gmail was not connected", "Gmail runs in demo mode on this server.")
    oauth = google.GoogleOAuth(_google_http(services), settings)
    try:
        tokens = await oauth.exchange_code(code, pending.verifier, pending.redirect_uri)
        granted = set(str(tokens.get("scope") or "").split())
        missing = [scope.rsplit(".", 1)[-1] for scope in google.SCOPES if scope not in granted]
        if tokens.get("scope") and missing:
            return _page(
                400,
                "Gmail was not connected",
                "Google did not grant "
                f"{' and '.join(missing)} access. Use Connect again and allow "
                "Switchboard to read and send email.",
            )
        address = await _gmail_address(services, str(tokens["access_token"]))
    except google.InvalidGrant:
        return _page(
            400,
            "Gmail was not connected",
            "Google refused the sign-in code (it expired or was already used). Use Connect again.",
        )
    except ServiceError as exc:
        return _page(502, "Gmail was not connected", f"Error: {exc}.")
    credentials = google.live_credentials(tokens, address)
    meta = {
        "mode": "live",
        "email": address,
        "scopes": sorted(set(str(credentials["scope"]).split())),
    }
    accounts = AccountRepository(services.db, pending.user_id, services.fernet)
    await accounts.connect("gmail", credentials, meta)
    logger.info("gmail connected", extra={"user_id": pending.user_id})
    return _page(
        200,
        "Gmail connected",
        f"Switchboard can now read and send email as {address}. You can close this tab.",
        connected=True,
    )


def connector_routes() -> list[BaseRoute]:
    signed_in_only = needs_user()
    return [
        Route("/api/connectors", list_connectors, methods=["GET"], middleware=signed_in_only),
        Route(
            "/api/connectors/plaid/exchange",
            plaid_exchange,
            methods=["POST"],
            middleware=signed_in_only,
        ),
        Route(
            "/api/connectors/{name}/connect", connect, methods=["POST"], middleware=signed_in_only
        ),
        Route("/api/connectors/{name}", disconnect, methods=["DELETE"], middleware=signed_in_only),
        # No sign-in needed: Google's redirect carries no token (see _google_callback).
        Route(CALLBACK_PATH, google_callback, methods=["GET"]),
    ]
