"""What the offline demo model knows about Plaid (``connectors.offline_hints``). Pure."""

from __future__ import annotations

import re

from connectors.offline_hints import Clause, OfflineHints, PastCall, Step, ToolHints
from connectors.offline_reading import date_range, items_of, money, parse_json, plural

KEYWORDS = re.compile(
    r"\b(balances?|spen[dt]|spending|transactions?|bank(?:ing)?|accounts?|budget|money|"
    r"purchases?|charges?|income|paycheck|savings|checking|credit card)\b",
    re.I,
)


def steps(clause: Clause) -> list[Step]:
    lowered = clause.text.lower()
    start, end, days = date_range(clause.text, clause.today)
    wanted: list[tuple[int, Step]] = []
    accounts = re.search(
        r"\b(balances?|accounts?|how much (?:money )?do i have|net worth|savings|checking)\b",
        lowered,
    )
    transactions = re.search(r"\b(transactions?|purchases?|charges?|payments?|activity)\b", lowered)
    spending = re.search(r"\b(spen[dt]|spending|budget|categor(?:y|ies))\b", lowered)
    if accounts:
        wanted.append((accounts.start(), Step("get_accounts_at_plaid", lambda turn: {})))
    if transactions:
        wanted.append(
            (
                transactions.start(),
                Step(
                    "get_transactions_at_plaid",
                    lambda turn: {"start_date": start, "end_date": end, "account_id": None},
                ),
            )
        )
    if spending:
        wanted.append(
            (spending.start(), Step("get_spending_summary_at_plaid", lambda turn: {"days": days}))
        )
    if not wanted:
        wanted.append((0, Step("get_accounts_at_plaid", lambda turn: {})))
    return [step for _, step in sorted(wanted, key=lambda pair: pair[0])]


def _amounts(text: str, label: str) -> list[float]:
    return [float(v.replace(",", "")) for v in re.findall(rf"{label} (-?[\d,]+\.\d\d)", text)]


def summary(call: PastCall) -> str | None:
    output = call.output or ""
    args = call.arguments
    if call.not_run:
        return None
    items = items_of(output)
    if call.name == "get_accounts_at_plaid":
        credit = [item for item in items if "credit" in item.lower()]
        cash = [item for item in items if item not in credit]
        cash_total = sum(sum(_amounts(item, "current")[:1]) for item in cash)
        owed = sum(sum(_amounts(item, "current")[:1]) for item in credit)
        text = (
            f"You have {plural(len(items), 'account')} connected, holding "
            f"{money(cash_total)} across checking and savings."
        )
        if credit:
            text += f" Your credit card balance is {money(owed)}."
        return text
    if call.name == "get_transactions_at_plaid":
        rows = [re.match(r"(\d{4}-\d{2}-\d{2}) (.+?) (-?[\d,]+\.\d\d)\b", item) for item in items]
        found = [(m.group(2), float(m.group(3).replace(",", ""))) for m in rows if m]
        spent = sum(amount for _, amount in found if amount > 0)
        period = (
            f" from {args['start_date']} to {args.get('end_date') or 'today'}"
            if args.get("start_date")
            else " over the last 30 days"
        )
        if not found:
            return f"I didn't find any transactions{period}."
        biggest = max(found, key=lambda pair: pair[1])
        return (
            f"I found {plural(len(found), 'transaction')}{period}, with "
            f"{money(spent)} going out. The largest was {biggest[0].title()} at "
            f"{money(biggest[1])}."
        )
    if call.name == "get_spending_summary_at_plaid":
        data = parse_json(output)
        if isinstance(data, dict) and isinstance(data.get("categories"), list):
            top = ", ".join(
                f"{c['category']} ({money(c['amount'])})" for c in data["categories"][:3]
            )
            return (
                f"You spent {money(data.get('total_spent', 0))} over the last "
                f"{data.get('days', args.get('days', 30))} days; the biggest categories "
                f"were {top}."
            )
        return f"Here's your spending summary for the last {args.get('days', 30)} days."
    return None


HINTS = OfflineHints(
    examples=(
        "What are my account balances?",
        "Show my transactions from last week",
        "How much did I spend this month?",
    ),
    tools={
        "get_accounts_at_plaid": ToolHints(examples=("What are my account balances?",)),
        "get_transactions_at_plaid": ToolHints(examples=("Show my transactions from last week",)),
        "get_spending_summary_at_plaid": ToolHints(
            examples=("How much did I spend this month?",),
            follow_up="Want the transactions behind one of these categories, or a longer range?",
        ),
    },
    keywords=KEYWORDS,
    capability="show bank balances and spending",
    planner=steps,
    summary=summary,
    follow_up="Want a breakdown by category or a longer date range?",
    result_title=lambda call: "My recent banking summary",
    suggestions={
        "plaid_accounts_response": (
            "Show my transactions from last week",
            "How much did I spend this month?",
        ),
        "plaid_transactions_response": (
            "How much did I spend this month?",
            "What are my account balances?",
        ),
        "plaid_spending_summary": (
            "Show my transactions from last week",
            "What are my account balances?",
        ),
    },
)
