"""Two demo banks, five accounts and 90 days of categorised transactions.

Each day's transactions are drawn from a ``random.Random`` seeded with the account and the
date, so a given day always has the same transactions, whatever day it is generated on.
Amounts follow Plaid's sign convention: positive is money out, negative is money in.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from connectors.demo_ids import BASE62, stable_id

HISTORY_DAYS = 90
PENDING_DAYS = 2  # the last two days' transactions are still pending, as at a real bank

# (key, institution, name, official name, type, subtype, mask, current, available, limit)
_ACCOUNTS: tuple[
    tuple[str, str, str, str, str, str, str, float, float | None, float | None], ...
] = (
    (
        "chase-checking",
        "Chase",
        "Chase Total Checking",
        "CHASE TOTAL CHECKING",
        "depository",
        "checking",
        "0041",
        4262.37,
        4212.37,
        None,
    ),
    (
        "chase-savings",
        "Chase",
        "Chase Premier Savings",
        "CHASE PREMIER SAVINGS",
        "depository",
        "savings",
        "7730",
        18540.12,
        18540.12,
        None,
    ),
    (
        "chase-sapphire",
        "Chase",
        "Chase Sapphire Preferred",
        "CHASE SAPPHIRE PREFERRED VISA",
        "credit",
        "credit card",
        "4417",
        1287.44,
        8712.56,
        10000.0,
    ),
    (
        "ally-savings",
        "Ally Bank",
        "Ally Online Savings",
        "ALLY BANK ONLINE SAVINGS ACCOUNT",
        "depository",
        "savings",
        "2209",
        32100.00,
        32100.00,
        None,
    ),
    (
        "ally-checking",
        "Ally Bank",
        "Ally Interest Checking",
        "ALLY BANK INTEREST CHECKING",
        "depository",
        "checking",
        "5512",
        1940.25,
        1940.25,
        None,
    ),
)
_INSTITUTION_IDS = {"Chase": "ins_56", "Ally Bank": "ins_25"}

_COFFEE = ["Food and Drink", "Restaurants", "Coffee Shop"]
_RESTAURANT = ["Food and Drink", "Restaurants"]
_GROCERIES = ["Shops", "Supermarkets and Groceries"]
# Card spending: (name, category, low, high, relative weight)
_CARD_MERCHANTS: tuple[tuple[str, list[str], float, float, int], ...] = (
    ("BLUE BOTTLE COFFEE", _COFFEE, 4.5, 9.0, 9),
    ("STARBUCKS", _COFFEE, 3.9, 8.5, 6),
    ("TATTE BAKERY & CAFE", _COFFEE, 6.0, 18.0, 4),
    ("WHOLE FOODS MARKET", _GROCERIES, 35.0, 160.0, 5),
    ("TRADER JOE'S", _GROCERIES, 25.0, 95.0, 5),
    ("SWEETGREEN", _RESTAURANT, 12.0, 19.0, 5),
    ("CHIPOTLE MEXICAN GRILL", _RESTAURANT, 11.0, 16.0, 4),
    ("UMI SUSHI BAR", _RESTAURANT + ["Sushi"], 38.0, 120.0, 2),
    ("UBER", ["Travel", "Taxi"], 9.0, 42.0, 5),
    ("LYFT", ["Travel", "Taxi"], 8.0, 35.0, 3),
    ("MBTA", ["Travel", "Public Transportation Services"], 2.4, 10.0, 4),
    ("SHELL OIL", ["Travel", "Gas Stations"], 30.0, 65.0, 2),
    ("AMAZON.COM", ["Shops", "Digital Purchase"], 12.0, 140.0, 5),
    ("TARGET", ["Shops", "Department Stores"], 15.0, 110.0, 3),
    ("CVS PHARMACY", ["Shops", "Pharmacies"], 6.0, 45.0, 2),
    ("AMC THEATRES", ["Recreation", "Arts and Entertainment", "Movie Theatres"], 14.0, 38.0, 1),
    ("DELTA AIR LINES", ["Travel", "Airlines and Aviation Services"], 180.0, 520.0, 1),
)
# Monthly card subscriptions: (day of month, name, category, amount)
_CARD_SUBSCRIPTIONS = (
    (9, "NETFLIX.COM", ["Service", "Subscription"], 15.49),
    (21, "SPOTIFY USA", ["Service", "Subscription"], 11.99),
    (3, "NEW YORK TIMES DIGITAL", ["Service", "Subscription"], 17.00),
)


def accounts() -> list[dict[str, Any]]:
    """The demo accounts, shaped like Plaid's ``/accounts/balance/get`` accounts."""
    result = []
    for (
        key,
        institution,
        name,
        official,
        kind,
        subtype,
        mask,
        current,
        available,
        limit,
    ) in _ACCOUNTS:
        result.append(
            {
                "account_id": account_id(key),
                "name": name,
                "official_name": official,
                "type": kind,
                "subtype": subtype,
                "mask": mask,
                "balances": {
                    "available": available,
                    "current": current,
                    "limit": limit,
                    "iso_currency_code": "USD",
                },
                "institution": {
                    "institution_id": _INSTITUTION_IDS[institution],
                    "name": institution,
                },
            }
        )
    return result


