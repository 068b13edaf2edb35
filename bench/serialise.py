"""Which serialiser should ``websocket.protocol.encode`` use? (a measurement, not a test)

    .venv/bin/python bench/serialise.py            # stdlib json and pydantic-core
    PYTHONPATH=/some/dir/with/orjson .venv/bin/python bench/serialise.py   # plus orjson

Every candidate must give a ``str`` (what a WebSocket text frame takes), so byte-producing
serialisers pay their ``.decode()``. Numbers are microseconds per event, best of 5 runs.
"""

from __future__ import annotations

import json
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pydantic_core  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from websocket.protocol import _encode, encode, envelope  # noqa: E402

TS = "2025-01-31T12:00:00.123Z"


def _events() -> dict[str, dict[str, Any]]:
    delta = envelope(
        "llm_response_delta",
        "chat-1",
        "turn-1",
        None,
        {"delta": " café", "current_agent": "Switchboard"},
        TS,
    )
    businesses = [
        {
            "id": f"b{i}",
            "name": f"Sushi Place {i} — Ōmakase",
            "rating": 4.5,
            "review_count": 120 + i,
            "price": "$$",
            "url": f"https://www.yelp.com/biz/sushi-{i}",
            "image_url": f"https://img/{i}.jpg",
            "location": {"display_address": ["1 Main St", "Boston, MA 02110"]},
            "categories": [{"alias": "sushi", "title": "Sushi Bars"}],
            "is_closed": False,
        }
        for i in range(10)
    ]
    tool_output = envelope(
        "tool_output",
        "chat-1",
        "turn-1",
        7,
        {
            "call_id": "call_abc",
            "current_agent": "Yelp",
            "output": {
                "response_type": "yelp_search_results",
                "agent_name": "Yelp",
                "friendly_name": "Searching Yelp for sushi",
                "response": businesses,
                "display_response": True,
            },
        },
        TS,
    )
    transactions = {
        f"acct{a}": {
            "account_name": "Checking",
            "account_official_name": "TOTAL CHECKING",
            "transactions": [
                {
                    "date": "2024-11-01T00:00:00",
                    "amount": 42.5 + t,
                    "name": "BLUE BOTTLE COFFEE",
                    "pending": False,
                    "category": ["Food and Drink", "Coffee Shop"],
                }
                for t in range(100)
            ],
        }
        for a in range(3)
    }
    large = envelope(
        "tool_output",
        "chat-1",
        "turn-1",
        8,
        {
            "call_id": "call_def",
            "current_agent": "Plaid",
            "output": {
                "response_type": "plaid_transactions_response",
                "agent_name": "Plaid",
                "friendly_name": "Getting Transactions",
                "response": transactions,
                "display_response": True,
            },
        },
        TS,
    )
    return {
        "delta": delta,
        "tool_output (10 businesses)": tool_output,
        "tool_output (300 transactions)": large,
    }


def _candidates() -> dict[str, Callable[[dict[str, Any]], str]]:
    adapter = TypeAdapter(dict)
    out: dict[str, Callable[[dict[str, Any]], str]] = {
        f"protocol.encode (now: {_encode.__name__})": encode,
        "json.dumps(separators, ensure_ascii=False)": lambda d: json.dumps(
            d, separators=(",", ":"), ensure_ascii=False
        ),
        "TypeAdapter(dict).dump_json().decode()": lambda d: adapter.dump_json(d).decode(),
        "pydantic_core.to_json().decode()": lambda d: pydantic_core.to_json(
            d, inf_nan_mode="null"
        ).decode(),
    }
    try:
        import orjson
    except ImportError:
        print("orjson not importable: skipped")
    else:
        out["orjson.dumps().decode()"] = lambda d: orjson.dumps(d).decode()
    return out


def main() -> None:
    events = _events()
    candidates = _candidates()
    for label, event in events.items():
        size = len(encode(event).encode())
        print(f"\n{label}: {size} bytes")
        for name, fn in candidates.items():
            assert json.loads(fn(event)) == event, name
            number = 20_000 if size < 1000 else 2_000 if size < 10_000 else 200
            best = min(timeit.repeat(lambda fn=fn, e=event: fn(e), number=number, repeat=5))
            print(f"  {name:45s} {best / number * 1e6:9.2f} µs")


if __name__ == "__main__":
    main()
