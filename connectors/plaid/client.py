"""The live Plaid backend and Plaid Link: Plaid's REST API (JSON POSTs, keys in the body).

- Link: ``/link/token/create`` → the browser runs Plaid Link → ``/item/public_token/exchange``
  gives an item's ``access_token``. A user may link several banks; each is one item.
- Balances: ``/accounts/balance/get`` per item.
- Transactions: ``/transactions/sync`` per item. Plaid sends only what changed since the
  item's cursor, so the cursor *and* the transactions seen so far are kept per item in the
  user's encrypted credentials, and every sync applies ``added``/``modified``/``removed``.

The environment (sandbox, development, production) picks Plaid's host;
``SWITCHBOARD_PLAID_BASE_URL`` overrides it (a proxy, or the tests' fake server).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from connectors.accounts import save_credentials
from connectors.context import ChatContext
from connectors.plaid.responses import ConnectPlaidAccountResponse
from connectors.plaid.settings import PlaidSettings
from connectors.service_http import ServiceError, ServiceHttp, read_json, shared_client
from connectors.settings import ConnectorSettings
from connectors.tooling import NeedsAccount

CONNECTOR = "plaid"
SERVICE = "Plaid"
HOSTS = {
    "sandbox": "https://sandbox.plaid.com",
    "development": "https://development.plaid.com",
    "production": "https://production.plaid.com",
}
HISTORY_DAYS = 90  # asked of Plaid at link time; what the tools use
KEEP_DAYS = 730  # transactions older than this are dropped from the stored state
SYNC_PAGE = 500  # Plaid's maximum count per /transactions/sync call
MAX_SYNC_PAGES = 20
# Errors that only the user can fix, by linking the bank again.
RELINK_CODES = frozenset(
    {
        "ITEM_LOGIN_REQUIRED",
        "INVALID_ACCESS_TOKEN",
        "ITEM_NOT_FOUND",
        "ACCESS_NOT_GRANTED",
        "ITEM_LOCKED",
        "USER_PERMISSION_REVOKED",
    }
)
CONFIG_CODES = frozenset(
    {
        "INVALID_API_KEYS",
        "UNAUTHORIZED_ENVIRONMENT",
        "INVALID_PRODUCT",
        "INSTITUTION_NOT_ENABLED_IN_ENVIRONMENT",
    }
)
PRIMARY_NAMES = {
    "INCOME": "Income",
    "TRANSFER_IN": "Transfer",
    "TRANSFER_OUT": "Transfer",
    "LOAN_PAYMENTS": "Payment",
    "BANK_FEES": "Bank Fees",
    "ENTERTAINMENT": "Recreation",
    "FOOD_AND_DRINK": "Food and Drink",
    "GENERAL_MERCHANDISE": "Shops",
    "HOME_IMPROVEMENT": "Home Improvement",
    "MEDICAL": "Healthcare",
    "PERSONAL_CARE": "Personal Care",
    "GENERAL_SERVICES": "Service",
    "GOVERNMENT_AND_NON_PROFIT": "Government and Non-Profit",
    "TRANSPORTATION": "Travel",
    "TRAVEL": "Travel",
    "RENT_AND_UTILITIES": "Rent and Utilities",
}

Persist = Callable[[dict[str, Any]], Awaitable[Any]]


class PlaidError(ServiceError):
    def __init__(
        self,
        message: str,
        *,
        error_code: str,
        status: int | None,
        debug_info: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, status=status, debug_info=debug_info)
        self.error_code = error_code


def base_url(settings: ConnectorSettings) -> str:
    own = PlaidSettings.read(settings)
    return own.plaid_base_url or HOSTS[own.plaid_environment]


class PlaidApi:
    """Plaid's endpoints used here. Every call is a JSON POST with the client id and secret."""

    def __init__(self, http: ServiceHttp, settings: ConnectorSettings) -> None:
        self._http = http
        self._base = base_url(settings)
        own = PlaidSettings.read(settings)
        secret = own.plaid_secret
        self._keys = {
            "client_id": own.plaid_client_id or "",
            "secret": secret.get_secret_value() if secret else "",
        }

    async def post(
        self, path: str, body: dict[str, Any], *, idempotent: bool = True
    ) -> dict[str, Any]:
        response = await self._http.send(
            "POST", f"{self._base}{path}", json={**self._keys, **body}, idempotent=idempotent
        )
        data = read_json(response, SERVICE) if response.content else {}
        if response.is_success and isinstance(data, dict):
            return data
        raise self._error(response, data if isinstance(data, dict) else {})

    def _error(self, response: Any, data: dict[str, Any]) -> PlaidError:
        code = str(data.get("error_code") or "")
        said = data.get("display_message") or data.get("error_message") or code or None
        advice = None
        if code in CONFIG_CODES:
            advice = (
                "the server's Plaid keys or environment are wrong; the administrator "
                "must check SWITCHBOARD_PLAID_CLIENT_ID, SWITCHBOARD_PLAID_SECRET and "
                "SWITCHBOARD_PLAID_ENVIRONMENT"
            )
        base = self._http.status_error(
            response, f"{code}: {said}" if code and said != code else said, advice
        )
        debug = dict(base.debug_info or {})
        debug.update(
            {
                "error_code": code,
                "error_type": data.get("error_type"),
                "request_id": data.get("request_id"),
            }
        )
        return PlaidError(str(base), error_code=code, status=response.status_code, debug_info=debug)

    async def create_link_token(self, user_id: str, client_name: str) -> dict[str, Any]:
        return await self.post(
            "/link/token/create",
            {
                "client_name": client_name,
                "user": {"client_user_id": user_id},
                "products": ["transactions"],
                "country_codes": ["US"],
                "language": "en",
                "transactions": {"days_requested": HISTORY_DAYS},
            },
            idempotent=False,
        )

    async def exchange_public_token(self, public_token: str) -> dict[str, Any]:
        return await self.post(
            "/item/public_token/exchange", {"public_token": public_token}, idempotent=False
        )

    async def balances(self, access_token: str) -> dict[str, Any]:
        return await self.post("/accounts/balance/get", {"access_token": access_token})

    async def sync(self, access_token: str, cursor: str) -> dict[str, Any]:
        body: dict[str, Any] = {"access_token": access_token, "count": SYNC_PAGE}
        if cursor:
            body["cursor"] = cursor
        return await self.post("/transactions/sync", body)

    async def remove_item(self, access_token: str) -> bool:
        try:
            await self.post("/item/remove", {"access_token": access_token}, idempotent=False)
        except ServiceError:
            return False
        return True


