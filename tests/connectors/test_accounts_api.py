"""The connector REST API on a real server: listing, demo connect/disconnect, the Google
OAuth flow (PKCE, state bound to the user and to the browser that started it) and the Plaid
Link flow end to end against the fakes, encrypted credentials at rest, and every bad
request answered clearly."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from app.settings import Settings, load_settings
from storage.engine import Database
from storage.models import connected_accounts
from storage.users import UserRepository
from tests.fakes.gmail_api import SCOPES, FakeGoogle
from tests.fakes.plaid_api import FakePlaid
from tests.support.clients import open_client
from tests.support.connectors import FAST, with_options
from tests.support.servers import LiveServer, serve

CALLBACK = "/oauth/google/callback"
BINDING = "sb_oauth"


@pytest.fixture
def settings_for(database_url: str, tmp_path: Path) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        return load_settings(
            **{
                "database_url": database_url,
                "data_dir": tmp_path / "data",
                "secret_key": Fernet.generate_key().decode(),
                "auth_mode": "token",
                **FAST,
                **overrides,
            }
        )

    return make


@pytest.fixture
async def tokens(db: Database) -> dict[str, str]:
    users = UserRepository(db)
    return {name: (await users.create_user(name))[1] for name in ("alice", "bob")}


def browser(server: LiveServer, token: str | None) -> httpx.AsyncClient:
    """A client signed in by an ``sb_session`` cookie, on every request (the callback too).

    The server accepts that cookie, but the bundled UI never has one: see ``ui_browser``.
    """
    cookies = {"sb_session": token} if token else {}
    return httpx.AsyncClient(base_url=server.http, cookies=cookies, timeout=10)


def ui_browser(server: LiveServer) -> httpx.AsyncClient:
    """A browser running the bundled UI in token mode: no cookie of its own (the token is
    in localStorage; API calls send it with ``bearer``), and it keeps the cookies that
    responses set, like a browser, so Google's redirect back carries only those."""
    return httpx.AsyncClient(base_url=server.http, timeout=10)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def raw_rows(db: Database) -> list[Any]:
    async with db.session() as session:
        return list((await session.execute(select(connected_accounts))).all())


def connector(listing: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in listing["connectors"] if c["name"] == name)


# ----------------------------------------------------------------------------- demo


