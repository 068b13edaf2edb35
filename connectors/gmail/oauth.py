"""Google OAuth 2.0 for Gmail: the authorization URL, the token endpoint (code exchange,
refresh, revocation) and what is stored for an account.

The flow itself (sealed state, PKCE, the browser binding, the callback's checks) is the
generic one of ``connectors.oauth_flow``; ``connectors.gmail.flow`` plugs Google into it.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

from connectors.gmail.settings import GmailSettings
from connectors.oauth_flow import code_challenge
from connectors.service_http import ServiceError, ServiceHttp, read_json
from connectors.settings import ConnectorSettings

SCOPES = (
    "https://www.googleapis.com/auth/gmail.readonly",
    "https://www.googleapis.com/auth/gmail.send",
)
EXPIRY_MARGIN = 60  # refresh a token this many seconds before it expires


class InvalidGrant(Exception):
    """Google refused a code or refresh token (revoked, expired or already used)."""


def authorization_url(
    settings: ConnectorSettings, state: str, verifier: str, redirect_uri: str
) -> str:
    own = GmailSettings.read(settings)
    params = {
        "client_id": own.google_client_id or "",
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "scope": " ".join(SCOPES),
        "state": state,
        "code_challenge": code_challenge(verifier),
        "code_challenge_method": "S256",
        "access_type": "offline",  # a refresh token, so access survives the hour
        "prompt": "consent",  # Google only returns a refresh token on consent
        "include_granted_scopes": "true",
    }
    return f"{own.google_auth_url}?{urlencode(params)}"


def live_credentials(
    tokens: dict[str, Any],
    email: str | None,
    previous: dict[str, Any] | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """What is stored (encrypted) for a Gmail account, from a token endpoint answer.

    A refresh answer usually has no ``refresh_token``: the previous one stays valid.
    """
    previous = previous or {}
    expires_in = tokens.get("expires_in")
    lifetime = float(expires_in) if isinstance(expires_in, int | float) else 3600.0
    return {
        "mode": "live",
        "access_token": str(tokens["access_token"]),
        "refresh_token": tokens.get("refresh_token") or previous.get("refresh_token"),
        "expires_at": (now if now is not None else time.time()) + lifetime,
        "scope": tokens.get("scope") or previous.get("scope") or " ".join(SCOPES),
        "email": email or previous.get("email"),
    }


def expiring(credentials: dict[str, Any], now: float | None = None) -> bool:
    expires_at = credentials.get("expires_at")
    if not isinstance(expires_at, int | float):
        return False  # unknown: use it, a 401 triggers the refresh
    return expires_at - EXPIRY_MARGIN <= (now if now is not None else time.time())


class GoogleOAuth:
    """Google's token endpoint: code exchange, refresh, revocation."""

    def __init__(self, http: ServiceHttp, settings: ConnectorSettings) -> None:
        self._http = http
        self._settings = GmailSettings.read(settings)
        secret = self._settings.google_client_secret
        self._client_secret = secret.get_secret_value() if secret else ""

    @property
    def _token_url(self) -> str:
        return f"{self._settings.google_oauth_base_url}/token"

    async def exchange_code(self, code: str, verifier: str, redirect_uri: str) -> dict[str, Any]:
        return await self._token_request(
            {
                "grant_type": "authorization_code",
                "code": code,
                "code_verifier": verifier,
                "redirect_uri": redirect_uri,
            }
        )

    async def refresh(self, refresh_token: str) -> dict[str, Any]:
        return await self._token_request(
            {"grant_type": "refresh_token", "refresh_token": refresh_token}
        )

    async def revoke(self, token: str) -> bool:
        """Best effort: True when Google confirmed the revocation."""
        try:
            response = await self._http.send(
                "POST",
                f"{self._settings.google_oauth_base_url}/revoke",
                data={"token": token},
                idempotent=True,
            )
        except ServiceError:
            return False
        return response.status_code == 200

    async def _token_request(self, form: dict[str, str]) -> dict[str, Any]:
        form = {
            **form,
            "client_id": self._settings.google_client_id or "",
            "client_secret": self._client_secret,
        }
        # Not retried on 5xx: a code is single-use and Google may have consumed it.
        response = await self._http.send("POST", self._token_url, data=form, idempotent=False)
        body = read_json(response, "Google sign-in") if response.content else {}
        if response.status_code == 200 and isinstance(body, dict) and body.get("access_token"):
            return body
        error = body.get("error") if isinstance(body, dict) else None
        if error == "invalid_grant":
            raise InvalidGrant(str(body.get("error_description") or "invalid_grant"))
        if error in ("invalid_client", "unauthorized_client"):
            raise self._http.status_error(
                response,
                f"{error}",
                "the server's Google OAuth client is misconfigured; the administrator must "
                "check SWITCHBOARD_GOOGLE_CLIENT_ID and SWITCHBOARD_GOOGLE_CLIENT_SECRET",
            )
        description = body.get("error_description") if isinstance(body, dict) else None
        raise self._http.status_error(response, description or error)