# ----------------------------------------------------------------------------- shapes


def _title(code: str) -> str:
    return " ".join(
        word.capitalize() if word not in {"AND", "OR", "OF"} else word.lower()
        for word in code.split("_")
    )


def category_of(transaction: dict[str, Any]) -> list[str]:
    """The legacy ``category`` list, or one built from ``personal_finance_category``."""
    legacy = transaction.get("category")
    if isinstance(legacy, list) and legacy and all(isinstance(c, str) for c in legacy):
        return list(legacy)
    finance = transaction.get("personal_finance_category")
    if not isinstance(finance, dict) or not finance.get("primary"):
        return ["Other"]
    primary = str(finance["primary"])
    names = [PRIMARY_NAMES.get(primary, _title(primary))]
    detailed = str(finance.get("detailed") or "")
    if detailed.startswith(primary + "_"):
        names.append(_title(detailed[len(primary) + 1 :]))
    return names


def compact_transaction(transaction: dict[str, Any]) -> dict[str, Any]:
    """What is kept per transaction: the seed-000 fields and the account."""
    amount = transaction.get("amount")
    return {
        "account_id": str(transaction.get("account_id", "")),
        "date": str(transaction.get("date", ""))[:10],
        "amount": float(amount) if isinstance(amount, int | float) else 0.0,
        "name": str(transaction.get("name") or transaction.get("merchant_name") or "Unknown"),
        "category": category_of(transaction),
        "pending": bool(transaction.get("pending")),
    }


