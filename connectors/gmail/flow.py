"""Connecting a Gmail account: Google sign-in (``connectors.oauth_flow``), then the
mailbox's address; disconnecting revokes the grant at Google.

The callback stays at ``/oauth/google/callback``: it is the redirect URI operators
registered with Google (or ``SWITCHBOARD_GOOGLE_REDIRECT_URI`` when set).
"""

from __future__ import annotations

from typing import Any, ClassVar

from connectors.account_flow import Connected, FlowContext, FlowError
from connectors.gmail import oauth as google
from connectors.gmail.settings import GmailSettings
from connectors.oauth_flow import OAuthFlow, PendingAuthorization
from connectors.service_http import ServiceError, ServiceHttp, read_json


def _google_http(ctx: FlowContext, credentials: dict[str, Any] | None = None) -> ServiceHttp:
    """Google's HTTP client, redacting the client secret and these tokens from errors."""
    secret = GmailSettings.read(ctx.settings).google_client_secret
    secrets = [secret.get_secret_value() if secret else None]
    if credentials:
        secrets += [credentials.get("access_token"), credentials.get("refresh_token")]
    return ServiceHttp.for_settings(ctx.http, "Google", ctx.settings, secrets)


async def _gmail_address(ctx: FlowContext, access_token: str) -> str:
    """The connected mailbox's address (``users.getProfile``), also proving Gmail access."""
    http = _google_http(ctx, {"access_token": access_token})
    response = await http.send(
        "GET",
        f"{GmailSettings.read(ctx.settings).gmail_base_url}/gmail/v1/users/me/profile",
        headers={"Authorization": f"Bearer {access_token}"},
    )
    if not response.is_success:
        raise http.status_error(response)
    body = read_json(response, "Gmail")
    address = body.get("emailAddress") if isinstance(body, dict) else None
    if not isinstance(address, str) or "@" not in address:
        raise ServiceError("Gmail did not say which address was connected; try again")
    return address


class GoogleSignIn(OAuthFlow):
    provider: ClassVar[str] = "Google"
    callback_name: ClassVar[str | None] = "google"
    redirect_hint: ClassVar[str] = "set SWITCHBOARD_GOOGLE_REDIRECT_URI"

    def redirect_uri(self, ctx: FlowContext) -> str:
        return GmailSettings.read(ctx.settings).google_redirect_uri or super().redirect_uri(ctx)

    def authorization_url(
        self, ctx: FlowContext, *, state: str, verifier: str, redirect_uri: str
    ) -> str:
        return google.authorization_url(ctx.settings, state, verifier, redirect_uri)

    async def exchange(
        self, ctx: FlowContext, code: str, pending: PendingAuthorization
    ) -> Connected:
        oauth = google.GoogleOAuth(_google_http(ctx), ctx.settings)
        try:
            tokens = await oauth.exchange_code(code, pending.verifier, pending.redirect_uri)
        except google.InvalidGrant:
            raise FlowError(
                "Google refused the sign-in code (it expired or was already used). "
                "Use Connect again."
            ) from None
        granted = set(str(tokens.get("scope") or "").split())
        missing = [scope.rsplit(".", 1)[-1] for scope in google.SCOPES if scope not in granted]
        if tokens.get("scope") and missing:
            raise FlowError(
                f"Google did not grant {' and '.join(missing)} access. Use Connect again and "
                "allow Switchboard to read and send email."
            )
        address = await _gmail_address(ctx, str(tokens["access_token"]))
        credentials = google.live_credentials(tokens, address)
        meta = {"email": address, "scopes": sorted(set(str(credentials["scope"]).split()))}
        return Connected(
            credentials,
            meta,
            message=f"Switchboard can now read and send email as {address}. "
            "You can close this tab.",
        )

    async def forget(self, ctx: FlowContext, credentials: dict[str, Any]) -> None:
        token = credentials.get("refresh_token") or credentials.get("access_token")
        if token:
            await google.GoogleOAuth(_google_http(ctx, credentials), ctx.settings).revoke(
                str(token)
            )


flow = GoogleSignIn()
