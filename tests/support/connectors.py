"""Helpers of the live-connector tests: the built-in connectors, a tool's chat context and
call, and settings that point each connector at its fake service (``tests/fakes/``)."""

from __future__ import annotations

from typing import Any

import httpx

from app.settings import Settings
from connectors.context import ChatContext, DemoStore
from connectors.registry import Connector, load_connectors
from connectors.testing import call_tool
from storage.accounts import AccountRepository
from tests.fakes.gmail_api import FakeGoogle
from tests.fakes.google_search import FakeGoogleSearch
from tests.fakes.plaid_api import FakePlaid
from tests.fakes.searxng import FakeSearxng
from tests.fakes.yelp_api import FakeYelp

BUILTINS = {connector.name: connector for connector in load_connectors(Settings())}

# Small limits so retries and timeouts are exercised quickly.
FAST = {"http_timeout": 2.0, "http_retries": 2, "http_retry_max_wait": 5.0}


def make_context(
    settings: Settings, accounts: AccountRepository | None, http: httpx.AsyncClient | None
) -> ChatContext:
    user_id = accounts.user_id if accounts is not None else "nobody"
    return ChatContext(
        user_id=user_id,
        chat_id="chat-1",
        turn_id="turn-1",
        settings=settings,
        demo=DemoStore().for_user(user_id),
        accounts=accounts,
        http=http,
    )


async def invoke(
    connector: str, tool: str, context: ChatContext, **arguments: Any
) -> dict[str, Any]:
    return await call_tool(BUILTINS[connector], tool, context, arguments)


def builtin(name: str) -> Connector:
    return BUILTINS[name]


def builtin_options(**values: str) -> dict[str, dict[str, str]]:
    """``SWITCHBOARD_CONNECTOR_OPTIONS`` for the built-in connectors' options by name
    (``google_client_id=…``: what ``SWITCHBOARD_GOOGLE_CLIENT_ID`` sets)."""
    options: dict[str, dict[str, str]] = {}
    for connector in BUILTINS.values():
        assert connector.options is not None
        for name in connector.options.model_fields:
            if name in values:
                options.setdefault(connector.name, {})[name] = values.pop(name)
    assert not values, f"not an option of a built-in connector: {sorted(values)}"
    return options


def with_options(**values: Any) -> dict[str, Any]:
    """Settings overrides with the built-in connectors' options moved into
    ``connector_options`` (the other values are left as they are)."""
    names = {
        name
        for connector in BUILTINS.values()
        if connector.options
        for name in connector.options.model_fields
    }
    own = {key: values.pop(key) for key in list(values) if key in names}
    return {**values, "connector_options": builtin_options(**own)}


def gmail_settings(fake: FakeGoogle, **overrides: Any) -> Settings:
    return Settings(
        **with_options(
            **{
                "connector_modes": {"gmail": "live"},
                "google_client_id": fake.client_id,
                "google_client_secret": fake.client_secret,
                "google_auth_url": f"{fake.base_url}/o/oauth2/v2/auth",
                "google_oauth_base_url": fake.base_url,
                "gmail_base_url": fake.base_url,
                **FAST,
                **overrides,
            }
        )
    )


def plaid_settings(fake: FakePlaid, **overrides: Any) -> Settings:
    return Settings(
        **with_options(
            **{
                "connector_modes": {"plaid": "live"},
                "plaid_client_id": fake.client_id,
                "plaid_secret": fake.secret,
                "plaid_base_url": fake.base_url,
                **FAST,
                **overrides,
            }
        )
    )


def yelp_settings(fake: FakeYelp, **overrides: Any) -> Settings:
    return Settings(
        **with_options(
            **{
                "connector_modes": {"yelp": "live"},
                "yelp_api_key": fake.api_key,
                "yelp_base_url": fake.base_url,
                **FAST,
                **overrides,
            }
        )
    )


def google_search_settings(fake: FakeGoogleSearch, **overrides: Any) -> Settings:
    return Settings(
        **with_options(
            **{
                "connector_modes": {"search": "live"},
                "search_provider": "google",
                "google_search_api_key": fake.api_key,
                "google_search_engine_id": fake.engine_id,
                "google_search_base_url": fake.base_url,
                **FAST,
                **overrides,
            }
        )
    )


def searxng_settings(fake: FakeSearxng, **overrides: Any) -> Settings:
    return Settings(
        **with_options(
            **{
                "connector_modes": {"search": "live"},
                "search_provider": "searxng",
                "searxng_base_url": fake.base_url,
                **FAST,
                **overrides,
            }
        )
    )
