"""OAuth 2.0 authorization-code flows with PKCE, for any connector (``OAuthFlow``).

The ``state`` parameter is a Fernet token (the server's key) holding the user id, the PKCE
verifier, the redirect URI and the hash of a browser-binding nonce: it cannot be forged or
read by anyone else, it expires after ``STATE_MAX_AGE`` seconds, and it needs no
server-side storage, so the callback may land on any instance.

The state alone does not say who may finish the flow: someone could start one, then get a
victim to open the sign-in link, and the victim's account would land in the starter's.
So the nonce itself goes to the browser that pressed Connect (the ``sb_oauth`` cookie,
HttpOnly, SameSite=Lax so it comes back on the provider's top-level redirect, limited to
the callback path), and the callback accepts the state only from that browser
(``same_browser``) or from the state's own signed-in user. The cookie is cleared on every
callback: a nonce is used once.

A provider's flow subclasses ``OAuthFlow`` with its authorization URL and its code
exchange (each connector's ``flow.py``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

from cryptography.fernet import InvalidToken, MultiFernet

from connectors.account_flow import (
    AccountFlow,
    Connected,
    FlowContext,
    FlowError,
    FlowKind,
    Redirect,
    StartResult,
)

STATE_MAX_AGE = 600  # seconds between "Connect" and the callback
# Binds a flow to the browser that started it; its hash is sealed in the state.
BINDING_COOKIE = "sb_oauth"
# What an ``error`` parameter from the provider may look like to be quoted back.
_PROVIDER_ERROR = re.compile(r"[a-z_]{1,40}")


class InvalidState(ValueError):
    """The callback's ``state`` is forged, corrupted or expired."""


@dataclass(frozen=True)
class PendingAuthorization:
    user_id: str
    verifier: str
    redirect_uri: str
    browser_hash: str = ""  # sha256 of the binding nonce; "" binds no browser


def callback_path(name: str) -> str:
    """Where the provider sends the browser back: the redirect URI's path."""
    return f"/oauth/{name}/callback"


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


class OAuthFlow(AccountFlow):
    """Kind ``oauth``: redirect to the provider, then its callback with a code.

    A subclass gives ``authorization_url`` and ``exchange`` (code → ``Connected``); the
    state, PKCE, the browser binding and the checks on the way back are done here.
    """

    kind: ClassVar[FlowKind] = "oauth"
    provider: ClassVar[str] = "the provider"  # its name, in what the person reads
    # Said when the server cannot tell its own address (a proxy that rewrites Host).
    redirect_hint: ClassVar[str] = "reach this server by its public address"

    def authorization_url(
        self, ctx: FlowContext, *, state: str, verifier: str, redirect_uri: str
    ) -> str:
        raise NotImplementedError

    async def exchange(
        self, ctx: FlowContext, code: str, pending: PendingAuthorization
    ) -> Connected:
        """Trade the code for tokens (with ``pending.verifier`` and ``.redirect_uri``)."""
        raise NotImplementedError

    def callback_path(self, ctx: FlowContext) -> str:
        return callback_path(self.callback_name or ctx.connector)

    def redirect_uri(self, ctx: FlowContext) -> str:
        """This server's callback as the browser reaches it; override to honour a setting."""
        if ctx.origin is None:
            raise FlowError(
                f"cannot tell this server's address from the request; {self.redirect_hint}"
            )
        return ctx.origin + self.callback_path(ctx)

    async def start(self, ctx: FlowContext) -> StartResult:
        if ctx.user_id is None:
            raise FlowError("sign in to Switchboard before connecting an account", status=401)
        redirect_uri = self.redirect_uri(ctx)
        verifier = new_verifier()
        nonce, browser_hash = new_browser_binding()
        state = pack_state(
            ctx.fernet, PendingAuthorization(ctx.user_id, verifier, redirect_uri, browser_hash)
        )
        ctx.set_cookie(BINDING_COOKIE, nonce, path=self.callback_path(ctx), max_age=STATE_MAX_AGE)
        return Redirect(
            self.authorization_url(ctx, state=state, verifier=verifier, redirect_uri=redirect_uri)
        )

    async def callback(self, ctx: FlowContext, query: Mapping[str, str]) -> Connected:
        # Used once: whatever the outcome, another try starts at Connect with a new nonce.
        ctx.clear_cookie(BINDING_COOKIE, path=self.callback_path(ctx))
        try:
            pending = unpack_state(ctx.fernet, query.get("state") or "")
        except InvalidState as exc:
            raise FlowError(f"{str(exc)[0].upper()}{str(exc)[1:]}.") from None
        # The provider's redirect carries no token (the UI keeps it out of cookies), so the
        # browser that pressed Connect proves itself with the binding cookie. The state alone
        # is not enough: whoever started a flow could get someone else to finish it.
        if ctx.user_id is not None and ctx.user_id != pending.user_id:
            raise FlowError(
                "This sign-in was started by another Switchboard user. Use the Connect "
                "button of your own account.",
                status=403,
            )
        if ctx.user_id is None and not same_browser(pending, ctx.cookies.get(BINDING_COOKIE)):
            raise FlowError(
                "This sign-in was not started in this browser. Finish it in the same browser "
                "that pressed Connect: use Connect again there.",
                status=401,
            )
        if query.get("error"):
            error = query["error"] if _PROVIDER_ERROR.fullmatch(query["error"]) else "error"
            raise FlowError(
                f"{self.provider} sign-in ended with {error!r}; nothing was connected. Use "
                "Connect again to retry."
            )
        code = query.get("code")
        if not code:
            raise FlowError(f"{self.provider} sent no authorization code. Use Connect again.")
        connected = await self.exchange(ctx, code, pending)
        return replace(connected, user_id=pending.user_id)
