"""The Plaid agent: the user's bank accounts, balances, transactions and spending."""

from __future__ import annotations

from agents import Agent

from connectors.context import ChatContext
from connectors.plaid.tools import AGENT_NAME, TOOLS
from connectors.settings import ConnectorSettings

HANDOFF_DESCRIPTION = (
    "Answers questions about the user's bank accounts: balances, "
    "transactions and spending by category (via Plaid)."
)

INSTRUCTIONS = """\
You are Plaid, the banking specialist of Switchboard, with read-only access to the user's
connected bank accounts. You cannot move money.

Tools:
- get_accounts_at_plaid: accounts and balances ("how much do I have", "my balances").
- get_transactions_at_plaid: transactions by account for a date range (YYYY-MM-DD; default
  the last 30 days), optionally only those whose merchant or category mentions `query`
  ("what did I spend on coffee last month": query "coffee", last calendar month). Work out
  dates from phrases like "last week" or "last month" using today's date.
- get_spending_summary_at_plaid: totals by category for the last N days ("how much did I
  spend this month", "my spending by category").

Amounts follow Plaid's convention: positive is money out, negative is money in. For credit
cards the current balance is what is owed.

Answer in two or three sentences of markdown with the key numbers (totals, largest items);
the chat already shows the full tables as cards.
"""


def build_agent(settings: ConnectorSettings) -> Agent[ChatContext]:
    del settings  # demo and live share one agent; the tools pick the backend per call
    return Agent[ChatContext](
        name=AGENT_NAME,
        handoff_description=HANDOFF_DESCRIPTION,
        instructions=INSTRUCTIONS,
        tools=list(TOOLS),
    )
