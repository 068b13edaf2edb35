"""Connector accounts over REST (docs/protocol.md "Connector endpoints"): one interface for
every connector's account flow (``connectors.account_flow``), whichever service it is.

``GET /api/connectors``                   every connector, its tools, mode and the user's state
``POST /api/connectors/{name}/connect``   demo: connected at once; live: the flow's first step
                                          (connected, a redirect, a client widget, a key)
``POST /api/connectors/{name}/finish``    the flow's last step: a widget's result, a key
``POST /api/connectors/{name}/exchange``  the same (v1's path for a widget's result)
``DELETE /api/connectors/{name}``         disconnect: revoke (best effort), delete the credentials
``GET /oauth/{name}/callback``            an OAuth provider sends the browser back here

Same auth and origin checks as the rest of the API, except the OAuth callback: the
provider's redirect carries no token, so the flow accepts it from the state's signed-in
user or from the browser that pressed Connect (``connectors.oauth_flow``). Flows only
return what to store; it is stored here, Fernet-encrypted by ``storage.accounts``, under
the flow's own connector. Nothing here returns or logs a token.
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from app.api_auth import needs_user, signed_in
from app.api_docs import Answer, Operation, documented
from app.api_json import rfc3339
from app.api_models import (
    ApiKeyAnswer,
    ClientStepAnswer,
    ConnectAnswer,
    ConnectedAnswer,
    ConnectorInfo,
    ConnectorList,
    ConnectorTool,
    DisconnectedAnswer,
    ErrorBody,
    FailedConnector,
    RedirectAnswer,
    ServerState,
    json_answer,
)
from app.auth import own_origin
from app.connector_assets import CardAssets, card_assets
from app.errors import ApiError
from app.request_input import json_body
from app.services import Services, services_of
from connectors.account_flow import (
    AccountFlow,
    AskKey,
    ClientStep,
    Connected,
    FlowContext,
    FlowError,
    Redirect,
    StartResult,
)
from connectors.accounts import (
    DEMO,
    LIVE,
    connection_state,
    demo_credentials,
    demo_meta,
    live_credentials,
)
from connectors.registry import Connector
from connectors.service_http import ServiceError
from storage.accounts import AccountRepository
from storage.records import ConnectedAccount, UserRecord

logger = logging.getLogger("switchboard.connectors")

T = TypeVar("T")
_CODES = {400: "invalid_request", 401: "unauthorized", 403: "forbidden", 404: "not_found"}
UNKNOWN = Answer("No connector of that name", ErrorBody)
PROVIDER_FAILED = Answer("The provider failed (server_error)", ErrorBody)


# ----------------------------------------------------------------------------- helpers


def _connector(services: Services, name: str) -> Connector:
    for connector in services.connectors:
        if connector.name == name:
            return connector
    raise ApiError(404, "not_found", f"no connector named {name!r}; GET /api/connectors lists them")


def _accounts(services: Services, user_id: str) -> AccountRepository:
    return AccountRepository(services.db, user_id, services.fernet)


def describe(
    services: Services, connector: Connector, row: ConnectedAccount | None, cards: CardAssets
) -> ConnectorInfo:
    mode = connector.mode_in(services.settings)
    state = connection_state(connector, mode, row.meta if row else None)
    health = connector.health() if connector.health is not None else None
    return ConnectorInfo(
        name=connector.name,
        display_name=connector.display_name,
        agent_name=connector.agent_name,
        mode=mode,
        needs_account=connector.needs_account,
        connected=state.connected,
        account=state.account,
        connected_at=rfc3339(row.connected_at) if row and state.connected else None,
        tools=[
            ConnectorTool(name=name, description=description)
            for name, description in connector.tool_descriptions.items()
        ],
        # A remote server's connection (MCP): "connected", "reconnecting" and why, …
        server=None if health is None else ServerState(state=health.state, reason=health.reason),
        # Its UI (app.connector_assets): an icon name, its card module and stylesheet.
        icon=connector.icon,
        card=cards.url(connector.name, "card.js"),
        card_css=cards.url(connector.name, "card.css"),
    )


async def _described(services: Services, user: UserRecord, connector: Connector) -> ConnectorInfo:
    rows = {row.connector: row for row in await _accounts(services, user.id).list()}
    return describe(services, connector, rows.get(connector.name), await card_assets(services))


def _upstream(exc: ServiceError) -> ApiError:
    # The message is already safe to show (connectors.service_http); 502: the service failed us.
    status = 400 if exc.status == 400 else 502
    code = "invalid_request" if status == 400 else "server_error"
    return ApiError(status, code, str(exc))


def _live_flow(connector: Connector) -> AccountFlow:
    if connector.account_flow is None:
        raise ApiError(
            400,
            "invalid_request",
            f"{connector.name} has no live connection flow in this server; run it in demo mode",
        )
    return connector.account_flow


def _flow_context(
    request: Request, services: Services, connector: Connector, user_id: str | None
) -> FlowContext:
    return FlowContext(
        connector=connector.name,
        display_name=connector.display_name,
        user_id=user_id,
        settings=services.settings,
        http=services.http,
        fernet=services.fernet,
        origin=own_origin(request),
        cookies=request.cookies,
        accounts_of=lambda who: _accounts(services, who),
    )


async def _step(step: Awaitable[T]) -> T:
    """Run one flow step: what it refuses is the person's error, the provider's is a 502."""
    try:
        return await step
    except FlowError as exc:
        raise ApiError(exc.status, _CODES.get(exc.status, "invalid_request"), exc.message) from None
    except ServiceError as exc:
        raise _upstream(exc) from None


def _with_cookies(response: Response, request: Request, ctx: FlowContext) -> Response:
    """Set (or clear) the cookies the flow asked for: HttpOnly, Secure over https."""
    secure = request.url.scheme == "https"
    for cookie in ctx.cookies_out:
        if cookie.value is None:
            response.delete_cookie(
                cookie.name,
                path=cookie.path,
                secure=secure,
                httponly=True,
                samesite=cookie.same_site,
            )
        else:
            response.set_cookie(
                cookie.name,
                cookie.value,
                max_age=cookie.max_age,
                path=cookie.path,
                secure=secure,
                httponly=True,
                samesite=cookie.same_site,
            )
    return response


async def _store(services: Services, connector: Connector, user_id: str, done: Connected) -> None:
    """Keep what a flow connected, always as a live account of that flow's own connector."""
    await _accounts(services, user_id).connect(
        connector.name, {**done.credentials, "mode": LIVE}, {**done.meta, "mode": LIVE}
    )
    logger.info("%s connected", connector.name, extra={"user_id": user_id})