def account_shape(account: dict[str, Any], institution: dict[str, Any]) -> dict[str, Any]:
    balances = account.get("balances") or {}
    return {
        "account_id": account.get("account_id"),
        "name": account.get("name"),
        "official_name": account.get("official_name"),
        "type": account.get("type"),
        "subtype": account.get("subtype"),
        "mask": account.get("mask"),
        "balances": {
            "available": balances.get("available"),
            "current": balances.get("current"),
            "limit": balances.get("limit"),
            "iso_currency_code": balances.get("iso_currency_code")
            or balances.get("unofficial_currency_code"),
        },
        "institution": {
            "institution_id": institution.get("institution_id"),
            "name": institution.get("name") or "Bank",
        },
    }


def apply_sync(
    store: dict[str, dict[str, Any]],
    added: list[Any],
    modified: list[Any],
    removed: list[Any],
    today: date,
) -> None:
    """Apply one sync's changes to an item's transactions (by ``transaction_id``)."""
    for transaction in [*added, *modified]:
        if isinstance(transaction, dict) and transaction.get("transaction_id"):
            store[str(transaction["transaction_id"])] = compact_transaction(transaction)
    for gone in removed:
        if isinstance(gone, dict):
            store.pop(str(gone.get("transaction_id")), None)
    cutoff = (today - timedelta(days=KEEP_DAYS)).isoformat()
    for transaction_id in [key for key, txn in store.items() if txn["date"] < cutoff]:
        del store[transaction_id]


def plaid_meta(credentials: dict[str, Any]) -> dict[str, Any]:
    """What GET /api/connectors shows: the linked banks, never a token."""
    items = credentials.get("items") or []
    return {
        "mode": "live",
        "institutions": [
            str((item.get("institution") or {}).get("name") or "Bank") for item in items
        ],
        "items": len(items),
    }


# ----------------------------------------------------------------------------- backend


class PlaidClient:
    """``PlaidBackend`` over every item the user linked."""

    def __init__(
        self,
        api: PlaidApi,
        credentials: dict[str, Any],
        persist: Persist,
        today: Callable[[], date] = lambda: datetime.now(UTC).date(),
    ) -> None:
        self._api = api
        self.credentials = credentials
        self._persist = persist
        self._today = today

    @property
    def _items(self) -> list[dict[str, Any]]:
        items = self.credentials.get("items")
        if not items:
            raise NeedsAccount(ConnectPlaidAccountResponse())
        return list(items)

    async def _per_item(self, call: Callable[[dict[str, Any]], Awaitable[Any]]) -> list[Any]:
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._guard(item, call)) for item in self._items]
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
        return [task.result() for task in tasks]

    async def _guard(
        self, item: dict[str, Any], call: Callable[[dict[str, Any]], Awaitable[Any]]
    ) -> Any:
        try:
            return await call(item)
        except PlaidError as exc:
            if exc.error_code in RELINK_CODES:
                bank = (item.get("institution") or {}).get("name") or "your bank"
                raise NeedsAccount(
                    ConnectPlaidAccountResponse(
                        message=(
                            f"{bank} needs you to sign in again before I can read it. Connect the "
                            "bank again."
                        )
                    )
                ) from None
            raise

    async def accounts(self) -> list[dict[str, Any]]:
        async def balances(item: dict[str, Any]) -> list[dict[str, Any]]:
            data = await self._api.balances(str(item["access_token"]))
            institution = item.get("institution") or {}
            return [
                account_shape(account, institution)
                for account in data.get("accounts") or []
                if isinstance(account, dict)
            ]

        return [account for found in await self._per_item(balances) for account in found]

    async def transactions(self, start: date, end: date) -> dict[str, list[dict[str, Any]]]:
        changed = await self._per_item(self._sync)
        if any(changed):
            await self._persist(self.credentials)
        out: dict[str, list[dict[str, Any]]] = {}
        low, high = start.isoformat(), end.isoformat()
        for item in self._items:
            for txn in (item.get("transactions") or {}).values():
                if low <= txn["date"] <= high:
                    out.setdefault(txn["account_id"], []).append(
                        {
                            "date": f"{txn['date']}T00:00:00",
                            "amount": txn["amount"],
                            "name": txn["name"],
                            "category": list(txn["category"]),
                            "pending": txn["pending"],
                        }
                    )
        for transactions in out.values():
            transactions.sort(key=lambda txn: txn["date"], reverse=True)
        return out

    async def _sync(self, item: dict[str, Any]) -> bool:
        """Bring the item's transactions up to date; True when anything changed."""
        first = str(item.get("cursor") or "")
        cursor = first
        added: list[Any] = []
        modified: list[Any] = []
        removed: list[Any] = []
        for _page in range(MAX_SYNC_PAGES):
            try:
                data = await self._api.sync(str(item["access_token"]), cursor)
            except PlaidError as exc:
                if exc.error_code != "TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION":
                    raise
                # Plaid's rule: restart the whole pagination from the first cursor.
                cursor, added, modified, removed = first, [], [], []
                continue
            added += data.get("added") or []
            modified += data.get("modified") or []
            removed += data.get("removed") or []
            cursor = str(data.get("next_cursor") or cursor)
            if not data.get("has_more"):
                break
        store: dict[str, dict[str, Any]] = item.setdefault("transactions", {})
        apply_sync(store, added, modified, removed, self._today())
        item["cursor"] = cursor
        return bool(added or modified or removed or cursor != first)


