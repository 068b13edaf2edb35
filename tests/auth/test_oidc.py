"""``SWITCHBOARD_AUTH_MODE=oidc``: the real app on uvicorn against the fake provider.

Every refusal is a 401 whose ``WWW-Authenticate`` names the check that failed, and
neither the answer nor the server's log carries the token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from app.settings import Settings
from storage.users import UserRepository
from tests.support.logs import capture_logs
from tests.support.oidc_provider import FakeProvider, new_rsa_key, running_provider
from tests.support.servers import LiveServer, serve

AUDIENCE = "switchboard-api"


@pytest.fixture
async def provider() -> AsyncIterator[FakeProvider]:
    async with running_provider(audience=AUDIENCE) as running:
        yield running


def oidc_settings(make_settings: Callable[..., Settings], provider: FakeProvider) -> Settings:
    return make_settings(
        auth_mode="oidc",
        oidc_issuer=provider.issuer,
        oidc_audience=AUDIENCE,
        oidc_client_id=provider.client_id,
        # Every unknown kid may refetch: the rotation tests need no clock games here
        # (the rate limit has its own test, test_oidc_keys.py).
        oidc_jwks_refresh_seconds=0,
    )


@pytest.fixture
async def live(
    make_settings: Callable[..., Settings], provider: FakeProvider
) -> AsyncIterator[LiveServer]:
    async with serve(oidc_settings(make_settings, provider)) as server:
        yield server


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hand_signed(header: dict[str, Any], claims: dict[str, Any], secret: bytes | None) -> str:
    """A JWT made by hand: what an attacker sends (PyJWT refuses to make these)."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    if secret is None:
        return signing_input + "."
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(mac)}"


def good_claims(provider: FakeProvider) -> dict[str, Any]:
    token = provider.issue()
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


async def test_a_valid_token_signs_in_the_user_keyed_by_sub(
    live: LiveServer, provider: FakeProvider
) -> None:
    async with live.client(provider.issue()) as client:
        first = await client.get("/api/me")
    assert first.status_code == 200, first.text
    assert first.json()["name"] == "ada"
    assert first.json()["auth_mode"] == "oidc"

    # Same sub, another display name: the same user (the name is only a first label).
    async with live.client(provider.issue(preferred_username="ada.l")) as client:
        again = await client.get("/api/me")
    assert again.json()["id"] == first.json()["id"]

    # Another sub with the same display name: another user, with a name of its own.
    async with live.client(provider.issue(sub="someone-else")) as client:
        other = await client.get("/api/me")
    assert other.status_code == 200
    assert other.json()["id"] != first.json()["id"]
    assert other.json()["name"] != "ada" and other.json()["name"].startswith("ada#")


async def test_the_same_sub_at_another_issuer_is_another_user(live: LiveServer) -> None:
    users = UserRepository(live.services.db)
    one = await users.user_for_identity("https://a.example", "42", "sam")
    two = await users.user_for_identity("https://b.example", "42", "sam")
    assert one.id != two.id
    assert await users.user_for_identity("https://a.example", "42", "renamed") == one


def _unknown_key(provider: FakeProvider) -> str:
    return provider.issue(key=new_rsa_key(), kid="not-a-published-kid")


def _known_kid_wrong_key(provider: FakeProvider) -> str:
    return provider.issue(key=new_rsa_key())


def _hs256_with_public_key(provider: FakeProvider) -> str:
    kid, key = provider.current
    pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hand_signed({"alg": "HS256", "typ": "JWT", "kid": kid}, good_claims(provider), pem)


def _alg_none(provider: FakeProvider) -> str:
    return hand_signed({"alg": "none", "typ": "JWT"}, good_claims(provider), None)