def _owner(done: Connected, user_id: str | None) -> str | None:
    """Whose account ``done`` connects: the flow's word must agree with the signed-in user."""
    if done.user_id is not None and user_id is not None and done.user_id != user_id:
        return None
    return done.user_id or user_id


# ----------------------------------------------------------------------------- GET


@documented(
    "GET",
    Operation(
        summary="Every connector, its tools and mode, and this user's connection to it",
        tag="connectors",
        answers={200: Answer("The connectors, and those installed but not served", ConnectorList)},
    ),
)
async def list_connectors(request: Request) -> Response:
    user = signed_in(request)
    services = services_of(request)
    rows = {row.connector: row for row in await _accounts(services, user.id).list()}
    cards = await card_assets(services)
    listed = ConnectorList(
        connectors=[
            describe(services, connector, rows.get(connector.name), cards)
            for connector in services.connectors
        ],
        # Installed but not served (a broken plug-in), and why: no secrets in a reason.
        failed=[
            FailedConnector(name=failed.name, origin=failed.origin, reason=failed.reason)
            for failed in services.failed_connectors
        ],
    )
    return json_answer(listed)


# ----------------------------------------------------------------------------- connect


async def _started(
    services: Services, user: UserRecord, connector: Connector, started: StartResult
) -> ConnectAnswer:
    """The connect answer: what the browser does next."""
    finish = f"/api/connectors/{connector.name}/finish"
    if isinstance(started, Redirect):
        return RedirectAnswer(status="redirect", url=started.url)
    if isinstance(started, ClientStep):
        # The widget's own fields come beside these (ClientStepAnswer allows them).
        return ClientStepAnswer.model_validate(
            {"status": started.status, "widget": started.widget, "finish": finish, **started.data}
        )
    if isinstance(started, AskKey):
        return ApiKeyAnswer(status="api_key", label=started.label, help=started.help, finish=finish)
    owner = _owner(started, user.id)
    if owner is None:
        raise ApiError(403, "forbidden", f"{connector.name} tried to connect another user")
    await _store(services, connector, owner, started)
    return ConnectedAnswer(
        status="connected", connector=await _described(services, user, connector)
    )


