"""Google OAuth 2.0 for Gmail: authorization-code flow with PKCE, token refresh, revocation.

The ``state`` parameter is a Fernet token (the app's key) holding the user id, the PKCE
verifier, the redirect URI and the hash of a browser-binding nonce: it cannot be forged or
read by anyone else, it expires after ``STATE_MAX_AGE`` seconds, and it needs no server-side
storage, so the callback may land on any instance.

The state alone does not say who may finish the flow: someone could start one, then get a
victim to open the sign-in link, and the victim's Gmail would land in the starter's
account. So the nonce itself goes to the browser that pressed Connect (a cookie), and the
callback accepts the state only from that browser (``same_browser``) or from the state's
own signed-in user.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from cryptography.fernet import InvalidToken, MultiFernet

from connectors.service_http import ServiceError, ServiceHttp, read_json
from connectors.settings import ConnectorSettings

SCOPES = (
    "https://www.googleapis.com/auth/gmail.readonly",
    "https://www.googleapis.com/auth/gmail.send",
)
STATE_MAX_AGE = 600  # seconds between "Connect" and the callback
EXPIRY_MARGIN = 60  # refresh a token this many seconds before it expires


class InvalidState(ValueError):
    """The callback's ``state`` is forged, corrupted or expired."""


class InvalidGrant(Exception):
    """Google refused a code or refresh token (revoked, expired or already used)."""


@dataclass(frozen=True)
class PendingAuthorization:
    user_id: str
    verifier: str
    redirect_uri: str
    browser_hash: str = ""  # sha256 of the binding nonce; "" binds no browser


def new_browser_binding() -> tuple[str, str]:
    """A fresh nonce for the starting browser's cookie, and its hash for the state."""
    nonce = secrets.token_urlsafe(32)
    return nonce, _binding_hash(nonce)


def _binding_hash(nonce: str) -> str:
    return hashlib.sha256(nonce.encode()).hexdigest()


def same_browser(pending: PendingAuthorization, nonce: str | None) -> bool:
    """Whether ``nonce`` (the callback's binding cookie) is the one this flow was started with."""
    if not pending.browser_hash or not nonce:
        return False
    return hmac.compare_digest(pending.browser_hash, _binding_hash(nonce))


def new_verifier() -> str:
    """A PKCE code verifier: 86 characters of the unreserved set (RFC 7636 §4.1)."""
    return secrets.token_urlsafe(64)


def code_challenge(verifier: str) -> str:
    """The S256 challenge: base64url(sha256(verifier)) without padding."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def pack_state(fernet: MultiFernet, pending: PendingAuthorization) -> str:
    payload = {
        "u": pending.user_id,
        "v": pending.verifier,
        "r": pending.redirect_uri,
        "b": pending.browser_hash,
        "n": secrets.token_hex(8),
    }
    return fernet.encrypt(json.dumps(payload).encode()).decode("ascii")


def unpack_state(
    fernet: MultiFernet, state: str, max_age: int = STATE_MAX_AGE, now: int | None = None
) -> PendingAuthorization:
    try:
        token = state.encode("ascii")
        clear = (
            fernet.decrypt(token, ttl=max_age)
            if now is None
            else fernet.decrypt_at_time(token, ttl=max_age, current_time=now)
        )
        payload = json.loads(clear)
        return PendingAuthorization(
            user_id=str(payload["u"]),
            verifier=str(payload["v"]),
            redirect_uri=str(payload["r"]),
            browser_hash=str(payload.get("b") or ""),
        )
    except (InvalidToken, UnicodeEncodeError, ValueError, KeyError, TypeError):
        raise InvalidState(
            "this sign-in link is invalid or has expired (links last "
            f"{STATE_MAX_AGE // 60} minutes); start again with Connect"
        ) from None


def authorization_url(
    settings: ConnectorSettings, state: str, verifier: str, redirect_uri: str
) -> str:
    params = {
        "client_id": settings.google_client_id or "",
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
    return f"{settings.google_auth_url}?{urlencode(params)}"


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
        self._settings = settings
        secret = settings.google_client_secret
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