def account_id(key: str) -> str:
    return stable_id("plaid-account", key, length=32, alphabet=BASE62)


def _txn(day: date, today: date, name: str, amount: float, category: list[str]) -> dict[str, Any]:
    return {
        "date": f"{day.isoformat()}T00:00:00",
        "amount": round(amount, 2),
        "name": name,
        "category": list(category),
        "pending": (today - day).days < PENDING_DAYS,
    }


def _day_transactions(key: str, day: date, today: date) -> list[dict[str, Any]]:
    rng = random.Random(f"{key}|{day.isoformat()}")
    out: list[dict[str, Any]] = []
    if key == "chase-checking":
        if day.toordinal() % 14 == 0:
            out.append(_txn(day, today, "ACME CORP PAYROLL", -3245.18, ["Transfer", "Payroll"]))
        if day.day == 1:
            out.append(_txn(day, today, "AVALON APARTMENTS RENT", 2450.00, ["Payment", "Rent"]))
        if day.day == 2:
            out.append(
                _txn(
                    day,
                    today,
                    "TRANSFER TO SAVINGS",
                    500.00,
                    ["Transfer", "Internal Account Transfer"],
                )
            )
        if day.day == 12:
            out.append(
                _txn(
                    day,
                    today,
                    "EVERSOURCE ENERGY",
                    rng.uniform(70, 140),
                    ["Service", "Utilities", "Electric"],
                )
            )
        if day.day == 18:
            out.append(
                _txn(
                    day, today, "COMCAST XFINITY", 79.99, ["Service", "Telecommunication Services"]
                )
            )
        if day.day == 25:
            out.append(
                _txn(
                    day,
                    today,
                    "CHASE CREDIT CRD AUTOPAY",
                    rng.uniform(900, 1600),
                    ["Payment", "Credit Card"],
                )
            )
        if rng.random() < 0.08:
            out.append(
                _txn(
                    day,
                    today,
                    "VENMO PAYMENT",
                    rng.choice([20.0, 35.0, 48.5, 60.0]),
                    ["Transfer", "Third Party", "Venmo"],
                )
            )
    elif key == "chase-sapphire":
        for _ in range(rng.choices([0, 1, 2, 3], weights=[2, 4, 3, 1])[0]):
            name, category, low, high, _weight = rng.choices(
                _CARD_MERCHANTS, weights=[m[4] for m in _CARD_MERCHANTS]
            )[0]
            out.append(_txn(day, today, name, rng.uniform(low, high), category))
        for day_of_month, name, category, amount in _CARD_SUBSCRIPTIONS:
            if day.day == day_of_month:
                out.append(_txn(day, today, name, amount, category))
    elif key == "chase-savings":
        if day.day == 2:
            out.append(
                _txn(
                    day,
                    today,
                    "TRANSFER FROM CHECKING",
                    -500.00,
                    ["Transfer", "Internal Account Transfer"],
                )
            )
    elif key == "ally-savings":
        if (day + timedelta(days=1)).day == 1:
            out.append(
                _txn(
                    day,
                    today,
                    "INTEREST PAID",
                    -round(rng.uniform(95, 110), 2),
                    ["Interest", "Interest Earned"],
                )
            )
    elif key == "ally-checking":
        if day.day == 5:
            out.append(
                _txn(
                    day,
                    today,
                    "EQUINOX FITNESS",
                    245.00,
                    ["Recreation", "Gyms and Fitness Centers"],
                )
            )
        if rng.random() < 0.05:
            out.append(
                _txn(
                    day,
                    today,
                    "ZELLE FROM EMMA WILSON",
                    -rng.choice([40.0, 60.0, 85.0]),
                    ["Transfer", "Third Party", "Zelle"],
                )
            )
    return out


def transactions(key: str, today: date, days: int = HISTORY_DAYS) -> list[dict[str, Any]]:
    """The account's transactions over the last ``days`` days (today included), newest first."""
    out: list[dict[str, Any]] = []
    for offset in range(min(days, HISTORY_DAYS)):
        out.extend(_day_transactions(key, today - timedelta(days=offset), today))
    return out


def account_keys() -> list[str]:
    return [entry[0] for entry in _ACCOUNTS]
