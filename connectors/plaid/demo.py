"""The Plaid backend interface and its demo implementation (two banks, 90 days of history).

The live client (``client.py``) implements ``PlaidBackend`` over Plaid's
``/accounts/balance/get`` and ``/transactions/sync``; the tools only talk to this interface.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Protocol

from connectors.plaid import demo_bank as banking

Account = dict[str, Any]
Transaction = dict[str, Any]


class PlaidBackend(Protocol):
    async def accounts(self) -> list[Account]: ...

    async def transactions(self, start: date, end: date) -> dict[str, list[Transaction]]:
        """Transactions by account_id, newest first, dates in [start, end]."""
        ...


class DemoPlaidBackend:
    def __init__(self, today: date) -> None:
        self._today = today

    async def accounts(self) -> list[Account]:
        return banking.accounts()

    async def transactions(self, start: date, end: date) -> dict[str, list[Transaction]]:
        days = (self._today - start).days + 1
        out: dict[str, list[Transaction]] = {}
        for key in banking.account_keys():
            out[banking.account_id(key)] = [
                txn
                for txn in banking.transactions(key, self._today, days)
                if start.isoformat() <= txn["date"][:10] <= end.isoformat()
            ]
        return out
