"""The verifier's key cache against the fake provider over real HTTP: an unknown ``kid``
refetches the JWKS at most once per interval (a stream of forged kids cannot hammer the
provider), a rotation is picked up, and old keys serve while the provider is down."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.oidc import MAX_KEYS_AGE, InvalidToken, OidcVerifier, ProviderUnreachable
from tests.support.oidc_provider import FakeProvider, new_rsa_key, running_provider


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def provider() -> AsyncIterator[FakeProvider]:
    async with running_provider() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def verifier(provider: FakeProvider, http: httpx.AsyncClient, clock: Clock) -> OidcVerifier:
    return OidcVerifier(provider.issuer, provider.audience, http, refresh_interval=60, clock=clock)


async def test_unknown_kids_refetch_at_most_once_per_interval(
    provider: FakeProvider, http: httpx.AsyncClient
) -> None:
    clock = Clock()
    checker = verifier(provider, http, clock)
    identity = await checker.verify(provider.issue())
    assert identity.subject == provider.user["sub"]
    assert provider.jwks_requests == 1

    forged = [provider.issue(key=new_rsa_key(), kid=f"forged-{n}") for n in range(5)]
    clock.now += 61
    for token in forged:
        with pytest.raises(InvalidToken, match="a key this server does not know"):
            await checker.verify(token)
    assert provider.jwks_requests == 2  # one refetch for five unknown kids

    # The provider rotates within the interval: not fetched yet, then fetched after it.
    provider.rotate(keep_old=True)
    rotated = provider.issue()
    with pytest.raises(InvalidToken, match="a key this server does not know"):
        await checker.verify(rotated)
    assert provider.jwks_requests == 2
    clock.now += 61
    assert (await checker.verify(rotated)).subject == provider.user["sub"]
    assert provider.jwks_requests == 3
    # Known keys need no request at all.
    for _ in range(3):
        await checker.verify(provider.issue())
    assert provider.jwks_requests == 3


async def test_old_keys_serve_while_the_provider_is_down(http: httpx.AsyncClient) -> None:
    clock = Clock()
    async with running_provider() as provider:
        checker = verifier(provider, http, clock)
        token = provider.issue()
        await checker.verify(token)
    # The provider has stopped; its keys are older than MAX_KEYS_AGE, so the verifier
    # tries to refetch them, fails, and keeps the cached ones meanwhile.
    clock.now += MAX_KEYS_AGE + 1
    assert (await checker.verify(token)).subject == provider.user["sub"]
    # A token of a key it never saw is refused as a bad token (the server still has keys),
    # not as an outage.
    with pytest.raises(InvalidToken, match="a key this server does not know"):
        await checker.verify(provider.issue(key=new_rsa_key(), kid="new"))


async def test_a_provider_never_reached_is_unreachable_not_an_invalid_token(
    http: httpx.AsyncClient,
) -> None:
    checker = OidcVerifier("http://127.0.0.1:9", "api", http, timeout=2)
    provider = FakeProvider(issuer="http://127.0.0.1:9", audience="api", client_id="ui")
    with pytest.raises(ProviderUnreachable, match="could not be fetched"):
        await checker.verify(provider.issue())


async def test_an_issuer_written_with_a_trailing_slash_is_the_same_issuer(
    provider: FakeProvider, http: httpx.AsyncClient
) -> None:
    # Auth0 writes "https://tenant.auth0.com/" in its tokens; the setting may have it or not.
    for configured in (provider.issuer, provider.issuer + "/"):
        checker = OidcVerifier(configured, provider.audience, http)
        identity = await checker.verify(provider.issue(iss=provider.issuer + "/"))
        assert identity.issuer == provider.issuer
    with pytest.raises(InvalidToken, match="another issuer"):
        await checker.verify(provider.issue(iss=provider.issuer + "/other"))
