"""The contract kit (connectors.testing) over the four built-in connectors."""

from __future__ import annotations

from typing import Any, ClassVar

from connectors.demo_ids import stable_id
from connectors.gmail import connector as gmail
from connectors.plaid import connector as plaid
from connectors.registry import Connector
from connectors.search import connector as search
from connectors.testing import ConnectorContract
from connectors.yelp import connector as yelp

FIRST_THREAD = stable_id("thread", 0)  # the demo mailbox's first message id


class TestGmailContract(ConnectorContract):
    connector: ClassVar[Connector] = gmail
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {
        "google_email_inbox": {"max_results": 5},
        "google_email_search": {"query": "budget", "max_results": 5},
        "google_email_search_from_email": {"email": "alice.chen@example.com"},
        "read_google_email": {"message_id": FIRST_THREAD},
        "send_google_email": {
            "to": ["bob@example.com"],
            "subject": "Hello",
            "body": "Hi Bob",
            "cc": None,
            "bcc": None,
        },
        "reply_to_google_email": {"message_id": FIRST_THREAD, "body": "Thanks!"},
    }
    live_settings: ClassVar[dict[str, Any] | None] = {
        "connector_options": {
            "gmail": {
                "google_client_id": "contract-client-id",
                "google_client_secret": "contract-client-secret-value",
                "google_oauth_base_url": "{base_url}",
                "gmail_base_url": "{base_url}",
            }
        }
    }
    live_credentials: ClassVar[dict[str, Any] | None] = {
        "access_token": "ya29.contract-access-token",
        "refresh_token": "1//contract-refresh",
        "expires_at": 4_102_444_800.0,
        "email": "me@example.com",
    }


class TestPlaidContract(ConnectorContract):
    connector: ClassVar[Connector] = plaid
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {
        "get_accounts_at_plaid": {},
        "get_transactions_at_plaid": {"start_date": None, "end_date": None, "account_id": None},
        "get_spending_summary_at_plaid": {"days": 30},
    }
    live_settings: ClassVar[dict[str, Any] | None] = {
        "connector_options": {
            "plaid": {
                "plaid_client_id": "contract-plaid-client",
                "plaid_secret": "contract-plaid-secret",
                "plaid_base_url": "{base_url}",
            }
        }
    }
    live_credentials: ClassVar[dict[str, Any] | None] = {
        "items": [
            {
                "item_id": "item-contract",
                "access_token": "access-sandbox-contract-token",
                "institution": {"name": "Contract Bank", "institution_id": "ins_1"},
                "cursor": "",
                "transactions": {},
            }
        ]
    }


class TestYelpContract(ConnectorContract):
    connector: ClassVar[Connector] = yelp
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {
        "resolve_user_location": {"hint": None},
        "search_businesses_at_yelp": {
            "term": "sushi",
            "location": "Boston, MA",
            "latitude": None,
            "longitude": None,
            "price": None,
            "open_now": False,
            "sort_by": "best_match",
            "limit": 5,
        },
        "get_business_reviews_at_yelp": {"business_id": "umi-sushi-bar-boston"},
    }
    live_settings: ClassVar[dict[str, Any] | None] = {
        "connector_options": {
            "yelp": {
                "yelp_api_key": "contract-yelp-api-key",
                "yelp_base_url": "{base_url}",
                "yelp_default_location": "Boston, MA",
            }
        }
    }


class TestGoogleSearchContract(ConnectorContract):
    connector: ClassVar[Connector] = search
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {
        "search_google": {"query": "python asyncio", "num_results": 3}
    }
    live_settings: ClassVar[dict[str, Any] | None] = {
        "connector_options": {
            "search": {
                "search_provider": "google",
                "google_search_api_key": "contract-google-key",
                "google_search_engine_id": "contract-cx",
                "google_search_base_url": "{base_url}",
            }
        }
    }


class TestSearxngContract(TestGoogleSearchContract):
    live_settings: ClassVar[dict[str, Any] | None] = {
        "connector_options": {
            "search": {
                "search_provider": "searxng",
                "searxng_base_url": "{base_url}",
            }
        }
    }
