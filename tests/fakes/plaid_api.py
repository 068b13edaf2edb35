"""A fake Plaid API (JSON POSTs, ``client_id``/``secret`` in the body), real wire format.

- ``/link/token/create`` → ``{link_token, expiration, request_id}``;
- ``/sandbox/public_token/create`` → ``{public_token}``: what Plaid Link hands the browser
  (the real sandbox endpoint, which tests use in place of the Link UI);
- ``/item/public_token/exchange`` → ``{access_token, item_id}`` (single use);
- ``/accounts/balance/get`` → ``{accounts, item}``;
- ``/transactions/sync`` → ``{added, modified, removed, next_cursor, has_more}``: every item
  keeps a change log, the cursor is an opaque position in it, pages hold ``count`` changes;
- ``/item/remove``.

Errors are ``{error_type, error_code, error_message, display_message, request_id}`` with
HTTP 400 (or 429 for rate limits), e.g. ``INVALID_API_KEYS``, ``INVALID_PUBLIC_TOKEN``,
``ITEM_LOGIN_REQUIRED``, ``TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION``.
"""

from __future__ import annotations

import base64
import itertools
import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.fakes.fake_service import Endpoint, FakeService

INSTITUTIONS = {
    "ins_109508": (
        "First Platypus Bank",
        [
            (
                "plaid-checking",
                "Plaid Checking",
                "Plaid Gold Standard 0% Interest Checking",
                "depository",
                "checking",
                "0000",
                110.0,
                100.0,
                None,
            ),
            (
                "plaid-credit",
                "Plaid Credit Card",
                "Plaid Diamond 12.5% APR Interest Credit Card",
                "credit",
                "credit card",
                "3333",
                410.0,
                None,
                2000.0,
            ),
        ],
    ),
    "ins_109509": (
        "Tartan Bank",
        [
            (
                "tartan-savings",
                "Tartan Savings",
                "Tartan Bank High Yield Savings",
                "depository",
                "savings",
                "1111",
                5320.5,
                5320.5,
                None,
            )
        ],
    ),
}
MERCHANTS = (
    ("Starbucks", "FOOD_AND_DRINK", "FOOD_AND_DRINK_COFFEE", 4.33),
    ("Uber", "TRANSPORTATION", "TRANSPORTATION_TAXIS_AND_RIDE_SHARES", 6.33),
    ("McDonald's", "FOOD_AND_DRINK", "FOOD_AND_DRINK_FAST_FOOD", 12.0),
    ("United Airlines", "TRAVEL", "TRAVEL_FLIGHTS", 500.0),
    ("Touchstone Climbing", "ENTERTAINMENT", "ENTERTAINMENT_SPORTING_EVENTS", 78.5),
    ("KFC", "FOOD_AND_DRINK", "FOOD_AND_DRINK_FAST_FOOD", 500.0),
)


def _error(
    code: str, message: str, error_type: str = "INVALID_INPUT", status: int = 400
) -> JSONResponse:
    return JSONResponse(
        {
            "display_message": None,
            "documentation_url": f"https://plaid.com/docs/errors/#{code.lower()}",
            "error_code": code,
            "error_message": message,
            "error_type": error_type,
            "request_id": "req-fake",
            "suggested_action": None,
        },
        status,
    )


@dataclass
class FakeItem:
    item_id: str
    institution_id: str
    account_ids: dict[str, str]  # our key → Plaid account_id
    log: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (kind, transaction)
    broken: bool = False