REFUSALS: dict[str, tuple[Callable[[FakeProvider], str], str]] = {
    "wrong issuer": (
        lambda p: p.issue(iss="https://evil.example"),
        "the token was issued by another issuer",
    ),
    "wrong audience": (
        lambda p: p.issue(aud="some-other-api"),
        "the token is not meant for this server",
    ),
    # Past the leeway (30 s by default).
    "expired": (lambda p: p.issue(ttl=-120), "the token has expired"),
    "unknown key": (_unknown_key, "the token is signed by a key this server does not know"),
    "known kid, another key": (_known_kid_wrong_key, "the token's signature is not valid"),
    "alg none": (_alg_none, "the token's signing algorithm is not accepted"),
    "HS256 with the public key as secret": (
        _hs256_with_public_key,
        "the token's signing algorithm is not accepted",
    ),
    # The provider publishes its key for RS256; a PS256 token under that kid is refused.
    "another algorithm for the key": (
        lambda p: p.issue(algorithm="PS256"),
        "the token's algorithm does not match its key",
    ),
    "no sub": (lambda p: p.issue(sub=None), "the token lacks the 'sub' claim"),
    "not a JWT": (lambda p: "not-a-jwt", "the token is not a well-formed JWT"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
async def test_a_bad_token_is_refused_with_a_clear_401(
    live: LiveServer, provider: FakeProvider, case: str
) -> None:
    make, reason = REFUSALS[case]
    token = make(provider)
    with capture_logs() as logs:
        async with live.client(token) as client:
            response = await client.get("/api/me")
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "unauthorized"
    assert reason in response.json()["error"]["message"]
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="switchboard"')
    assert 'error="invalid_token"' in challenge
    assert f'error_description="{reason}' in challenge
    # Nothing of the token, in the answer or the log.
    for part in token.split("."):
        if len(part) > 8:
            assert part not in response.text and part not in challenge
            assert all(part not in record.getMessage() for record in logs.records)
    assert not logs.at_least(logging.ERROR), logs.describe(logs.records)


async def test_every_entry_point_takes_the_token_the_same_way(
    live: LiveServer, provider: FakeProvider
) -> None:
    good, expired = provider.issue(), provider.issue(ttl=-120)
    for token, allowed in ((good, True), (expired, False)):
        async with live.client(token) as client:
            chats = await client.get("/api/chats")
            responses = await client.get("/v1/responses/resp_unknown")
            agui = await client.post("/ag-ui", json={})
        if allowed:
            assert chats.status_code == 200
            assert responses.status_code == 404  # signed in; there is no such response
            assert agui.status_code == 400  # signed in; the body is not a run
        else:
            for response in (chats, responses, agui):
                assert response.status_code == 401, response.url
                assert "the token has expired" in response.headers["www-authenticate"]

    # The chat socket: the token as ?token= (browsers cannot set headers on a socket).
    async with connect(live.ws_url("oidc-chat", token=good)) as socket:
        await socket.send(json.dumps({"type": "ping"}))
        assert json.loads(await socket.recv(decode=True))["type"] == "pong"
    async with connect(live.ws_url("oidc-chat", token=expired)) as socket:
        with pytest.raises(ConnectionClosed) as closed:
            await socket.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401


async def test_a_token_that_expires_while_its_socket_is_open_closes_it(
    live: LiveServer, provider: FakeProvider
) -> None:
    # Issue 33, item 2: the socket's token is checked again for every frame that acts and
    # every 15 s; the provider's clock is not waited for but moved past exp and leeway.
    token = provider.issue(ttl=300)
    async with (
        connect(live.ws_url("oidc-expiry", token=token)) as socket,
        connect(live.ws_url("oidc-expiry-idle", token=token)) as idle,
    ):
        for open_socket in (socket, idle):
            await open_socket.send(json.dumps({"type": "ping"}))
            assert json.loads(await open_socket.recv(decode=True))["type"] == "pong"
        oidc = live.services.auth.oidc
        assert oidc is not None
        expires = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))["exp"]
        oidc.now = lambda: expires + live.settings.oidc_leeway_seconds + 1
        await socket.send(json.dumps({"type": "prompt", "text": "hello"}))
        with pytest.raises(ConnectionClosed) as closed:
            await socket.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
        # The one that only listens is closed by the next look at every socket.
        assert await live.services.connections.recheck() == 1
        with pytest.raises(ConnectionClosed) as closed:
            await idle.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
    oidc.now = time.time
    async with live.client(provider.issue()) as http:
        assert (await http.get("/api/chats")).json()["chats"] == []  # nothing was started


async def test_api_tokens_still_work_in_oidc_mode(live: LiveServer) -> None:
    _user, token = await UserRepository(live.services.db).create_user("prometheus")
    async with live.client(token) as client:
        me = await client.get("/api/me")
    assert me.json()["name"] == "prometheus"


async def test_a_rotated_key_is_fetched_and_the_withdrawn_one_refused(
    live: LiveServer, provider: FakeProvider
) -> None:
    before = provider.issue()
    async with live.client(before) as client:
        assert (await client.get("/api/me")).status_code == 200
    fetched = provider.jwks_requests

    provider.rotate()  # the old key is withdrawn
    after = provider.issue()
    async with live.client(after) as client:
        assert (await client.get("/api/me")).status_code == 200
    assert provider.jwks_requests == fetched + 1

    # The server's keys are the provider's new set now: a token of the old key is refused.
    async with live.client(before) as client:
        stale = await client.get("/api/me")
    assert stale.status_code == 401
    assert "a key this server does not know" in stale.headers["www-authenticate"]


async def test_a_provider_that_cannot_be_reached_is_a_503_not_a_401(
    make_settings: Callable[..., Settings], provider: FakeProvider
) -> None:
    settings = oidc_settings(make_settings, provider)
    token = provider.issue()
    # The discovery document names another issuer: keys cannot be trusted, nor fetched.
    settings = settings.model_copy(update={"oidc_issuer": provider.issuer + "/elsewhere"})
    async with serve(settings) as server:
        async with server.client(token) as client:
            response = await client.get("/api/me")
            config = await client.get("/api/auth/config")
        async with server.client(provider.issue(iss=settings.oidc_issuer)) as client:
            down = await client.get("/api/me")
    assert response.status_code == 401  # another issuer: the token says so first
    assert down.status_code == 503, down.text
    assert down.headers["retry-after"] == "5"
    assert config.status_code == 503
    assert "could not be fetched" in config.json()["error"]["message"]


async def test_the_page_learns_how_to_sign_in(live: LiveServer, provider: FakeProvider) -> None:
    async with live.client() as client:
        response = await client.get("/api/auth/config")
        page = await client.get("/")
    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == "oidc"
    assert body["oidc"]["client_id"] == provider.client_id
    assert body["oidc"]["authorization_endpoint"] == f"{provider.issuer}/authorize"
    assert body["oidc"]["token_endpoint"] == f"{provider.issuer}/token"
    # The page may call the provider's token endpoint (and nothing else outside).
    policy = page.headers["content-security-policy"]
    connect_src = next(part for part in policy.split("; ") if part.startswith("connect-src"))
    assert connect_src.split() == ["connect-src", "'self'", provider.issuer]