# ----------------------------------------------------------------------------- linking


def api_for(client: Any, settings: ConnectorSettings) -> PlaidApi:
    secret = PlaidSettings.read(settings).plaid_secret
    http = ServiceHttp.for_settings(
        shared_client(client, SERVICE),
        SERVICE,
        settings,
        (secret.get_secret_value() if secret else None,),
    )
    return PlaidApi(http, settings)


async def add_item(
    api: PlaidApi,
    credentials: dict[str, Any] | None,
    public_token: str,
    institution: dict[str, Any],
) -> dict[str, Any]:
    """Exchange Link's public token and add the item (replacing one of the same bank)."""
    exchanged = await api.exchange_public_token(public_token)
    item = {
        "item_id": str(exchanged["item_id"]),
        "access_token": str(exchanged["access_token"]),
        "institution": institution,
        "cursor": "",
        "transactions": {},
    }
    items = [
        old
        for old in (credentials or {}).get("items") or []
        if old.get("item_id") != item["item_id"]
    ]
    same_bank = [
        old
        for old in items
        if institution.get("institution_id")
        and (old.get("institution") or {}).get("institution_id") == institution["institution_id"]
    ]
    for old in same_bank:  # relinked after ITEM_LOGIN_REQUIRED: the old item is dead
        await api.remove_item(str(old["access_token"]))
    items = [old for old in items if old not in same_bank]
    return {"mode": "live", "items": [*items, item]}


async def remove_items(api: PlaidApi, credentials: dict[str, Any]) -> None:
    """Best effort: tell Plaid to forget every item (the credentials are deleted anyway)."""
    for item in credentials.get("items") or []:
        if item.get("access_token"):
            await api.remove_item(str(item["access_token"]))


def live_backend(context: ChatContext, credentials: dict[str, Any]) -> PlaidClient:
    accounts = context.accounts
    assert accounts is not None  # live credentials came from it
    tokens = [str(item.get("access_token")) for item in credentials.get("items") or []]
    secret = PlaidSettings.read(context.settings).plaid_secret
    http = ServiceHttp.for_settings(
        shared_client(context.http, SERVICE),
        SERVICE,
        context.settings,
        (secret.get_secret_value() if secret else None, *tokens),
    )

    async def persist(new: dict[str, Any]) -> None:
        await save_credentials(accounts, CONNECTOR, new)

    return PlaidClient(PlaidApi(http, context.settings), credentials, persist)
