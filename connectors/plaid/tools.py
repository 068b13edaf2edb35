"""Plaid tools: balances, transactions and a spending summary. Each returns a ToolResponse."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from agents import RunContextWrapper

from connectors.accounts import require_connection
from connectors.context import ChatContext
from connectors.plaid.client import live_backend
from connectors.plaid.demo import DemoPlaidBackend, PlaidBackend
from connectors.plaid.demo_bank import HISTORY_DAYS
from connectors.plaid.responses import ConnectPlaidAccountResponse
from connectors.responses import ToolResponse
from connectors.tooling import ToolError, connector_tool

AGENT_NAME = "Plaid"
CONNECTOR = "plaid"
TIMEOUT = 30.0  # Plaid's transactions endpoint can take several seconds
DEFAULT_DAYS = 30
MAX_TRANSACTIONS_PER_ACCOUNT = 250  # keeps one tool result readable for the model
# Money moving between the user's own accounts or paying a card is not spending.
NOT_SPENDING = frozenset({"Transfer", "Payment", "Interest", "Income"})


def today() -> date:
    return datetime.now(UTC).date()


async def backend(ctx: RunContextWrapper[ChatContext]) -> PlaidBackend:
    """The user's linked banks through Plaid, or the demo banks; the connect card if none."""
    credentials = await require_connection(ctx.context, CONNECTOR, ConnectPlaidAccountResponse())
    if credentials is not None:
        return live_backend(ctx.context, credentials)
    return DemoPlaidBackend(today())


def _parse_date(name: str, value: str | None, default: date) -> date:
    if value is None or not value.strip():
        return default
    try:
        return date.fromisoformat(value.strip()[:10])
    except ValueError:
        raise ToolError(f"{name} {value!r} is not a date; use YYYY-MM-DD") from None


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def get_accounts_at_plaid(ctx: RunContextWrapper[ChatContext]) -> ToolResponse:
    """List the user's connected bank accounts with their current and available balances."""
    service = await backend(ctx)
    accounts = await service.accounts()
    return ToolResponse(
        "plaid_accounts_response", AGENT_NAME, "Getting Account Information", accounts
    )


def mentions(transaction: dict[str, Any], query: str) -> bool:
    """Whether the merchant name or a category level contains ``query`` (or its singular:
    "restaurants" finds "Restaurants", "groceries" finds "Supermarkets and Groceries")."""
    wanted = query.casefold()
    forms = {wanted, wanted[:-1]} if len(wanted) > 3 and wanted.endswith("s") else {wanted}
    names = [str(transaction.get("name") or ""), *map(str, transaction.get("category") or ())]
    return any(form in name.casefold() for form in forms for name in names)


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def get_transactions_at_plaid(
    ctx: RunContextWrapper[ChatContext],
    start_date: str | None = None,
    end_date: str | None = None,
    account_id: str | None = None,
    query: str | None = None,
) -> ToolResponse:
    """List transactions by account, newest first. Positive amounts are money spent.

    Args:
        start_date: First day, YYYY-MM-DD (default: 30 days before end_date).
        end_date: Last day, YYYY-MM-DD (default: today).
        account_id: Only this account (ids come from get_accounts_at_plaid).
        query: Only transactions whose merchant or category mentions this, e.g. "coffee",
            "groceries" or "Uber" (default: all).
    """
    now = today()
    end = min(_parse_date("end_date", end_date, now), now)
    start = _parse_date("start_date", start_date, end - timedelta(days=DEFAULT_DAYS - 1))
    if start > end:
        raise ToolError(f"start_date {start} is after end_date {end}; swap them")
    start = max(start, now - timedelta(days=HISTORY_DAYS - 1))  # history the bank shares
    service = await backend(ctx)
    accounts = {account["account_id"]: account for account in await service.accounts()}
    if account_id is not None and account_id not in accounts:
        raise ToolError(
            f"unknown account_id {account_id!r}; call get_accounts_at_plaid for the ids"
        )
    by_account = await service.transactions(start, end)
    wanted = (query or "").strip()
    if wanted:
        by_account = {
            key: [txn for txn in txns if mentions(txn, wanted)] for key, txns in by_account.items()
        }
    result = {
        key: {
            "account_name": accounts[key]["name"],
            "account_official_name": accounts[key]["official_name"],
            "transactions": txns[:MAX_TRANSACTIONS_PER_ACCOUNT],
        }
        for key, txns in by_account.items()
        if key in accounts
        and (account_id is None or key == account_id)
        and (txns or (account_id is not None and not wanted))
    }
    return ToolResponse("plaid_transactions_response", AGENT_NAME, "Getting Transactions", result)


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def get_spending_summary_at_plaid(
    ctx: RunContextWrapper[ChatContext], days: int = 30
) -> ToolResponse:
    """Total spending by category over the last few days (transfers and card payments excluded).

    Args:
        days: How many days to look back, 1-90.
    """
    if not 1 <= days <= HISTORY_DAYS:
        raise ToolError(f"days must be between 1 and {HISTORY_DAYS}")
    end = today()
    start = end - timedelta(days=days - 1)
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    income = 0.0
    service = await backend(ctx)
    for txns in (await service.transactions(start, end)).values():
        for txn in txns:
            top = txn["category"][0] if txn["category"] else "Other"
            if top in NOT_SPENDING:
                if top == "Income" or (top == "Transfer" and "Payroll" in txn["category"]):
                    income -= txn["amount"]
                continue
            totals[top] += txn["amount"]
            counts[top] += 1
    categories = [
        {"category": name, "amount": round(amount, 2), "transactions": counts[name]}
        for name, amount in sorted(totals.items(), key=lambda item: -item[1])
    ]
    summary = {
        "days": days,
        "start_date": start.isoformat(),
        "end_date": end.isoformat(),
        "iso_currency_code": "USD",
        "total_spent": round(sum(totals.values()), 2),
        "total_income": round(income, 2),
        "categories": categories,
    }
    table = "\n".join(
        [
            "| Category | Spent | Transactions |",
            "|---|---:|---:|",
            *(
                f"| {c['category']} | ${c['amount']:,.2f} | {c['transactions']} |"
                for c in categories
            ),
        ]
    )
    title = f"Spending, last {days} days: ${summary['total_spent']:,.2f}"
    lines = [f"{c['category']}: ${c['amount']:,.2f} ({c['transactions']})" for c in categories]
    return ToolResponse(
        "plaid_spending_summary",
        AGENT_NAME,
        f"Spending summary ({days} days)",
        summary,
        display_as=[
            {"type": "markdown", "content": f"**{title}**\n\n{table}"},
            {"type": "text", "content": "\n".join([title, *lines])},
        ],
    )


TOOLS = [get_accounts_at_plaid, get_transactions_at_plaid, get_spending_summary_at_plaid]
TOOL_DESCRIPTIONS = {
    "get_accounts_at_plaid": "Getting your account balances",
    "get_transactions_at_plaid": "Getting your transactions",
    "get_spending_summary_at_plaid": "Summarising your spending",
}
RESPONSE_TYPES = (
    "plaid_accounts_response",
    "plaid_transactions_response",
    "plaid_spending_summary",
    "connect_plaid_account",
    "account_needed",
    "error",
)
