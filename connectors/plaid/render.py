"""What the model reads for the Plaid connector's results (connectors.rendering). Pure.

Accounts and the spending summary hold what the user's own bank wrote; transactions do
not: a merchant's name or a transfer's memo is written by whoever took or sent the money.
"""

from __future__ import annotations

import re
from typing import Any

from connectors.rendering import Part, Rendering, Unreadable, numbered, register_type
from connectors.text import SNIPPET_CHARS, dumps, money, one_line, plural


def _account_list(payload: object) -> list[Any]:
    """Plaid accounts from a list of accounts, of balance responses, or one response."""
    if isinstance(payload, dict):
        payload = [payload]
    if not isinstance(payload, list):
        raise Unreadable
    accounts: list[Any] = []
    for entry in payload:
        if isinstance(entry, dict) and isinstance(entry.get("accounts"), list):
            accounts.extend(entry["accounts"])
        else:
            accounts.append(entry)
    return accounts


def render_accounts(data: dict[str, Any]) -> Rendering:
    return numbered(
        data,
        _account_list(data.get("response")),
        "account",
        "No bank accounts found.",
        _account_line,
    )


def _account_line(account: dict[str, Any]) -> str:
    name = one_line(account.get("name") or account.get("official_name"), 80) or "Account"
    kind = "/".join(
        one_line(account.get(key)) for key in ("type", "subtype") if one_line(account.get(key))
    )
    mask = one_line(account.get("mask"))
    detail = " ".join(part for part in (kind, f"••{mask}" if mask else "") if part)
    line = name + (f" ({detail})" if detail else "")
    balances = account.get("balances")
    if isinstance(balances, dict):
        currency = balances.get("iso_currency_code") or balances.get("unofficial_currency_code")
        amounts = [
            f"{key} {money(balances[key], currency)}"
            for key in ("current", "available", "limit")
            if balances.get(key) is not None
        ]
        line += ": " + (", ".join(amounts) if amounts else "balance unknown")
    if account.get("account_id") not in (None, ""):
        line += f" id={one_line(account.get('account_id'))}"
    return line


def _transaction_line(txn: object) -> str:
    if not isinstance(txn, dict):
        return f"  - {one_line(dumps(txn), SNIPPET_CHARS)}"
    date = one_line(txn.get("date") or txn.get("authorized_date"))
    if re.match(r"\d{4}-\d{2}-\d{2}T00:00:00", date):
        date = date[:10]
    name = one_line(txn.get("name") or txn.get("merchant_name"), 100) or "(no description)"
    currency = txn.get("iso_currency_code") or txn.get("unofficial_currency_code")
    line = "  - " + " ".join(
        part for part in (date, name, money(txn.get("amount"), currency)) if part
    )
    category = txn.get("category")
    if isinstance(category, list) and category:
        line += f" [{' > '.join(one_line(c) for c in category)}]"
    elif isinstance(txn.get("personal_finance_category"), dict):
        primary = one_line(txn["personal_finance_category"].get("primary"))
        if primary:
            line += f" [{primary}]"
    if txn.get("pending"):
        line += " (pending)"
    return line


def render_transactions(data: dict[str, Any]) -> Rendering:
    payload = data.get("response")
    if isinstance(payload, list):
        payload = {"": {"transactions": payload}}
    if not isinstance(payload, dict):
        raise Unreadable
    if not payload:
        return "No transactions found."
    lines: list[str] = []
    for account_id, account in payload.items():
        if not isinstance(account, dict) or not isinstance(account.get("transactions"), list):
            raise Unreadable
        txns = account["transactions"]
        name = one_line(account.get("account_name") or account.get("account_official_name"), 80)
        title = name or "Transactions"
        if account_id:
            title += f" (id={account_id})"
        lines.append(f"{title}: {plural(len(txns), 'transaction')}")
        lines.extend(_transaction_line(txn) for txn in txns)
    return [Part("\n".join(lines), "transactions")]


register_type("plaid_accounts_response", render=render_accounts, source=None)
register_type("plaid_transactions_response", render=render_transactions, source="transactions")
register_type("plaid_spending_summary", source=None)