@dataclass
class FakePlaid(FakeService):
    client_id: str = "fake-plaid-client-id"
    secret: str = "fake-plaid-secret-0123456789"
    items: dict[str, FakeItem] = field(default_factory=dict)  # by access token
    link_tokens: dict[str, str] = field(default_factory=dict)  # token → client_user_id
    public_tokens: dict[str, str] = field(default_factory=dict)  # token → institution_id
    removed: list[str] = field(default_factory=list)
    mutate_during_pagination: int = 0  # answer the next N non-first pages with the mutation error
    page_cap: int = 500  # changes per /transactions/sync page, whatever ``count`` asks

    def __post_init__(self) -> None:
        FakeService.__init__(self)
        self._ids = itertools.count(1)

    def _new(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids):06d}"

    # ------------------------------------------------------------------ transactions

    def transaction(
        self,
        item: FakeItem,
        account: str,
        day: date,
        name: str,
        amount: float,
        primary: str,
        detailed: str,
        pending: bool = False,
        legacy: list[str] | None = None,
    ) -> dict[str, Any]:
        return {
            "account_id": item.account_ids[account],
            "account_owner": None,
            "amount": amount,
            "authorized_date": day.isoformat(),
            "authorized_datetime": None,
            "category": legacy,
            "category_id": None,
            "check_number": None,
            "counterparties": [],
            "date": day.isoformat(),
            "datetime": None,
            "iso_currency_code": "USD",
            "location": {"city": None, "region": None},
            "logo_url": None,
            "merchant_entity_id": None,
            "merchant_name": name,
            "name": name,
            "payment_channel": "in store",
            "pending": pending,
            "pending_transaction_id": None,
            "personal_finance_category": {
                "primary": primary,
                "detailed": detailed,
                "confidence_level": "VERY_HIGH",
            },
            "transaction_code": None,
            "transaction_id": self._new("txn"),
            "transaction_type": "place",
            "unofficial_currency_code": None,
            "website": None,
        }

    def _history(self, item: FakeItem) -> None:
        rng = random.Random(item.item_id)
        today = datetime.now(UTC).date()
        first = next(iter(item.account_ids))
        for offset in range(0, 90, 3):
            name, primary, detailed, amount = MERCHANTS[rng.randrange(len(MERCHANTS))]
            account = list(item.account_ids)[offset % len(item.account_ids)]
            item.log.append(
                (
                    "added",
                    self.transaction(
                        item,
                        account,
                        today - timedelta(days=offset),
                        name,
                        amount,
                        primary,
                        detailed,
                        pending=offset == 0,
                    ),
                )
            )
        item.log.append(
            (
                "added",
                self.transaction(
                    item,
                    first,
                    today - timedelta(days=14),
                    "ACME PAYROLL",
                    -2500.0,
                    "INCOME",
                    "INCOME_WAGES",
                ),
            )
        )

    def change(self, access_token: str, kind: str, transaction: dict[str, Any]) -> None:
        self.items[access_token].log.append((kind, transaction))

    def live_transactions(self, access_token: str) -> dict[str, dict[str, Any]]:
        """What a correct client holds after syncing everything."""
        current: dict[str, dict[str, Any]] = {}
        for kind, txn in self.items[access_token].log:
            if kind == "removed":
                current.pop(txn["transaction_id"], None)
            else:
                current[txn["transaction_id"]] = txn
        return current

    # ------------------------------------------------------------------ endpoints

    async def _body(self, request: Request) -> dict[str, Any] | Response:
        try:
            body = await request.json()
        except ValueError:
            return _error("INVALID_BODY", "body could not be parsed as JSON")
        if body.get("client_id") != self.client_id or body.get("secret") != self.secret:
            return _error("INVALID_API_KEYS", "invalid client_id or secret provided")
        return body

    def _item(self, body: dict[str, Any]) -> FakeItem | Response:
        item = self.items.get(str(body.get("access_token")))
        if item is None:
            return _error(
                "INVALID_ACCESS_TOKEN",
                "provided access token is in an invalid format or has been revoked",
            )
        if item.broken:
            return _error(
                "ITEM_LOGIN_REQUIRED",
                "the login details of this item have changed "
                "(credentials, MFA, or required user action) and a user login is "
                "required to update this information.",
                "ITEM_ERROR",
            )
        return item

    async def link_token_create(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        user = body.get("user") or {}
        missing = [
            name for name in ("client_name", "country_codes", "language") if not body.get(name)
        ]
        if not user.get("client_user_id"):
            missing.append("user.client_user_id")
        if missing:
            return _error("INVALID_FIELD", f"missing fields: {', '.join(missing)}")
        token = f"link-sandbox-{self._new('tok')}"
        self.link_tokens[token] = str(user["client_user_id"])
        expiration = (datetime.now(UTC) + timedelta(hours=4)).isoformat().replace("+00:00", "Z")
        return JSONResponse(
            {"expiration": expiration, "link_token": token, "request_id": "req-fake"}
        )

    async def sandbox_public_token(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        institution = str(body.get("institution_id"))
        if institution not in INSTITUTIONS:
            return _error("INVALID_INSTITUTION", "invalid institution_id provided")
        token = f"public-sandbox-{self._new('pub')}"
        self.public_tokens[token] = institution
        return JSONResponse({"public_token": token, "request_id": "req-fake"})

    async def exchange(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        institution = self.public_tokens.pop(str(body.get("public_token")), None)
        if institution is None:
            return _error(
                "INVALID_PUBLIC_TOKEN",
                "provided public token is expired. Public "
                "tokens expire 30 minutes after creation at which point they can no "
                "longer be exchanged",
            )
        access = f"access-sandbox-{self._new('acc')}"
        item = FakeItem(
            self._new("item"),
            institution,
            {key: self._new("acct") for key, *_ in INSTITUTIONS[institution][1]},
        )
        self._history(item)
        self.items[access] = item
        return JSONResponse(
            {"access_token": access, "item_id": item.item_id, "request_id": "req-fake"}
        )

    async def balance(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        item = self._item(body)
        if isinstance(item, Response):
            return item
        accounts = []
        for key, name, official, kind, subtype, mask, current, available, limit in INSTITUTIONS[
            item.institution_id
        ][1]:
            accounts.append(
                {
                    "account_id": item.account_ids[key],
                    "balances": {
                        "available": available,
                        "current": current,
                        "iso_currency_code": "USD",
                        "limit": limit,
                        "unofficial_currency_code": None,
                    },
                    "mask": mask,
                    "name": name,
                    "official_name": official,
                    "subtype": subtype,
                    "type": kind,
                }
            )
        return JSONResponse(
            {
                "accounts": accounts,
                "item": {
                    "available_products": ["balance"],
                    "billed_products": ["transactions"],
                    "consent_expiration_time": None,
                    "error": None,
                    "institution_id": item.institution_id,
                    "item_id": item.item_id,
                    "update_type": "background",
                    "webhook": "",
                },
                "request_id": "req-fake",
            }
        )

    async def sync(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        item = self._item(body)
        if isinstance(item, Response):
            return item
        cursor = str(body.get("cursor") or "")
        try:
            position = int(base64.b64decode(cursor).decode().split(":")[1]) if cursor else 0
        except (ValueError, IndexError):
            return _error("INVALID_FIELD", "cursor is invalid")
        count = int(body.get("count") or 100)
        if not 1 <= count <= 500:
            return _error("INVALID_FIELD", "count must be between 1 and 500")
        if position and self.mutate_during_pagination:
            self.mutate_during_pagination -= 1
            return _error(
                "TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION",
                "Underlying "
                "transaction data changed since last page was fetched. Please "
                "restart pagination from last update.",
                "TRANSACTION_ERROR",
            )
        page = item.log[position : position + min(count, self.page_cap)]
        end = position + len(page)
        buckets: dict[str, list[Any]] = {"added": [], "modified": [], "removed": []}
        for kind, txn in page:
            buckets[kind].append(
                {"account_id": txn["account_id"], "transaction_id": txn["transaction_id"]}
                if kind == "removed"
                else txn
            )
        return JSONResponse(
            {
                **buckets,
                "accounts": [],
                "next_cursor": base64.b64encode(f"v1:{end}".encode()).decode(),
                "has_more": end < len(item.log),
                "transactions_update_status": "HISTORICAL_UPDATE_COMPLETE",
                "request_id": "req-fake",
            }
        )

    async def remove(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        if self.items.pop(str(body.get("access_token")), None) is None:
            return _error("INVALID_ACCESS_TOKEN", "provided access token is in an invalid format")
        self.removed.append(str(body.get("access_token")))
        return JSONResponse({"removed": True, "request_id": "req-fake"})

    def routes(self) -> list[tuple[str, Endpoint, list[str]]]:
        return [
            ("/link/token/create", self.link_token_create, ["POST"]),
            ("/sandbox/public_token/create", self.sandbox_public_token, ["POST"]),
            ("/item/public_token/exchange", self.exchange, ["POST"]),
            ("/accounts/balance/get", self.balance, ["POST"]),
            ("/transactions/sync", self.sync, ["POST"]),
            ("/item/remove", self.remove, ["POST"]),
        ]
