"""A fake OpenID Connect provider: a real HTTP server speaking the real wire format.

It stands in for Keycloak, Auth0 and the like (an outside service): discovery, a JWKS
with RSA keys it can rotate, ``/authorize`` that approves ``user`` at once (no login page)
with PKCE S256 required, ``/token`` for the authorization-code grant (the verifier is
checked against the challenge; a code works once) and the refresh grant, and a logout
endpoint. ``issue(...)`` signs any token the tests want, good or bad.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.support.servers import loopback_socket, running_uvicorn

# Token endpoints are called by the page itself (a public client): CORS as real ones do.
CORS = {"Access-Control-Allow-Origin": "*", "Cache-Control": "no-store"}


def new_rsa_key() -> RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    nonce: str | None
    scope: str


@dataclass
class FakeProvider:
    issuer: str
    audience: str
    client_id: str
    user: dict[str, str] = field(
        default_factory=lambda: {
            "sub": "user-7f3a",
            "preferred_username": "ada",
            "email": "ada@example.com",
        }
    )
    access_ttl: int = 300
    keys: list[tuple[str, RSAPrivateKey]] = field(default_factory=list)
    codes: dict[str, Grant] = field(default_factory=dict)
    refresh_tokens: dict[str, str] = field(default_factory=dict)
    # What the provider saw, for the tests to assert on.
    jwks_requests: int = 0
    token_requests: list[dict[str, str]] = field(default_factory=list)
    authorize_requests: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.keys:
            self.rotate()

    # --- keys and tokens -----------------------------------------------------------------

    def rotate(self, *, keep_old: bool = False) -> str:
        """A new signing key (the one ``issue`` uses from now on); returns its kid."""
        kid = "k-" + secrets.token_hex(4)
        kept = self.keys if keep_old else []
        self.keys = [(kid, new_rsa_key()), *kept]
        return kid

    @property
    def current(self) -> tuple[str, RSAPrivateKey]:
        return self.keys[0]

    def jwks(self) -> dict[str, Any]:
        entries = []
        for kid, key in self.keys:
            entry = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
            entries.append({**entry, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": entries}

    def issue(
        self,
        *,
        key: RSAPrivateKey | None = None,
        kid: str | None = None,
        headers: dict[str, Any] | None = None,
        ttl: int | None = None,
        algorithm: str = "RS256",
        **claims: Any,
    ) -> str:
        """A signed access token for ``user``; any claim may be overridden (None drops it)."""
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.audience,
            "iat": now,
            "exp": now + (self.access_ttl if ttl is None else ttl),
            "azp": self.client_id,
            # Unique per token, as providers do: RS256 signatures are deterministic, so two
            # tokens issued in the same second would otherwise be the same string (a
            # refresh right after sign-in looked like no refresh at all).
            "jti": secrets.token_hex(8),
            **self.user,
        }
        body.update(claims)
        body = {name: value for name, value in body.items() if value is not None}
        current_kid, current_key = self.current
        return jwt.encode(
            body,
            key if key is not None else current_key,
            algorithm=algorithm,
            headers={"kid": kid if kid is not None else current_kid, **(headers or {})},
        )

    def _tokens(self, grant: Grant) -> dict[str, Any]:
        refresh = "rt-" + secrets.token_urlsafe(16)
        self.refresh_tokens[refresh] = grant.client_id
        id_claims: dict[str, Any] = {"aud": grant.client_id}
        if grant.nonce:
            id_claims["nonce"] = grant.nonce
        return {
            "access_token": self.issue(),
            "id_token": self.issue(**id_claims),
            "refresh_token": refresh,
            "token_type": "Bearer",
            "expires_in": self.access_ttl,
            "scope": grant.scope,
        }

    # --- endpoints -----------------------------------------------------------------------

    async def discovery(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
                "end_session_endpoint": f"{self.issuer}/logout",
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "subject_types_supported": ["public"],
            },
            headers=CORS,
        )

    async def jwks_endpoint(self, request: Request) -> Response:
        self.jwks_requests += 1
        return JSONResponse(self.jwks(), headers=CORS)

    async def authorize(self, request: Request) -> Response:
        query = dict(request.query_params)
        self.authorize_requests.append(query)
        problems = []
        if query.get("response_type") != "code":
            problems.append("response_type must be code")
        if query.get("client_id") != self.client_id:
            problems.append("unknown client_id")
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            problems.append("PKCE with S256 is required")
        if "openid" not in query.get("scope", "").split():
            problems.append("scope must include openid")
        redirect_uri = query.get("redirect_uri", "")
        if not redirect_uri.startswith(("http://127.0.0.1:", "http://localhost:")):
            problems.append("redirect_uri is not registered")
        if problems:
            # A bad redirect_uri must not be redirected to: the error is shown here.
            return JSONResponse({"error": "invalid_request", "problems": problems}, 400)
        code = "c-" + secrets.token_urlsafe(16)
        self.codes[code] = Grant(
            client_id=query["client_id"],
            redirect_uri=redirect_uri,
            challenge=query["code_challenge"],
            nonce=query.get("nonce"),
            scope=query.get("scope", ""),
        )
        answer = {"code": code, "state": query.get("state", "")}
        return RedirectResponse(f"{redirect_uri}?{urlencode(answer)}", status_code=302)

    async def token(self, request: Request) -> Response:
        form = {key: str(value) for key, value in (await request.form()).items()}
        self.token_requests.append(form)

        def refuse(error: str) -> Response:
            return JSONResponse({"error": error}, 400, headers=CORS)

        if form.get("grant_type") == "authorization_code":
            grant = self.codes.pop(form.get("code", ""), None)  # a code works once
            if grant is None:
                return refuse("invalid_grant")
            if form.get("client_id") != grant.client_id:
                return refuse("invalid_client")
            if form.get("redirect_uri") != grant.redirect_uri:
                return refuse("invalid_grant")
            if s256(form.get("code_verifier", "")) != grant.challenge:
                return refuse("invalid_grant")
            return JSONResponse(self._tokens(grant), headers=CORS)
        if form.get("grant_type") == "refresh_token":
            client = self.refresh_tokens.pop(form.get("refresh_token", ""), None)
            if client is None or client != form.get("client_id"):
                return refuse("invalid_grant")
            grant = Grant(client, "", "", None, "openid")
            return JSONResponse(self._tokens(grant), headers=CORS)
        return refuse("unsupported_grant_type")

    async def logout(self, request: Request) -> Response:
        target = request.query_params.get("post_logout_redirect_uri")
        if target:
            return RedirectResponse(target, status_code=302)
        return JSONResponse({"signed_out": True})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/.well-known/openid-configuration", self.discovery),
                Route("/jwks", self.jwks_endpoint),
                Route("/authorize", self.authorize),
                Route("/token", self.token, methods=["POST"]),
                Route("/logout", self.logout),
            ]
        )


@asynccontextmanager
async def running_provider(
    audience: str = "switchboard-api", client_id: str = "switchboard-ui", **options: Any
) -> AsyncIterator[FakeProvider]:
    """The fake provider on a free loopback port, its issuer URL known before it serves."""
    sock = loopback_socket()
    issuer = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = FakeProvider(issuer=issuer, audience=audience, client_id=client_id, **options)
    async with running_uvicorn(provider.app(), what="the fake OIDC provider", sock=sock):
        yield provider