@documented(
    "POST",
    Operation(
        summary="Start connecting this user's account (demo: connected at once)",
        tag="connectors",
        description="Live mode answers the flow's next step: a redirect (OAuth; sets the "
        "sb_oauth cookie), a client widget to run, or a key to ask for "
        '(docs/protocol.md, "Connector endpoints").',
        answers={
            200: Answer("Connected, or what the browser does next", ConnectAnswer),
            400: Answer("No live flow for this connector on this server", ErrorBody),
            404: UNKNOWN,
            502: PROVIDER_FAILED,
        },
    ),
)
async def connect(request: Request) -> Response:
    user = signed_in(request)
    services = services_of(request)
    connector = _connector(services, request.path_params["name"])
    mode = connector.mode_in(services.settings)
    if connector.needs_account and mode == DEMO:
        await _accounts(services, user.id).connect(
            connector.name, demo_credentials(True), demo_meta(connector, True)
        )
    elif connector.needs_account:
        ctx = _flow_context(request, services, connector, user.id)
        started = await _step(_live_flow(connector).start(ctx))
        answer = await _started(services, user, connector, started)
        return _with_cookies(json_answer(answer), request, ctx)
    # Connectors without a per-user account (server keys) are always connected.
    return json_answer(
        ConnectedAnswer(status="connected", connector=await _described(services, user, connector))
    )


# ----------------------------------------------------------------------------- finish


def finish_bodies(connectors: Sequence[Connector]) -> list[Any]:
    """The bodies a finish step may take: each served connector's flow's own model."""
    models: list[Any] = []
    for connector in connectors:
        flow = connector.account_flow
        if flow is not None and flow.finish_model is not None and flow.finish_model not in models:
            models.append(flow.finish_model)
    return models


FINISH = Operation(
    summary="Finish connecting: post a client widget's result, or an API key",
    tag="connectors",
    description="The body is the connector's own (one of the shapes below: Plaid Link's "
    'result, {"api_key": …}, …). /exchange is the same endpoint under v1\'s path.',
    body=finish_bodies,
    answers={
        200: Answer("Connected", ConnectedAnswer),
        400: Answer(
            "A body this flow does not take, a key or token the service refused", ErrorBody
        ),
        # The request is well formed; the connector's state on this server conflicts.
        409: Answer("Demo mode, a server-key connector, or a flow without this step", ErrorBody),
        403: Answer("The flow tried to connect another user", ErrorBody),
        404: UNKNOWN,
        502: PROVIDER_FAILED,
    },
)


@documented("POST", FINISH)
async def finish(request: Request) -> Response:
    user = signed_in(request)
    services = services_of(request)
    connector = _connector(services, request.path_params["name"])
    name = connector.name
    if not connector.needs_account:
        raise ApiError(
            409,
            "invalid_request",
            f"{name} has no per-user account to connect: it uses the server's keys",
        )
    demo = connector.mode_in(services.settings) == DEMO
    if demo and connector.account_flow is None:
        raise ApiError(
            409,
            "invalid_request",
            f"{name} runs in demo mode on this server: connect it with "
            f"POST /api/connectors/{name}/connect (there is nothing to finish)",
        )
    flow = _live_flow(connector)
    ctx = _flow_context(request, services, connector, user.id)
    if flow.finish_model is None:
        raise ApiError(
            409, "invalid_request", f"{name} has no finish step: {flow.describe_kind(ctx)}"
        )
    # The body first: a broken one is reported as such whatever the mode.
    body = await json_body(request, flow.finish_model, flow.finish_example)
    if demo:
        raise ApiError(
            409,
            "invalid_request",
            f"{name} runs in demo mode on this server: connect it with "
            f"POST /api/connectors/{name}/connect (there is nothing to finish)",
        )
    done = await _step(flow.finish(ctx, body))
    owner = _owner(done, user.id)
    if owner is None:
        raise ApiError(403, "forbidden", f"{name} tried to connect another user")
    await _store(services, connector, owner, done)
    answer = ConnectedAnswer(
        status="connected", connector=await _described(services, user, connector)
    )
    return _with_cookies(json_answer(answer), request, ctx)


@documented("POST", FINISH)
async def exchange(request: Request) -> Response:
    """v1 clients post a client widget's result here; any flow's finish answers it."""
    return await finish(request)


# ----------------------------------------------------------------------------- disconnect


