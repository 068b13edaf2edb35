"""Live Plaid against the fake Plaid: balances per item, /transactions/sync with the cursor
kept per item, changes and restarts, relinking, rate limits and key errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from app.settings import Settings
from connectors.plaid import client as plaid
from storage.accounts import AccountRepository
from tests.fakes.fake_service import Answer
from tests.fakes.plaid_api import FakePlaid
from tests.support.connectors import invoke, make_context, plaid_settings, with_options

SYNC = "/transactions/sync"


async def link(
    fake: FakePlaid,
    accounts: AccountRepository,
    http: httpx.AsyncClient,
    settings: Settings,
    institution_id: str,
    name: str,
) -> dict[str, Any]:
    """What Plaid Link + our exchange endpoint do, through the real client functions."""
    created = await http.post(
        f"{fake.base_url}/sandbox/public_token/create",
        json={
            "client_id": fake.client_id,
            "secret": fake.secret,
            "institution_id": institution_id,
            "initial_products": ["transactions"],
        },
    )
    public_token = created.json()["public_token"]
    api = plaid.api_for(http, settings)
    credentials = await plaid.add_item(
        api,
        await accounts.get("plaid"),
        public_token,
        {"name": name, "institution_id": institution_id},
    )
    await accounts.connect("plaid", credentials, plaid.plaid_meta(credentials))
    return credentials


async def test_balances_come_from_every_linked_bank(
    plaid_server: FakePlaid, accounts: AccountRepository, http: httpx.AsyncClient
) -> None:
    settings = plaid_settings(plaid_server)
    await link(plaid_server, accounts, http, settings, "ins_109508", "First Platypus Bank")
    await link(plaid_server, accounts, http, settings, "ins_109509", "Tartan Bank")
    output = await invoke("plaid", "get_accounts_at_plaid", make_context(settings, accounts, http))
    assert output["response_type"] == "plaid_accounts_response"
    accounts_found = output["response"]
    assert [(a["institution"]["name"], a["name"]) for a in accounts_found] == [
        ("First Platypus Bank", "Plaid Checking"),
        ("First Platypus Bank", "Plaid Credit Card"),
        ("Tartan Bank", "Tartan Savings"),
    ]
    card = accounts_found[1]
    assert card["type"] == "credit" and card["balances"] == {
        "available": None,
        "current": 410.0,
        "limit": 2000.0,
        "iso_currency_code": "USD",
    }
    meta = {a.connector: a.meta for a in await accounts.list()}["plaid"]
    assert meta == {
        "mode": "live",
        "institutions": ["First Platypus Bank", "Tartan Bank"],
        "items": 2,
    }
    for request in plaid_server.calls("/accounts/balance/get"):
        assert request.json()["client_id"] == plaid_server.client_id


async def test_transactions_sync_pages_and_keeps_the_cursor(
    plaid_server: FakePlaid, accounts: AccountRepository, http: httpx.AsyncClient
) -> None:
    plaid_server.page_cap = 10
    settings = plaid_settings(plaid_server)
    credentials = await link(
        plaid_server, accounts, http, settings, "ins_109508", "First Platypus Bank"
    )
    access = credentials["items"][0]["access_token"]
    context = make_context(settings, accounts, http)
    today = datetime.now(UTC).date()
    output = await invoke(
        "plaid",
        "get_transactions_at_plaid",
        context,
        start_date=(today - timedelta(days=89)).isoformat(),
        end_date=today.isoformat(),
        account_id=None,
    )

    syncs = plaid_server.calls(SYNC)
    assert len(syncs) == 4  # 31 changes in pages of 10
    assert "cursor" not in syncs[0].json() and syncs[0].json()["count"] == 500
    assert all(r.json()["cursor"] for r in syncs[1:])
    by_account = output["response"]
    expected = plaid_server.live_transactions(access)
    assert sum(len(a["transactions"]) for a in by_account.values()) == len(expected)
    checking = next(a for a in by_account.values() if a["account_name"] == "Plaid Checking")
    assert checking["account_official_name"] == "Plaid Gold Standard 0% Interest Checking"
    dates = [t["date"] for t in checking["transactions"]]
    assert dates == sorted(dates, reverse=True) and dates[0].endswith("T00:00:00")
    payroll = next(t for t in checking["transactions"] if t["name"] == "ACME PAYROLL")
    assert payroll == {
        "date": f"{(today - timedelta(days=14)).isoformat()}T00:00:00",
        "amount": -2500.0,
        "name": "ACME PAYROLL",
        "category": ["Income", "Wages"],
        "pending": False,
    }
    assert any(
        t["category"] == ["Food and Drink", "Coffee"]
        for a in by_account.values()
        for t in a["transactions"]
    )

    stored = await accounts.get("plaid")
    assert stored is not None
    item = stored["items"][0]
    assert (
        item["cursor"]
        == json.loads(
            (
                await http.post(
                    f"{plaid_server.base_url}{SYNC}",
                    json={
                        "client_id": plaid_server.client_id,
                        "secret": plaid_server.secret,
                        "access_token": access,
                        "cursor": item["cursor"],
                    },
                )
            ).content
        )["next_cursor"]
    )
    assert len(item["transactions"]) == len(expected)

    # Next time only what changed since the saved cursor is asked for.
    before = len(plaid_server.calls(SYNC))
    await invoke(
        "plaid",
        "get_transactions_at_plaid",
        context,
        start_date=None,
        end_date=None,
        account_id=None,
    )
    after = plaid_server.calls(SYNC)[before:]
    assert len(after) == 1 and after[0].json()["cursor"] == item["cursor"]


async def test_modified_and_removed_transactions_are_applied(
    plaid_server: FakePlaid, accounts: AccountRepository, http: httpx.AsyncClient
) -> None:
    settings = plaid_settings(plaid_server)
    credentials = await link(plaid_server, accounts, http, settings, "ins_109509", "Tartan Bank")
    access = credentials["items"][0]["access_token"]
    context = make_context(settings, accounts, http)
    await invoke(
        "plaid",
        "get_transactions_at_plaid",
        context,
        start_date=None,
        end_date=None,
        account_id=None,
    )

    current = list(plaid_server.live_transactions(access).values())
    pending = next(t for t in current if t["pending"])
    plaid_server.change(access, "modified", {**pending, "pending": False, "amount": 7.77})
    plaid_server.change(access, "removed", current[-1])
    item = plaid_server.items[access]
    plaid_server.change(
        access,
        "added",
        plaid_server.transaction(
            item,
            "tartan-savings",
            datetime.now(UTC).date(),
            "Blue Bottle Coffee",
            5.5,
            "FOOD_AND_DRINK",
            "FOOD_AND_DRINK_COFFEE",
        ),
    )

    output = await invoke(
        "plaid",
        "get_transactions_at_plaid",
        context,
        start_date=None,
        end_date=None,
        account_id=None,
    )
    shown = [t for a in output["response"].values() for t in a["transactions"]]
    expected = plaid_server.live_transactions(access)
    in_window = [
        t
        for t in expected.values()
        if t["date"] >= (datetime.now(UTC).date() - timedelta(days=29)).isoformat()
    ]
    assert sorted((t["name"], t["amount"]) for t in shown) == sorted(
        (t["name"], t["amount"]) for t in in_window
    )
    assert any(t["amount"] == 7.77 and t["pending"] is False for t in shown)
    assert any(t["name"] == "Blue Bottle Coffee" for t in shown)


async def test_a_mutation_during_pagination_restarts_from_the_first_cursor(
    plaid_server: FakePlaid, accounts: AccountRepository, http: httpx.AsyncClient
) -> None:
    plaid_server.page_cap = 10
    plaid_server.mutate_during_pagination = 1
    settings = plaid_settings(plaid_server)
    credentials = await link(
        plaid_server, accounts, http, settings, "ins_109508", "First Platypus Bank"
    )
    context = make_context(settings, accounts, http)
    output = await invoke("plaid", "get_spending_summary_at_plaid", context, days=90)
    assert output["response_type"] == "plaid_spending_summary"
    syncs = plaid_server.calls(SYNC)
    assert "cursor" not in syncs[0].json() and "cursor" not in syncs[2].json()  # restarted
    stored = await accounts.get("plaid")
    assert stored is not None
    expected = plaid_server.live_transactions(credentials["items"][0]["access_token"])
    assert len(stored["items"][0]["transactions"]) == len(expected)  # nothing twice
    summary = output["response"]
    assert summary["total_income"] == 2500.0  # payroll is income, not negative spending
    assert "Income" not in {c["category"] for c in summary["categories"]}
    spent = sum(t["amount"] for t in expected.values() if t["amount"] > 0)
    assert summary["total_spent"] == round(spent, 2)


async def test_a_bank_that_needs_a_new_login_shows_the_connect_card(
    plaid_server: FakePlaid, accounts: AccountRepository, http: httpx.AsyncClient
) -> None:
    settings = plaid_settings(plaid_server)
    credentials = await link(plaid_server, accounts, http, settings, "ins_109509", "Tartan Bank")
    plaid_server.items[credentials["items"][0]["access_token"]].broken = True
    output = await invoke("plaid", "get_accounts_at_plaid", make_context(settings, accounts, http))
    assert output["response_type"] == "connect_plaid_account"
    assert output["response"]["message"].startswith("Tartan Bank needs you to sign in again")


async def test_rate_limits_are_retried_and_bad_keys_explained(
    plaid_server: FakePlaid, accounts: AccountRepository, http: httpx.AsyncClient
) -> None:
    settings = plaid_settings(plaid_server)
    await link(plaid_server, accounts, http, settings, "ins_109509", "Tartan Bank")
    plaid_server.script(
        "/accounts/balance/get",
        Answer(
            429,
            {
                "error_type": "RATE_LIMIT_EXCEEDED",
                "error_code": "ACCOUNTS_BALANCE_GET_LIMIT",
                "error_message": "rate limit exceeded for attempts to access this item",
                "display_message": None,
                "request_id": "req-429",
            },
        ),
    )
    context = make_context(settings, accounts, http)
    output = await invoke("plaid", "get_accounts_at_plaid", context)
    assert output["response_type"] == "plaid_accounts_response"
    assert len(plaid_server.calls("/accounts/balance/get")) == 2

    wrong = plaid_settings(plaid_server, plaid_secret="not-the-right-secret-42")
    refused = await invoke("plaid", "get_accounts_at_plaid", make_context(wrong, accounts, http))
    assert refused["response_type"] == "error"
    assert refused["error_message"].startswith(
        "Error: Plaid rejected the request (HTTP 400): INVALID_API_KEYS: invalid client_id or "
        "secret provided; the server's Plaid keys or environment are wrong"
    )
    assert "not-the-right-secret-42" not in json.dumps(refused)
    assert refused["debug_info"]["error_code"] == "INVALID_API_KEYS"


async def test_not_connected_shows_the_connect_bank_card(
    plaid_server: FakePlaid, accounts: AccountRepository, http: httpx.AsyncClient
) -> None:
    context = make_context(plaid_settings(plaid_server), accounts, http)
    for tool in (
        "get_accounts_at_plaid",
        "get_transactions_at_plaid",
        "get_spending_summary_at_plaid",
    ):
        output = await invoke("plaid", tool, context)
        assert output["response_type"] == "connect_plaid_account", tool
    assert plaid_server.requests == []


def test_the_environment_picks_plaid_s_host() -> None:
    assert plaid.base_url(Settings()) == "https://sandbox.plaid.com"
    assert (
        plaid.base_url(Settings(**with_options(plaid_environment="production")))
        == "https://production.plaid.com"
    )
    assert (
        plaid.base_url(
            Settings(
                **with_options(
                    plaid_environment="development", plaid_base_url="http://127.0.0.1:9/"
                )
            )
        )
        == "http://127.0.0.1:9"
    )
