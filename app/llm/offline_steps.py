"""The offline demo model's tool steps per connector, with arguments parsed from the prompt.

A request becomes an ordered list of ``Step``s (e.g. "coffee near me" → locate, then
search). Arguments are built lazily from the transcript, so a step can use an earlier
step's result (the coordinates, the businesses to email, the message id to reply to).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from app.llm.offline_summary import items_of, parse_json, strip_item, where_from_header
from app.llm.offline_transcript import TOOL_ROLE, PastCall, Transcript

# ----------------------------------------------------------------------------- tool steps

Builder = Callable[[Transcript], dict[str, Any] | None]


@dataclass(frozen=True)
class Step:
    name: str
    build: Builder  # arguments from the transcript so far; None skips the step
    skip_note: str = ""  # said in the summary when the step is skipped


EMAIL_RE = re.compile(r"[A-Za-z0-9._%+'-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_HEX_ID = re.compile(r"\b[0-9a-f]{16}\b")


def _outputs(transcript: Transcript, names: Iterable[str]) -> list[PastCall]:
    wanted = set(names)
    return [call for call in transcript.calls if call.name in wanted and not call.failed]


def _first_id(output: str, pattern: str) -> str | None:
    data = parse_json(output)
    if isinstance(data, list) and data and isinstance(data[0], dict) and data[0].get("id"):
        return str(data[0]["id"])
    match = re.search(pattern, output)
    return match.group(1) if match else None


def _gmail_steps(clause: str, prompt: str) -> list[Step]:
    addresses = EMAIL_RE.findall(clause) or EMAIL_RE.findall(prompt)
    lowered = clause.lower()
    if re.search(r"\brepl(y|ies)\b", lowered):
        return _reply_steps(clause, addresses)
    sending = re.search(
        r"\b(send|e-?mail|write|compose|forward|mail)\b(?!s)", lowered
    ) and not re.search(r"\bfrom\s+\S+@", lowered)
    if sending and addresses:
        return [
            Step(
                "send_google_email",
                lambda t: _send_arguments(t, clause, addresses),
                "I didn't send the email because there were no results to share.",
            )
        ]
    if addresses and re.search(r"\bfrom\b", lowered):
        return [Step("google_email_search_from_email", lambda t: {"email": addresses[0]})]
    message_id = _HEX_ID.search(clause)
    if message_id and re.search(r"\b(read|open|show)\b", lowered):
        return [Step("read_google_email", lambda t: {"message_id": message_id.group(0)})]
    query = gmail_query(clause)
    if query:
        return [Step("google_email_search", lambda t: {"query": query, "max_results": 10})]
    return [Step("google_email_inbox", lambda t: {"max_results": 10})]


def gmail_query(clause: str) -> str:
    """Gmail search syntax for a request like "unread emails from dana about the budget"."""
    lowered = clause.lower()
    parts = []
    if "unread" in lowered:
        parts.append("is:unread")
    if re.search(r"\b(sent|i sent)\b", lowered):
        parts.append("in:sent")
    sender = re.search(r"\bfrom\s+([a-z][\w.-]*)", lowered)
    if sender and sender.group(1) not in {"my", "the", "last", "this", "today", "yesterday"}:
        parts.append(f"from:{sender.group(1)}")
    topic = re.search(r"\b(?:about|regarding|mentioning|for|with subject)\s+(.+)$", lowered)
    if topic:
        words = [
            w
            for w in re.findall(r"[\w$.-]+", topic.group(1))
            if w not in {"the", "my", "a", "an", "emails", "email", "mail", "inbox"}
        ]
        parts.extend(words[:4])
    return " ".join(parts)


def _greeting_for(address: str) -> str:
    name = re.split(r"[._+-]", address.split("@")[0])[0]
    return f"Hi {name.capitalize()}," if name.isalpha() else "Hi,"


def _send_arguments(
    transcript: Transcript, clause: str, addresses: list[str]
) -> dict[str, Any] | None:
    shared = [
        call
        for call in transcript.calls
        if not call.is_handoff
        and TOOL_ROLE.get(call.name) != "gmail"
        and call.name != "resolve_user_location"
    ]
    refers_to_results = re.search(
        r"\b(list|results?|them|those|these|it|that|places|"
        r"options|links?)\b",
        clause.lower(),
    )
    usable = [call for call in shared if not call.failed]
    greeting = _greeting_for(addresses[0])
    if usable:
        source = usable[-1]
        lines = [strip_item(line) for line in items_of(source.output or "")][:10]
        subject = _subject_for(source)
        body = "\n".join(
            [
                greeting,
                "",
                f"Here's what I found — {subject}:",
                "",
                *(f"{n}. {line}" for n, line in enumerate(lines, 1)),
                "",
                "Cheers",
            ]
        )
    elif refers_to_results and shared:
        return None  # the results this email was meant to carry failed: do not send nonsense
    else:
        said = re.search(r"\b(?:saying|that says|to say|:)\s+(.+)$", clause, re.I)
        topic = re.search(r"\babout\s+(.+)$", clause, re.I)
        phrase = said or topic
        text = phrase.group(1).strip() if phrase else "Just checking in."
        subject = (topic.group(1).strip().capitalize() if topic else "Quick note")[:80]
        body = f"{greeting}\n\n{text[0].upper()}{text[1:]}\n\nCheers"
    return {"to": addresses[:5], "subject": subject, "body": body, "cc": None, "bcc": None}


def _subject_for(call: PastCall) -> str:
    args = call.arguments
    if call.name == "search_businesses_at_yelp":
        where = args.get("location") or where_from_header(call.output or "") or "your area"
        return f"{str(args.get('term', 'places')).capitalize()} in {where}"
    if call.name == "search_google":
        return f"Search results for {args.get('query', 'your question')}"
    if TOOL_ROLE.get(call.name) == "plaid":
        return "My recent banking summary"
    return "Results from Switchboard"


def _reply_steps(clause: str, addresses: list[str]) -> list[Step]:
    said = re.search(r"\b(?:saying|that says|to say|with|:)\s+(.+)$", clause, re.I)
    body = said.group(1).strip() if said else "Thanks for your email. I'll get back to you soon."
    body = body[0].upper() + body[1:]
    direct = _HEX_ID.search(clause)
    if direct:
        return [
            Step("reply_to_google_email", lambda t: {"message_id": direct.group(0), "body": body})
        ]
    finder = (
        Step("google_email_search_from_email", lambda t: {"email": addresses[0]})
        if addresses
        else Step("google_email_inbox", lambda t: {"max_results": 5})
    )

    def reply_arguments(transcript: Transcript) -> dict[str, Any] | None:
        found = _outputs(transcript, {finder.name})
        message_id = _first_id(found[-1].output or "", r"\bid=([0-9a-f]{16})") if found else None
        return {"message_id": message_id, "body": body} if message_id else None

    return [
        finder,
        Step("reply_to_google_email", reply_arguments, "I couldn't find the email to reply to."),
    ]


def date_range(text: str, today: date) -> tuple[str | None, str | None, int]:
    """(start, end, days) for phrases like "last week", "this month", "last 10 days"."""
    lowered = text.lower()
    days_match = re.search(r"\b(?:last|past)\s+(\d{1,2})\s+days?\b", lowered)
    if days_match:
        days = max(1, min(int(days_match.group(1)), 90))
        return (today - timedelta(days=days - 1)).isoformat(), today.isoformat(), days
    if re.search(r"\byesterday\b", lowered):
        day = (today - timedelta(days=1)).isoformat()
        return day, day, 2
    if re.search(r"\btoday\b", lowered):
        return today.isoformat(), today.isoformat(), 1
    if re.search(r"\b(last|past|this)\s+week\b", lowered):
        return (today - timedelta(days=7)).isoformat(), today.isoformat(), 7
    if re.search(r"\bthis month\b", lowered):
        return today.replace(day=1).isoformat(), today.isoformat(), today.day
    if re.search(r"\b(last|past) month\b", lowered):
        end = today.replace(day=1) - timedelta(days=1)
        return end.replace(day=1).isoformat(), end.isoformat(), 30
    if re.search(r"\b(quarter|three months|3 months|90 days)\b", lowered):
        return (today - timedelta(days=89)).isoformat(), today.isoformat(), 90
    return None, None, 30


def _plaid_steps(clause: str, today: date) -> list[Step]:
    lowered = clause.lower()
    start, end, days = date_range(clause, today)
    wanted: list[tuple[int, Step]] = []
    accounts = re.search(
        r"\b(balances?|accounts?|how much (?:money )?do i have|net worth|"
        r"savings|checking)\b",
        lowered,
    )
    transactions = re.search(r"\b(transactions?|purchases?|charges?|payments?|activity)\b", lowered)
    spending = re.search(r"\b(spen[dt]|spending|budget|categor(?:y|ies))\b", lowered)
    if accounts:
        wanted.append((accounts.start(), Step("get_accounts_at_plaid", lambda t: {})))
    if transactions:
        wanted.append(
            (
                transactions.start(),
                Step(
                    "get_transactions_at_plaid",
                    lambda t: {"start_date": start, "end_date": end, "account_id": None},
                ),
            )
        )
    if spending:
        wanted.append(
            (spending.start(), Step("get_spending_summary_at_plaid", lambda t: {"days": days}))
        )
    if not wanted:
        wanted.append((0, Step("get_accounts_at_plaid", lambda t: {})))
    return [step for _, step in sorted(wanted, key=lambda pair: pair[0])]


CITY_STATES = {
    "boston": "Boston, MA",
    "cambridge": "Cambridge, MA",
    "san francisco": "San Francisco, CA",
    "sf": "San Francisco, CA",
    "new york": "New York, NY",
    "nyc": "New York, NY",
    "manhattan": "New York, NY",
    "brooklyn": "Brooklyn, NY",
    "chicago": "Chicago, IL",
    "austin": "Austin, TX",
    "seattle": "Seattle, WA",
    "los angeles": "Los Angeles, CA",
    "denver": "Denver, CO",
    "miami": "Miami, FL",
    "portland": "Portland, OR",
    "philadelphia": "Philadelphia, PA",
    "washington dc": "Washington, DC",
}
FOOD_TERMS = (
    "sushi",
    "pizza",
    "coffee",
    "tacos",
    "taco",
    "mexican",
    "burgers",
    "burger",
    "ramen",
    "thai",
    "italian",
    "bbq",
    "barbecue",
    "brunch",
    "bakery",
    "cafe",
    "café",
    "vegan",
    "steak",
    "seafood",
    "indian",
    "chinese",
    "korean",
    "dessert",
    "ice cream",
)
_NEAR_ME = re.compile(
    r"\b(near (me|here|by)|nearby|around (me|here)|close to me|closest|"
    r"nearest|in my area)\b",
    re.I,
)


def place_of(clause: str) -> str | None:
    """A place named in the text: known cities as "City, ST", else the capitalised words."""
    lowered = f" {re.sub(r'[^a-z ]+', ' ', clause.lower())} "
    for name, display in CITY_STATES.items():
        if f" {name} " in lowered:
            return display
    match = re.search(
        r"\b(?:in|near|around|at)\s+((?:[A-Z][\w'.-]*)(?:[ ,]+[A-Z][\w'.-]*)*)", clause
    )
    return match.group(1).strip(" ,") if match else None


def yelp_term(clause: str) -> str:
    lowered = clause.lower()
    for term in FOOD_TERMS:
        if re.search(rf"\b{re.escape(term)}\b", lowered):
            return "coffee" if term in {"cafe", "café"} else term
    match = re.search(
        r"\b(?:find|search for|look for|get me|recommend|show me|where can i get)"
        r"\s+(?:me\s+)?(?:some\s+|a\s+|an\s+|the\s+|good\s+|best\s+)*(.+?)"
        r"(?=\s+(?:in|near|around|nearby|open|that|with)\b|$)",
        lowered,
    )
    term = match.group(1).strip() if match else ""
    return term or "restaurants"


def _yelp_steps(clause: str) -> list[Step]:
    lowered = clause.lower()
    place = place_of(clause)
    near = bool(_NEAR_ME.search(clause)) and place is None
    term = yelp_term(clause)
    price = (
        "1,2"
        if re.search(r"\b(cheap|inexpensive|affordable|budget)\b", lowered)
        else "3,4"
        if re.search(r"\b(fancy|upscale|expensive|fine dining)\b", lowered)
        else None
    )
    sort_by = (
        "rating"
        if re.search(r"\b(best|top|highest)[ -]rated\b|\bbest\b", lowered)
        else "distance"
        if re.search(r"\b(closest|nearest)\b", lowered)
        else "review_count"
        if re.search(r"\b(popular|most reviewed)\b", lowered)
        else "best_match"
    )
    count = re.search(
        r"\b(?:top\s+)?(\d{1,2})\s+(?:places|restaurants|spots|options|results)\b"
        r"|\btop\s+(\d{1,2})\b",
        lowered,
    )
    limit = int(next(g for g in count.groups() if g)) if count else 5
    open_now = bool(re.search(r"\b(open now|open right now|still open|currently open)\b", lowered))

    def search_arguments(transcript: Transcript) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "term": term,
            "location": place,
            "latitude": None,
            "longitude": None,
            "price": price,
            "open_now": open_now,
            "sort_by": sort_by,
            "limit": max(1, min(limit, 20)),
        }
        if near:
            found = _outputs(transcript, {"resolve_user_location"})
            spot = location_from(found[-1].output or "") if found else None
            if spot:
                arguments.update(spot)
        return arguments

    steps = []
    if near:
        steps.append(Step("resolve_user_location", lambda t: {"hint": None}))
    steps.append(Step("search_businesses_at_yelp", search_arguments))
    if re.search(r"\breviews?\b", lowered):

        def review_arguments(transcript: Transcript) -> dict[str, Any] | None:
            found = _outputs(transcript, {"search_businesses_at_yelp"})
            business = (
                _first_id(found[-1].output or "", r"\bid=([A-Za-z0-9_-]{6,})") if found else None
            )
            return {"business_id": business} if business else None

        steps.append(
            Step(
                "get_business_reviews_at_yelp",
                review_arguments,
                "I couldn't find a business to read reviews for.",
            )
        )
    return steps


def location_from(output: str) -> dict[str, Any] | None:
    """Coordinates from a resolve_user_location result (JSON, or text with numbers)."""
    data = parse_json(output)
    if isinstance(data, dict) and "response" in data and isinstance(data["response"], dict):
        data = data["response"]
    if (
        isinstance(data, dict)
        and isinstance(data.get("latitude"), int | float)
        and isinstance(data.get("longitude"), int | float)
    ):
        return {"latitude": float(data["latitude"]), "longitude": float(data["longitude"])}
    numbers = re.findall(r"-?\d{1,3}\.\d+", output)
    if len(numbers) >= 2:
        return {"latitude": float(numbers[0]), "longitude": float(numbers[1])}
    return None


_SEARCH_PREFIX = re.compile(
    r"^(?:please\s+)?(?:(?:can you|could you)\s+)?(?:search(?: the web| online| google)?"
    r"(?: for)?|google|look up|find(?: out)?(?: about)?|tell me about|what(?:'s| is| are)|"
    r"who(?:'s| is| are))\s+",
    re.I,
)


def search_query(clause: str) -> str:
    query = _SEARCH_PREFIX.sub("", clause.strip()).strip(" ?.!")
    return query or clause.strip(" ?.!")


def _search_steps(clause: str) -> list[Step]:
    query = search_query(clause)
    return [Step("search_google", lambda t: {"query": query, "num_results": 5})]


def steps_for(role: str, clause: str, prompt: str, today: date) -> list[Step]:
    if role == "gmail":
        return _gmail_steps(clause, prompt)
    if role == "plaid":
        return _plaid_steps(clause, today)
    if role == "yelp":
        return _yelp_steps(clause)
    return _search_steps(clause)


def generic_arguments(schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    """Arguments for a plug-in tool the offline model knows nothing about: the prompt for
    strings, defaults where the schema has them, empty values otherwise."""
    arguments: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        kinds = spec.get("type")
        if "default" in spec:
            arguments[name] = spec["default"]
        elif kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
            arguments[name] = prompt
        elif kinds == "integer":
            arguments[name] = 1
        elif kinds == "number":
            arguments[name] = 1.0
        elif kinds == "boolean":
            arguments[name] = False
        elif kinds == "array":
            arguments[name] = []
        else:
            arguments[name] = None
    return arguments
