"""Bearer JWTs from an OpenID Connect provider (``SWITCHBOARD_AUTH_MODE=oidc``).

The provider is found from its issuer URL (``/.well-known/openid-configuration``); its
signing keys (the JWKS) are fetched once and cached. A token signed by a key the cache
lacks makes one refetch (the provider rotated its keys), at most once per
``refresh_interval`` so a stream of forged ``kid``s cannot turn this server into a
hammer on the provider; the cache is also refreshed when older than ``MAX_KEYS_AGE``, so
a key the provider withdrew stops working.

Signatures, expiry, issuer and audience are checked by PyJWT; only asymmetric algorithms
are accepted, each with a key of its own type (no ``none``, no HS256 with a public key as
the secret). Errors say which check failed and never carry the token or its claims.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
from jwt import PyJWK

logger = logging.getLogger("switchboard.oidc")

# Asymmetric only: a provider signs with a private key and publishes the public one.
ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
# The JWKS is refetched this often even when every token's key is known.
MAX_KEYS_AGE = 3600.0
DISCOVERY_PATH = "/.well-known/openid-configuration"


class InvalidToken(Exception):
    """The token was refused; ``description`` says why, without its contents."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class ProviderUnreachable(ConnectionError):
    """The provider's discovery document or keys could not be fetched: try again later.

    A ``ConnectionError``, so the socket and REST paths answer it as a temporary outage
    (1013, 503) rather than as a bad token.
    """


@dataclass(frozen=True)
class ProviderMetadata:
    """What the discovery document says, of what this server and its UI use."""

    issuer: str
    jwks_uri: str
    authorization_endpoint: str | None
    token_endpoint: str | None
    end_session_endpoint: str | None


@dataclass(frozen=True)
class Identity:
    """Who a valid token says the caller is: ``subject`` at ``issuer``."""

    issuer: str
    subject: str
    display: str


def _endpoint(document: Mapping[str, Any], key: str) -> str | None:
    value = document.get(key)
    return value if isinstance(value, str) and value else None


