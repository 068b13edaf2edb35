"""Signing in with an identity provider in the browser (``SWITCHBOARD_AUTH_MODE=oidc``):
the authorization-code flow with PKCE against the fake provider, a chat over the socket
with the access token, a refresh when it is about to expire, and signing out."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from playwright.async_api import Page

from app.settings import Settings
from tests.browser.pages import open_ui, send, wait_turns_ended
from tests.support.oidc_provider import FakeProvider, running_provider, s256
from tests.support.servers import LiveServer, serve
from tests.support.waiting import wait_until

AUDIENCE = "switchboard-api"
TOKENS = "switchboard.oidc.tokens"


@pytest.fixture
async def provider() -> AsyncIterator[FakeProvider]:
    async with running_provider(audience=AUDIENCE) as running:
        yield running


@pytest.fixture
async def oidc_live(
    ui_settings: Callable[..., Settings], provider: FakeProvider
) -> AsyncIterator[LiveServer]:
    settings = ui_settings(
        offline_delta_delay=0.002,
        auth_mode="oidc",
        oidc_issuer=provider.issuer,
        oidc_audience=AUDIENCE,
        oidc_client_id=provider.client_id,
    )
    async with serve(settings) as server:
        yield server


async def stored_tokens(page: Page) -> dict[str, object] | None:
    raw = await page.evaluate(f"() => sessionStorage.getItem('{TOKENS}')")
    return json.loads(raw) if raw else None


async def test_the_page_signs_in_with_pkce_chats_refreshes_and_signs_out(
    oidc_live: LiveServer, provider: FakeProvider, page: Page, tmp_path: Path
) -> None:
    # The page goes to the provider, which approves the test user and sends it back.
    await open_ui(page, oidc_live.http)
    assert await page.text_content("#whoami") == "Signed in as ada"
    assert await page.is_visible("#sign-out")
    # The code and state are gone from the address bar.
    assert page.url == f"{oidc_live.http}/"

    [asked] = provider.authorize_requests
    assert asked["code_challenge_method"] == "S256"
    assert asked["redirect_uri"] == f"{oidc_live.http}/"
    assert asked["audience"] == AUDIENCE
    [exchange] = provider.token_requests
    assert exchange["grant_type"] == "authorization_code"
    # The verifier the page kept matches the challenge it sent (the provider checked too).
    assert s256(exchange["code_verifier"]) == asked["code_challenge"]

    # Tokens in this tab's sessionStorage, nothing in localStorage.
    tokens = await stored_tokens(page)
    assert tokens is not None and tokens["access_token"] and tokens["refresh_token"]
    assert await page.evaluate("() => Object.keys(localStorage)") == []

    # The socket takes the access token: a whole turn runs.
    await send(page, "What are my account balances?")
    await wait_turns_ended(page, 1)
    shot = tmp_path / "oidc-signed-in.png"
    await page.screenshot(path=str(shot))
    assert shot.stat().st_size > 0

    # An access token about to expire is refreshed (no new visit to the provider).
    await page.evaluate(f"""() => {{
        const tokens = JSON.parse(sessionStorage.getItem('{TOKENS}'));
        tokens.expires_at = Date.now();
        sessionStorage.setItem('{TOKENS}', JSON.stringify(tokens));
    }}""")
    await page.reload()
    await page.wait_for_function(
        "() => document.getElementById('whoami').textContent === 'Signed in as ada'"
    )
    assert [request["grant_type"] for request in provider.token_requests] == [
        "authorization_code",
        "refresh_token",
    ]
    assert len(provider.authorize_requests) == 1
    refreshed = await stored_tokens(page)
    assert refreshed is not None and refreshed["access_token"] != tokens["access_token"]

    # Signing out ends the provider's session and comes back to a page that asks first.
    await page.click("#sign-out")
    await page.locator("#signin-dialog").wait_for(state="visible")
    assert await page.text_content("#signin-text") == "You are signed out."
    assert await stored_tokens(page) is None
    signed_out = tmp_path / "oidc-signed-out.png"
    await page.screenshot(path=str(signed_out))

    # And signing in again takes one click.
    await page.click("#signin-go")
    await page.wait_for_function(
        "() => document.getElementById('whoami').textContent === 'Signed in as ada'"
    )
    assert len(provider.authorize_requests) == 2


async def test_a_refused_sign_in_is_shown_not_looped(
    ui_settings: Callable[..., Settings], provider: FakeProvider, page: Page
) -> None:
    # The server expects another audience than the provider's tokens carry: every token
    # fresh from the provider is refused, and the page must say so instead of redirecting
    # for ever.
    settings = ui_settings(
        auth_mode="oidc",
        oidc_issuer=provider.issuer,
        oidc_audience="another-api",
        oidc_client_id=provider.client_id,
    )
    async with serve(settings) as server:
        await page.goto(server.http)
        await page.locator("#signin-dialog").wait_for(state="visible")
        text = await page.text_content("#signin-text") or ""
    assert "did not accept the sign-in" in text
    assert "not meant for this server" in text
    assert len(provider.authorize_requests) == 1


async def test_a_short_lived_token_is_refreshed_while_the_page_stays_open(
    ui_settings: Callable[..., Settings], provider: FakeProvider, page: Page
) -> None:
    # Tokens for 65 s: the page refreshes a minute before expiry, so within seconds.
    provider.access_ttl = 65
    settings = ui_settings(
        offline_delta_delay=0.002,
        auth_mode="oidc",
        oidc_issuer=provider.issuer,
        oidc_audience=AUDIENCE,
        oidc_client_id=provider.client_id,
    )
    async with serve(settings) as server:
        await open_ui(page, server.http)
        first = await stored_tokens(page)
        assert first is not None
        await wait_until(
            lambda: any(r["grant_type"] == "refresh_token" for r in provider.token_requests),
            what="the page to refresh its access token",
        )
        await page.wait_for_function(
            f"""() => JSON.parse(sessionStorage.getItem('{TOKENS}')).access_token
                 !== {json.dumps(first["access_token"])}"""
        )
        # The refreshed token is the one the page uses: a turn runs on a new socket.
        await send(page, "What are my account balances?")
        await wait_turns_ended(page, 1)
    assert len(provider.authorize_requests) == 1