async def test_listing_shows_every_connector_connected_in_demo(
    settings_for: Callable[..., Settings], tokens: dict[str, str]
) -> None:
    async with serve(settings_for()) as server, browser(server, tokens["alice"]) as client:
        listing = (await client.get("/api/connectors")).json()
        assert [c["name"] for c in listing["connectors"]] == ["gmail", "plaid", "yelp", "search"]
        gmail = connector(listing, "gmail")
        assert gmail == {
            "name": "gmail",
            "display_name": "Gmail",
            "agent_name": "GMail",
            "mode": "demo",
            "needs_account": True,
            "connected": True,
            "account": {"mode": "demo", "email": "me@example.com"},
            "connected_at": None,
            "tools": gmail["tools"],
            "server": None,
            "icon": "mail",
            "card": gmail["card"],
            "card_css": gmail["card_css"],
        }
        # Its card, served beside the package (tests/app/test_connector_assets.py).
        assert gmail["card"].startswith("/connectors/gmail/card.js?v=")
        assert gmail["card_css"].startswith("/connectors/gmail/card.css?v=")
        assert {"name": "send_google_email", "description": "Sending an email"} in gmail["tools"]
        yelp = connector(listing, "yelp")
        assert yelp["needs_account"] is False and yelp["connected"] is True
        assert yelp["account"] is None
        async with httpx.AsyncClient(base_url=server.http) as anonymous:
            refused = await anonymous.get("/api/connectors")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
        foreign = await client.get("/api/connectors", headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403


async def test_demo_disconnect_and_connect_are_per_user(
    settings_for: Callable[..., Settings], tokens: dict[str, str], db: Database
) -> None:
    async with (
        serve(settings_for()) as server,
        browser(server, tokens["alice"]) as alice,
        browser(server, tokens["bob"]) as bob,
    ):
        gone = await alice.delete("/api/connectors/plaid")
        assert gone.status_code == 200
        assert gone.json()["status"] == "disconnected"
        assert gone.json()["connector"]["connected"] is False
        assert connector((await alice.get("/api/connectors")).json(), "plaid")["connected"] is False
        assert connector((await bob.get("/api/connectors")).json(), "plaid")["connected"] is True

        back = await alice.post("/api/connectors/plaid/connect")
        assert back.json()["status"] == "connected"
        state = back.json()["connector"]
        assert state["connected"] is True and state["connected_at"] is not None
        assert state["account"] == {"mode": "demo", "institutions": ["Chase", "Ally Bank"]}

        server_keys = await alice.delete("/api/connectors/search")
        assert server_keys.status_code == 409
        assert server_keys.json()["error"]["message"] == (
            "search has no per-user account to disconnect: it uses the server's keys"
        )
        assert (await alice.post("/api/connectors/search/connect")).json()["status"] == "connected"
        unknown = await alice.post("/api/connectors/telegram/connect")
        assert unknown.status_code == 404
        assert unknown.json()["error"]["message"] == (
            "no connector named 'telegram'; GET /api/connectors lists them"
        )
        wrong_method = await alice.get("/api/connectors/gmail/connect")
        assert wrong_method.status_code == 405
    assert len(await raw_rows(db)) == 1  # alice's plaid row only


# ----------------------------------------------------------------------------- google oauth


@pytest.fixture
async def google_server() -> AsyncIterator[FakeGoogle]:
    from tests.fakes.fake_service import serve_fake

    fake = FakeGoogle()
    async with serve_fake(fake):
        yield fake


def gmail_live(settings_for: Callable[..., Settings], fake: FakeGoogle) -> Settings:
    return settings_for(
        **with_options(
            connector_modes={"gmail": "live"},
            google_client_id=fake.client_id,
            google_client_secret=fake.client_secret,
            google_auth_url=f"{fake.base_url}/o/oauth2/v2/auth",
            google_oauth_base_url=fake.base_url,
            gmail_base_url=fake.base_url,
        )
    )


async def google_consents(url: str) -> str:
    """The fake Google's consent page for ``url``; returns where it redirects: our callback."""
    async with httpx.AsyncClient() as google:
        consent = await google.get(url)
    assert consent.status_code == 302, consent.text
    return consent.headers["location"]


async def start_oauth(client: httpx.AsyncClient, fake: FakeGoogle, token: str | None = None) -> str:
    """POST connect (with ``token`` as a Bearer header, as the UI does, when given), then
    let the fake Google consent; returns our callback URL."""
    started = await client.post(
        "/api/connectors/gmail/connect", headers=bearer(token) if token else None
    )
    assert started.status_code == 200 and started.json()["status"] == "redirect"
    return await google_consents(started.json()["url"])


async def user_id(db: Database, name: str) -> str:
    user = await UserRepository(db).get_by_name(name)
    assert user is not None
    return user.id


async def test_google_oauth_connects_gmail_end_to_end(
    settings_for: Callable[..., Settings],
    tokens: dict[str, str],
    db: Database,
    google_server: FakeGoogle,
) -> None:
    async with (
        serve(gmail_live(settings_for, google_server)) as server,
        browser(server, tokens["alice"]) as alice,
    ):
        assert connector((await alice.get("/api/connectors")).json(), "gmail") == {
            **connector((await alice.get("/api/connectors")).json(), "gmail"),
            "mode": "live",
            "connected": False,
            "account": None,
        }
        started = await alice.post("/api/connectors/gmail/connect")
        url = urlsplit(started.json()["url"])
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        assert (
            f"{url.scheme}://{url.netloc}{url.path}" == f"{google_server.base_url}/o/oauth2/v2/auth"
        )
        assert query["client_id"] == google_server.client_id
        assert query["redirect_uri"] == f"{server.http}{CALLBACK}"
        assert query["response_type"] == "code" and query["access_type"] == "offline"
        assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
        assert set(query["scope"].split()) == set(SCOPES)
        assert tokens["alice"] not in query["state"]

        callback = await start_oauth(alice, google_server)
        assert callback.startswith(f"{server.http}{CALLBACK}?")
        landed = await alice.get(callback)
        assert landed.status_code == 200, landed.text
        assert "Gmail connected" in landed.text and google_server.email in landed.text
        assert landed.headers["referrer-policy"] == "no-referrer"
        assert landed.headers["cache-control"] == "no-store"

        state = connector((await alice.get("/api/connectors")).json(), "gmail")
        assert state["connected"] is True
        assert state["account"] == {
            "mode": "live",
            "email": google_server.email,
            "scopes": sorted(SCOPES),
        }

        (row,) = await raw_rows(db)
        access = next(iter(google_server.access_tokens))
        refresh = next(iter(google_server.refresh_tokens))
        stored = bytes(row.credentials)
        for secret in (access, refresh, google_server.client_secret):
            assert secret.encode() not in stored
            assert secret not in str(row.meta)
        assert server.services.fernet.decrypt(stored)  # encrypted with the app's key

        # The same tools now read the fake Gmail, through a real turn on the socket.
        async with open_client(server.ws_url("chat-live-gmail", token=tokens["alice"])) as ws:
            events = await ws.turn("what's in my inbox?")
        (output,) = [e["output"] for e in events if e["type"] == "tool_output"]
        assert output["response_type"] == "google_email_inbox"
        assert "Your order has shipped" in {m["subject"] for m in output["response"]}

        # Disconnecting revokes the grant at Google and deletes the credentials.
        gone = await alice.delete("/api/connectors/gmail")
        assert gone.json()["connector"]["connected"] is False
        assert refresh in google_server.revoked
        assert await raw_rows(db) == []


async def test_the_callback_refuses_other_users_bad_states_and_replays(
    settings_for: Callable[..., Settings],
    tokens: dict[str, str],
    db: Database,
    google_server: FakeGoogle,
) -> None:
    async with (
        serve(gmail_live(settings_for, google_server)) as server,
        browser(server, tokens["alice"]) as alice,
        browser(server, tokens["bob"]) as bob,
        browser(server, None) as anonymous,
    ):
        callback = await start_oauth(alice, google_server)

        stolen = await bob.get(callback)  # alice's sign-in landing in bob's browser
        assert stolen.status_code == 403
        assert "started by another Switchboard user" in stolen.text
        signed_out = await anonymous.get(callback)
        assert signed_out.status_code == 401

        parts = urlsplit(callback)
        query = parse_qs(parts.query)
        tampered = await alice.get(
            CALLBACK, params={"code": query["code"][0], "state": query["state"][0][:-4] + "AAAA"}
        )
        assert tampered.status_code == 400 and "invalid or has expired" in tampered.text
        no_state = await alice.get(CALLBACK, params={"code": "x"})
        assert no_state.status_code == 400
        assert await raw_rows(db) == []  # nothing stored by any of these

        assert (await alice.get(callback)).status_code == 200
        replay = await alice.get(callback)  # the code is single use
        assert replay.status_code == 400 and "already used" in replay.text
        assert len(await raw_rows(db)) == 1


async def test_the_bundled_ui_connects_gmail_in_token_mode(
    settings_for: Callable[..., Settings],
    tokens: dict[str, str],
    db: Database,
    google_server: FakeGoogle,
) -> None:
    async with serve(gmail_live(settings_for, google_server)) as server, ui_browser(server) as page:
        started = await page.post("/api/connectors/gmail/connect", headers=bearer(tokens["alice"]))
        assert started.status_code == 200, started.text
        name, _, attributes = started.headers["set-cookie"].partition(";")
        assert name.startswith(f"{BINDING}=")
        assert {part.strip().lower() for part in attributes.split(";")} >= {
            "httponly",
            "samesite=lax",
            f"path={CALLBACK}",
            "max-age=600",
        }
        assert "secure" not in attributes.lower()  # plain http here
        nonce = page.cookies[BINDING]
        assert nonce not in started.json()["url"]  # the state seals only its hash

        # Google's top-level redirect back: no Authorization header, no session cookie.
        landed = await page.get(await google_consents(started.json()["url"]))
        assert "authorization" not in landed.request.headers
        assert landed.request.headers["cookie"] == f"{BINDING}={nonce}"
        assert landed.status_code == 200, landed.text
        assert "Gmail connected" in landed.text and google_server.email in landed.text
        assert BINDING not in page.cookies  # cleared: the nonce is used up

        (row,) = await raw_rows(db)
        assert row.user_id == await user_id(db, "alice")
        mine = (await page.get("/api/connectors", headers=bearer(tokens["alice"]))).json()
        assert connector(mine, "gmail")["account"]["email"] == google_server.email
        bobs = (await page.get("/api/connectors", headers=bearer(tokens["bob"]))).json()
        assert connector(bobs, "gmail")["connected"] is False


async def test_another_browser_cannot_finish_a_ui_flow(
    settings_for: Callable[..., Settings],
    tokens: dict[str, str],
    db: Database,
    google_server: FakeGoogle,
) -> None:
    async with (
        serve(gmail_live(settings_for, google_server)) as server,
        ui_browser(server) as page,
        ui_browser(server) as elsewhere,
    ):
        callback = await start_oauth(page, google_server, tokens["alice"])

        # The state is alice's and valid, but this browser neither signed in nor started it.
        refused = await elsewhere.get(callback)
        assert "cookie" not in refused.request.headers
        assert "authorization" not in refused.request.headers
        assert refused.status_code == 401
        assert "same browser that pressed Connect" in refused.text
        assert await raw_rows(db) == []

        # The browser that pressed Connect still finishes it: the refusal was the binding.
        assert (await page.get(callback)).status_code == 200
        (row,) = await raw_rows(db)
        assert row.user_id == await user_id(db, "alice")


async def test_a_binding_cookie_only_finishes_its_own_flow(
    settings_for: Callable[..., Settings],
    tokens: dict[str, str],
    db: Database,
    google_server: FakeGoogle,
) -> None:
    async with (
        serve(gmail_live(settings_for, google_server)) as server,
        ui_browser(server) as alices,
        ui_browser(server) as bobs,
    ):
        # Bob starts a flow of his own, so his browser holds a genuine binding cookie...
        await start_oauth(bobs, google_server, tokens["bob"])
        bob_nonce = bobs.cookies[BINDING]
        callback = await start_oauth(alices, google_server, tokens["alice"])
        assert alices.cookies[BINDING] != bob_nonce

        # ...which does not open alice's flow, nor does a made-up one.
        refused = await bobs.get(callback)
        assert refused.request.headers["cookie"] == f"{BINDING}={bob_nonce}"
        assert refused.status_code == 401
        async with httpx.AsyncClient(base_url=server.http, cookies={BINDING: "forged"}) as forger:
            assert (await forger.get(callback)).status_code == 401
        assert await raw_rows(db) == []

        assert (await alices.get(callback)).status_code == 200
        (row,) = await raw_rows(db)
        assert row.user_id == await user_id(db, "alice")


async def test_denied_or_partial_consent_connects_nothing(
    settings_for: Callable[..., Settings],
    tokens: dict[str, str],
    db: Database,
    google_server: FakeGoogle,
) -> None:
    async with (
        serve(gmail_live(settings_for, google_server)) as server,
        browser(server, tokens["alice"]) as alice,
    ):
        google_server.deny = True
        denied = await alice.get(await start_oauth(alice, google_server))
        assert denied.status_code == 400 and "'access_denied'" in denied.text

        google_server.deny = False
        google_server.granted_scopes = (SCOPES[0],)  # the user unticked "send"
        partial = await alice.get(await start_oauth(alice, google_server))
        assert partial.status_code == 400
        assert "did not grant send access" in partial.text
        assert await raw_rows(db) == []


# ----------------------------------------------------------------------------- plaid link


@pytest.fixture
async def plaid_fake() -> AsyncIterator[FakePlaid]:
    from tests.fakes.fake_service import serve_fake

    fake = FakePlaid()
    async with serve_fake(fake):
        yield fake


async def sandbox_public_token(fake: FakePlaid, institution_id: str) -> str:
    async with httpx.AsyncClient() as client:
        created = await client.post(
            f"{fake.base_url}/sandbox/public_token/create",
            json={
                "client_id": fake.client_id,
                "secret": fake.secret,
                "institution_id": institution_id,
                "initial_products": ["transactions"],
            },
        )
    return str(created.json()["public_token"])


async def test_plaid_link_connects_a_bank_end_to_end(
    settings_for: Callable[..., Settings],
    tokens: dict[str, str],
    db: Database,
    plaid_fake: FakePlaid,
) -> None:
    settings = settings_for(
        **with_options(
            connector_modes={"plaid": "live"},
            plaid_client_id=plaid_fake.client_id,
            plaid_secret=plaid_fake.secret,
            plaid_base_url=plaid_fake.base_url,
        )
    )
    async with serve(settings) as server, browser(server, tokens["alice"]) as alice:
        started = await alice.post("/api/connectors/plaid/connect")
        assert started.json()["status"] == "link_token"
        assert started.json()["link_token"].startswith("link-sandbox-")
        (created,) = plaid_fake.calls("/link/token/create")
        user_id = created.json()["user"]["client_user_id"]
        assert created.json()["products"] == ["transactions"]
        assert user_id == (await UserRepository(db).get_by_name("alice")).id  # type: ignore[union-attr]

        public_token = await sandbox_public_token(plaid_fake, "ins_109508")
        linked = await alice.post(
            "/api/connectors/plaid/exchange",
            json={
                "public_token": public_token,
                "institution": {"name": "First Platypus Bank", "institution_id": "ins_109508"},
            },
        )
        assert linked.status_code == 200, linked.text
        assert linked.json()["connector"]["account"] == {
            "mode": "live",
            "institutions": ["First Platypus Bank"],
            "items": 1,
        }

        (row,) = await raw_rows(db)
        (access,) = plaid_fake.items
        assert access.encode() not in bytes(row.credentials)
        assert plaid_fake.secret.encode() not in bytes(row.credentials)

        async with open_client(server.ws_url("chat-live-plaid", token=tokens["alice"])) as ws:
            events = await ws.turn("what are my account balances?")
        (output,) = [e["output"] for e in events if e["type"] == "tool_output"]
        assert output["response_type"] == "plaid_accounts_response"
        assert {a["institution"]["name"] for a in output["response"]} == {"First Platypus Bank"}

        gone = await alice.delete("/api/connectors/plaid")
        assert gone.json()["connector"]["connected"] is False
        assert plaid_fake.removed == [access]
        assert await raw_rows(db) == []


async def test_plaid_exchange_rejects_bad_requests_and_keeps_what_exists(
    settings_for: Callable[..., Settings],
    tokens: dict[str, str],
    db: Database,
    plaid_fake: FakePlaid,
) -> None:
    settings = settings_for(
        **with_options(
            connector_modes={"plaid": "live"},
            plaid_client_id=plaid_fake.client_id,
            plaid_secret=plaid_fake.secret,
            plaid_base_url=plaid_fake.base_url,
        )
    )
    async with serve(settings) as server, browser(server, tokens["alice"]) as alice:
        token = await sandbox_public_token(plaid_fake, "ins_109509")
        assert (
            await alice.post("/api/connectors/plaid/exchange", json={"public_token": token})
        ).status_code == 200
        before = await raw_rows(db)

        cases = [
            (b"not json", "the body must be a JSON object"),
            (b"[1, 2]", "the body must be a JSON object"),
            (b"{}", "public_token: Field required"),
            (b'{"public_token": ""}', "public_token: String should have at least 1 character"),
            (b'{"public_token": "x", "extra": 1}', "extra: Extra inputs are not permitted"),
        ]
        for body, message in cases:
            answer = await alice.post(
                "/api/connectors/plaid/exchange",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            assert answer.status_code == 400, body
            assert answer.json()["error"]["code"] == "invalid_request"
            assert answer.json()["error"]["message"].startswith(message), answer.json()
        reused = await alice.post("/api/connectors/plaid/exchange", json={"public_token": token})
        assert reused.status_code == 400
        assert reused.json()["error"]["message"] == (
            "Plaid did not accept this public token (expired or already used); open Plaid "
            "Link again"
        )
        assert await raw_rows(db) == before  # the linked bank is untouched


async def test_plaid_exchange_in_demo_mode_is_refused(
    settings_for: Callable[..., Settings], tokens: dict[str, str]
) -> None:
    async with serve(settings_for()) as server, browser(server, tokens["alice"]) as alice:
        answer = await alice.post(
            "/api/connectors/plaid/exchange", json={"public_token": "public-sandbox-x"}
        )
    assert answer.status_code == 409  # well formed; demo mode conflicts (was 400)
    assert "plaid runs in demo mode" in answer.json()["error"]["message"]