class OidcVerifier:
    """Verifies the provider's JWTs (``verify``); one per app, sharing its HTTP client."""

    def __init__(
        self,
        issuer: str,
        audience: str,
        http: httpx.AsyncClient,
        *,
        timeout: float = 10.0,
        leeway: float = 30.0,
        refresh_interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self.audience = audience
        self._http = http
        self._timeout = timeout
        self._leeway = leeway
        self._refresh_interval = refresh_interval
        self._clock = clock
        # The wall clock a token's ``exp`` is held to: each check of an open socket's
        # token (websocket.handler) asks anew, so a token that expires closes it.
        self.now = now
        self._metadata: ProviderMetadata | None = None
        self._keys: dict[str, dict[str, Any]] = {}
        self._built: dict[tuple[str, str], PyJWK] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._lock = asyncio.Lock()

    # --- the provider --------------------------------------------------------------------

    async def _get_json(self, url: str, what: str) -> Mapping[str, Any]:
        try:
            response = await self._http.get(url, timeout=self._timeout)
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            # The URL is configuration, not a secret; the body is not logged.
            logger.warning("identity provider: cannot fetch %s: %s", what, type(exc).__name__)
            raise ProviderUnreachable(
                f"the identity provider's {what} could not be fetched; try again shortly"
            ) from None
        if not isinstance(document, Mapping):
            raise ProviderUnreachable(f"the identity provider's {what} is not a JSON object")
        return document

    async def metadata(self) -> ProviderMetadata:
        """The discovery document, fetched once (again after a failure)."""
        if self._metadata is not None:
            return self._metadata
        async with self._lock:
            if self._metadata is None:
                self._metadata = await self._discover()
        return self._metadata

    async def _discover(self) -> ProviderMetadata:
        document = await self._get_json(self.issuer + DISCOVERY_PATH, "discovery document")
        issuer = _endpoint(document, "issuer")
        # OpenID Connect Discovery §4.3: the document must name the issuer it was fetched
        # for, or a token "from" this issuer could be checked against someone else's keys.
        if issuer is None or issuer.rstrip("/") != self.issuer:
            raise ProviderUnreachable(
                "the identity provider's discovery document names another issuer; "
                "check SWITCHBOARD_OIDC_ISSUER"
            )
        jwks_uri = _endpoint(document, "jwks_uri")
        if jwks_uri is None:
            raise ProviderUnreachable("the identity provider's discovery document has no jwks_uri")
        return ProviderMetadata(
            issuer=issuer,
            jwks_uri=jwks_uri,
            authorization_endpoint=_endpoint(document, "authorization_endpoint"),
            token_endpoint=_endpoint(document, "token_endpoint"),
            end_session_endpoint=_endpoint(document, "end_session_endpoint"),
        )

    async def _fetch_keys(self) -> None:
        # Called under self._lock, which metadata() takes too (asyncio locks do not nest).
        if self._metadata is None:
            self._metadata = await self._discover()
        metadata = self._metadata
        document = await self._get_json(metadata.jwks_uri, "signing keys (JWKS)")
        entries = document.get("keys")
        self._keys = {
            str(entry.get("kid", "")): dict(entry)
            for entry in (entries if isinstance(entries, list) else ())
            if isinstance(entry, dict) and entry.get("use", "sig") == "sig"
        }
        self._built.clear()
        self._fetched_at = self._clock()

    def _build(self, kid: str, algorithm: str) -> PyJWK:
        """The key ``kid`` for ``algorithm``: refused when its type or ``alg`` differ."""
        built = self._built.get((kid, algorithm))
        if built is not None:
            return built
        entry = self._keys[kid]
        if entry.get("alg", algorithm) != algorithm:
            raise InvalidToken("the token's algorithm does not match its key")
        try:
            built = PyJWK.from_dict(entry, algorithm=algorithm)
        except (jwt.PyJWTError, ValueError, KeyError, TypeError):  # wrong type, or malformed
            raise InvalidToken("the token's algorithm does not match its key") from None
        self._built[(kid, algorithm)] = built
        return built

    def _knows(self, kid: str) -> bool:
        """Whether ``kid`` is in a cache young enough to use without asking the provider."""
        fetched = self._fetched_at
        return kid in self._keys and fetched is not None and self._clock() - fetched < MAX_KEYS_AGE

    async def _has_key(self, kid: str) -> bool:
        """Whether a key named ``kid`` is known; refetches the JWKS when it is unknown or
        old, at most once per ``refresh_interval``."""
        if self._knows(kid):
            return True
        async with self._lock:
            stale = self._fetched_at is None or self._clock() - self._fetched_at >= MAX_KEYS_AGE
            # Rate-limited by the last attempt, not the last success: a provider that is
            # down must not be asked (and waited for) on every request.
            attempted = self._attempted_at
            may_refetch = attempted is None or self._clock() - attempted >= self._refresh_interval
            if may_refetch and (kid not in self._keys or stale):
                self._attempted_at = self._clock()
                try:
                    await self._fetch_keys()
                except ProviderUnreachable:
                    if not self._keys:
                        raise
                    # Old keys beat no keys while the provider is down.
                    logger.warning("identity provider: keeping the cached signing keys")
        return kid in self._keys

    # --- tokens --------------------------------------------------------------------------

    async def verify(self, token: str) -> Identity:
        """The identity a valid token carries; ``InvalidToken`` says why one is not."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("the token is not a well-formed JWT") from None
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise InvalidToken(
                "the token's signing algorithm is not accepted (only "
                + ", ".join(sorted(ALGORITHMS))
                + ")"
            )
        kid = header.get("kid")
        kid = kid if isinstance(kid, str) else ""
        if not self._knows(kid):
            # Before a key is fetched for it, the token must at least claim our issuer:
            # a token of another provider must not make us refetch keys. (A known key's
            # tokens skip this second parse: the verified decode checks the issuer too.)
            try:
                unverified = jwt.decode(token, options={"verify_signature": False})
            except jwt.PyJWTError:
                raise InvalidToken("the token is not a well-formed JWT") from None
            issuer = unverified.get("iss")
            if not isinstance(issuer, str) or issuer.rstrip("/") != self.issuer:
                raise InvalidToken("the token was issued by another issuer")
            if not await self._has_key(kid):
                raise InvalidToken("the token is signed by a key this server does not know")
        key = self._build(kid, algorithm)
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=[algorithm],
                audience=self.audience,
                # Some providers (Auth0) write the issuer with a trailing slash.
                issuer=[self.issuer, self.issuer + "/"],
                leeway=self._leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the token has expired") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken(
                "the token is not meant for this server (its audience is not "
                "SWITCHBOARD_OIDC_AUDIENCE)"
            ) from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("the token was issued by another issuer") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("the token is not valid yet") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken("the token's signature is not valid") from None
        except jwt.MissingRequiredClaimError as exc:
            raise InvalidToken(f"the token lacks the {exc.claim!r} claim") from None
        except jwt.PyJWTError:
            raise InvalidToken("the token is not valid") from None
        expires = claims.get("exp")
        if isinstance(expires, int | float) and expires + self._leeway <= self.now():
            raise InvalidToken("the token has expired")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise InvalidToken("the token's 'sub' claim is empty")
        display = next(
            (
                value
                for name in ("preferred_username", "email", "name")
                if isinstance(value := claims.get(name), str) and value.strip()
            ),
            subject,
        )
        return Identity(issuer=self.issuer, subject=subject, display=display)