@documented(
    "DELETE",
    Operation(
        summary="Disconnect: revoke at the provider (best effort), delete the credentials",
        tag="connectors",
        answers={
            200: Answer("Disconnected", DisconnectedAnswer),
            409: Answer("A server-key connector: nothing to disconnect", ErrorBody),
            404: UNKNOWN,
        },
    ),
)
async def disconnect(request: Request) -> Response:
    user = signed_in(request)
    services = services_of(request)
    connector = _connector(services, request.path_params["name"])
    if not connector.needs_account:
        raise ApiError(
            409,
            "invalid_request",
            f"{connector.name} has no per-user account to disconnect: it uses the server's keys",
        )
    accounts = _accounts(services, user.id)
    if connector.mode_in(services.settings) == DEMO:
        # Recorded, so the demo connector stays disconnected until connected again.
        await accounts.connect(connector.name, demo_credentials(False), demo_meta(connector, False))
    else:
        credentials = await live_credentials(accounts, connector.name)
        flow = connector.account_flow
        if credentials is not None and flow is not None:
            ctx = _flow_context(request, services, connector, user.id)
            try:  # best effort: the credentials are deleted here whatever the provider says
                await flow.forget(ctx, credentials)
            except Exception as exc:  # a plug-in's flow may fail any way; never with a token
                logger.warning(
                    "could not revoke %s credentials at the provider (%s)",
                    connector.name,
                    type(exc).__name__,
                )
        await accounts.disconnect(connector.name)
    return json_answer(
        DisconnectedAnswer(
            status="disconnected", connector=await _described(services, user, connector)
        )
    )


# ----------------------------------------------------------------------------- oauth callback


def _page(status: int, name: str, title: str, message: str, connected: bool = False) -> Response:
    """The page the browser lands on; tells an opener window (popup flow) how it went."""
    notice = json.dumps(
        {
            "type": "switchboard:connector",
            "name": name,
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


def _signs_in_at(services: Services, callback: str) -> tuple[Connector, AccountFlow] | None:
    """The connector whose OAuth flow's callback is /oauth/<callback>/callback."""
    for connector in services.connectors:
        flow = connector.account_flow
        if flow is not None and flow.kind == "oauth":
            if (flow.callback_name or connector.name) == callback:
                return connector, flow
    return None


def _page_answer(words: str) -> Answer:
    return Answer(words, media_type="text/html")


@documented(
    "GET",
    Operation(
        summary="Where an OAuth provider sends the browser back (an HTML page)",
        tag="connectors",
        description="No token needed: it accepts the sb_oauth cookie set by connect, or the "
        "signed-in user who started the flow. The page tells an opener window how it went.",
        signed_in=False,
        errors="html",
        answers={
            200: _page_answer("The account is connected"),
            400: _page_answer("Denied, expired or reused, or the connector is in demo mode"),
            401: _page_answer("Neither signed in nor the browser that pressed Connect"),
            403: _page_answer("Started by another user"),
            404: _page_answer("No connector signs in at this address"),
            502: _page_answer("The provider failed"),
        },
    ),
)
async def oauth_callback(request: Request) -> Response:
    services = services_of(request)
    found = _signs_in_at(services, request.path_params["name"])
    if found is None:
        return _page(404, "", "Not found", "No connector signs in at this address.")
    connector, flow = found
    failed = f"{connector.display_name} was not connected"
    if connector.mode_in(services.settings) != LIVE:
        message = f"{connector.display_name} runs in demo mode on this server."
        return _page(400, connector.name, failed, message)
    # No sign-in needed: the provider's redirect carries no token (connectors.oauth_flow).
    user = await services.auth.user_for(request)
    ctx = _flow_context(request, services, connector, user.id if user else None)
    try:
        done = await flow.callback(ctx, request.query_params)
        owner = _owner(done, ctx.user_id)
        if owner is None:
            raise FlowError(f"{connector.name} tried to connect another user", status=403)
        await _store(services, connector, owner, done)
    except FlowError as exc:
        page = _page(exc.status, connector.name, failed, exc.message)
    except ServiceError as exc:
        page = _page(502, connector.name, failed, f"Error: {exc}.")
    else:
        message = done.message or "The account is connected. You can close this tab."
        title = f"{connector.display_name} connected"
        page = _page(200, connector.name, title, message, connected=True)
    return _with_cookies(page, request, ctx)


def connector_routes() -> list[BaseRoute]:
    signed_in_only = needs_user()
    return [
        Route("/api/connectors", list_connectors, methods=["GET"], middleware=signed_in_only),
        Route(
            "/api/connectors/{name}/connect", connect, methods=["POST"], middleware=signed_in_only
        ),
        Route("/api/connectors/{name}/finish", finish, methods=["POST"], middleware=signed_in_only),
        # v1 clients post a client widget's result here; any flow's finish answers it.
        Route(
            "/api/connectors/{name}/exchange", exchange, methods=["POST"], middleware=signed_in_only
        ),
        Route("/api/connectors/{name}", disconnect, methods=["DELETE"], middleware=signed_in_only),
        # No sign-in needed: the provider's redirect carries no token (see oauth_callback).
        Route("/oauth/{name}/callback", oauth_callback, methods=["GET"]),
    ]
