"""The offline demo model against everyday prompts: for each built-in connector at least 15
things people type, with the agent the request must reach, the tool it must call and, where
it matters, the arguments (the coffee and "last month" filters). Plus prompts answered
without any tool, the everyday requests in French, Spanish and German (the same tools and
arguments as in English), and what the demo cannot do, declined in the prompt's language.

Each row is a whole turn through the real Agents SDK runner, the real orchestrator and the
demo connectors, with the offline model built from the connectors' own hints, exactly as
``make run`` without a model key serves it. Approvals (sending an email) are granted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from agents import RunConfig, Runner
from agents.result import RunResultStreaming

from app.llm.offline import OfflineModelProvider
from app.settings import Settings
from connectors.context import ChatContext, DemoStore
from connectors.orchestrator import build_orchestrator
from connectors.registry import load_connectors

SETTINGS = Settings()
CONNECTORS = load_connectors(SETTINGS)
ORCHESTRATOR = "Switchboard"


def _today() -> date:
    return datetime.now(UTC).date()  # the offline model's clock


# The day the rows were made: a prompt naming a month names it as of then. A run that
# crosses midnight sees up to three days (this one, and the turn's start and end): the
# dates a row expects are those of any of them (the model reads its clock once).
COLLECTED = _today()


def last_month(today: date) -> dict[str, str]:
    end = today.replace(day=1) - timedelta(days=1)
    return {"start_date": end.replace(day=1).isoformat(), "end_date": end.isoformat()}


def this_month(today: date) -> dict[str, str]:
    return {"start_date": today.replace(day=1).isoformat(), "end_date": today.isoformat()}


def last_week(today: date) -> dict[str, str]:
    return {
        "start_date": (today - timedelta(days=7)).isoformat(),
        "end_date": today.isoformat(),
    }


def months_ago(count: int, today: date) -> date:
    first = today.replace(day=1)
    for _ in range(count):
        first = (first - timedelta(days=1)).replace(day=1)
    return first


def named_month(today: date) -> dict[str, str]:
    first = months_ago(2, today)
    following = (first + timedelta(days=32)).replace(day=1)
    return {
        "start_date": first.isoformat(),
        "end_date": (following - timedelta(days=1)).isoformat(),
    }


def yesterday(today: date) -> dict[str, str]:
    day = (today - timedelta(days=1)).isoformat()
    return {"start_date": day, "end_date": day}


def day_of_month(today: date) -> dict[str, int]:
    return {"days": today.day}


# An expected argument: a value that must be equal, or a check of the value.
Expected = Any | Callable[[Any], bool]


def contains(*words: str) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        text = json.dumps(value).lower()
        return all(word.lower() in text for word in words)

    check.__name__ = f"contains{words}"
    return check


def lacks(*words: str) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        text = json.dumps(value).lower()
        return not any(word.lower() in text for word in words)

    check.__name__ = f"lacks{words}"
    return check


@dataclass(frozen=True)
class Row:
    prompt: str
    agent: str | None  # the one connector agent it reaches; None: answered without tools
    tool: str | None = None  # the tool the answer rests on (the turn's last call)
    arguments: Mapping[str, Expected] = field(default_factory=dict)
    # The arguments that depend on the day (start and end dates), given the day.
    dates: Callable[[date], Mapping[str, Expected]] | None = None
    says: tuple[str, ...] = ()  # words the answer holds (a decline: what it can't do)


GMAIL = [
    Row("What's in my inbox?", "GMail", "google_email_inbox"),
    Row("check my gmail", "GMail", "google_email_inbox"),
    Row("any new mail?", "GMail", "google_email_inbox"),
    Row("Show my unread emails", "GMail", "google_email_search", {"query": contains("is:unread")}),
    Row(
        "do I have any unread messages?",
        "GMail",
        "google_email_search",
        {"query": contains("is:unread")},
    ),
    Row(
        "Find emails from dana about the offsite",
        "GMail",
        "google_email_search",
        {"query": contains("from:dana", "offsite")},
    ),
    Row(
        "emails from dana@example.com",
        "GMail",
        "google_email_search_from_email",
        {"email": "dana@example.com"},
    ),
    Row(
        "search my email for the flight confirmation",
        "GMail",
        "google_email_search",
        {"query": contains("flight", "confirmation")},
    ),
    Row("show the emails I sent", "GMail", "google_email_search", {"query": contains("in:sent")}),
    Row(
        "any emails about my invoice?",
        "GMail",
        "google_email_search",
        {"query": contains("invoice")},
    ),
    Row("open the newest email", "GMail", "read_google_email"),
    Row(
        "did I get any email from my landlord",
        "GMail",
        "google_email_search",
        {"query": contains("landlord")},
    ),
    Row(
        "Email bob@example.com about lunch tomorrow",
        "GMail",
        "send_google_email",
        {"to": ["bob@example.com"], "subject": contains("lunch")},
    ),
    Row(
        "send a message to ana@example.com saying I'm running late",
        "GMail",
        "send_google_email",
        {"to": ["ana@example.com"], "body": contains("running late")},
    ),
    Row(
        "write an email to carol@example.com about the budget review",
        "GMail",
        "send_google_email",
        {"to": ["carol@example.com"], "subject": contains("budget review")},
    ),
    Row(
        "Reply to the latest email saying thanks",
        "GMail",
        "reply_to_google_email",
        {"body": contains("thanks")},
    ),
    Row(
        "did anyone email me about the offsite?",
        "GMail",
        "google_email_search",
        {"query": contains("offsite")},
    ),
]

PLAID = [
    Row(
        "what did I spend on coffee last month",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": "coffee"},
        last_month,
    ),
    Row(
        "show my coffee transactions from last month",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": "coffee"},
        last_month,
    ),
    Row("What are my account balances?", "Plaid", "get_accounts_at_plaid"),
    Row("how much money do I have?", "Plaid", "get_accounts_at_plaid"),
    Row("what's my checking balance", "Plaid", "get_accounts_at_plaid"),
    Row("how much do I owe on my credit card?", "Plaid", "get_accounts_at_plaid"),
    Row(
        "Show my transactions from last week",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": None},
        last_week,
    ),
    Row(
        "list my card charges from yesterday",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": None},
        yesterday,
    ),
    Row("show my recent purchases", "Plaid", "get_transactions_at_plaid", {"query": None}),
    Row(
        "How much did I spend this month?",
        "Plaid",
        "get_spending_summary_at_plaid",
        dates=day_of_month,
    ),
    Row("show my spending by category", "Plaid", "get_spending_summary_at_plaid", {"days": 30}),
    Row("what's my budget looking like this month?", "Plaid", "get_spending_summary_at_plaid"),
    Row(
        "how much did I spend on Uber in the past 30 days?",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": contains("uber")},
    ),
    Row(
        "what did I buy at Amazon this week",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": contains("amazon")},
        last_week,
    ),
    Row(
        "how much have I spent on groceries this month",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": "groceries"},
        this_month,
    ),
    Row(
        "what did I spend at restaurants last month?",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": contains("restaurant")},
        last_month,
    ),
    Row("did my paycheck come in?", "Plaid", "get_transactions_at_plaid"),
    Row(
        f"how much did I spend on coffee in {months_ago(2, COLLECTED).strftime('%B')}",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": "coffee"},
        named_month,
    ),
    Row(
        "what did I pay for Netflix last month",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": contains("netflix")},
        last_month,
    ),
    Row(
        "my uber charges this week",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": contains("uber")},
        last_week,
    ),
    Row(
        "what were my biggest expenses last month",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": None},
        last_month,
    ),
    Row(
        "how much did I spend in the past two weeks",
        "Plaid",
        "get_spending_summary_at_plaid",
        {"days": 14},
    ),
    Row("how much have I spent eating out this month", "Plaid", "get_spending_summary_at_plaid"),
]

YELP = [
    Row(
        "Find sushi in Boston",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "sushi", "location": "Boston, MA"},
    ),
    Row("find coffee near me", "Yelp", "search_businesses_at_yelp", {"term": "coffee"}),
    Row(
        "Cheap tacos open now",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": contains("taco"), "price": "1,2", "open_now": True},
    ),
    Row(
        "best pizza in Chicago",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "pizza", "location": "Chicago, IL", "sort_by": "rating"},
    ),
    Row(
        "where can I get ramen in Seattle?",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "ramen", "location": "Seattle, WA"},
    ),
    Row(
        "any good Thai restaurants nearby?",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "thai"},
    ),
    Row(
        "recommend a brunch spot in Brooklyn",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "brunch", "location": "Brooklyn, NY"},
    ),
    Row(
        "top 3 Italian places in San Francisco",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "italian", "location": "San Francisco, CA", "limit": 3},
    ),
    Row(
        "find a bakery in Austin",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "bakery", "location": "Austin, TX"},
    ),
    Row(
        "vegan food in Portland",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "vegan", "location": "Portland, OR"},
    ),
    Row(
        "where should we eat dinner in Denver",
        "Yelp",
        "search_businesses_at_yelp",
        {"location": "Denver, CO"},
    ),
    Row(
        "coffee shops in Cambridge",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "coffee", "location": "Cambridge, MA"},
    ),
    Row(
        "fancy steak dinner in Miami",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "steak", "price": "3,4", "location": "Miami, FL"},
    ),
    Row(
        "burgers near me that are open now",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": contains("burger"), "open_now": True},
    ),
    Row(
        "show reviews for the best sushi place in Boston",
        "Yelp",
        "get_business_reviews_at_yelp",
    ),
    Row("I'm hungry, any lunch spots around here?", "Yelp", "search_businesses_at_yelp"),
    Row(
        "where can I get coffee right now",
        "Yelp",
        "search_businesses_at_yelp",
        {"term": "coffee", "open_now": True},
    ),
]

SEARCH = [
    Row(
        "Search the web for python asyncio",
        "Search",
        "search_google",
        {"query": "python asyncio"},
    ),
    Row("Who wrote Moby Dick?", "Search", "search_google", {"query": contains("moby dick")}),
    Row(
        "Look up the latest news on the Mars rover",
        "Search",
        "search_google",
        {"query": contains("mars rover")},
    ),
    Row(
        "what is the capital of Australia?",
        "Search",
        "search_google",
        {"query": contains("capital of australia")},
    ),
    Row(
        "how tall is the Eiffel Tower?",
        "Search",
        "search_google",
        {"query": contains("eiffel tower")},
    ),
    Row("google best laptops 2026", "Search", "search_google", {"query": "best laptops 2026"}),
    Row(
        "latest news about electric cars",
        "Search",
        "search_google",
        {"query": contains("electric cars")},
    ),
    Row(
        "when was the first iPhone released?",
        "Search",
        "search_google",
        {"query": contains("iphone")},
    ),
    Row(
        "explain how vaccines work",
        "Search",
        "search_google",
        {"query": contains("vaccines")},
    ),
    Row(
        "search online for cheap flights to Tokyo",
        "Search",
        "search_google",
        {"query": contains("flights to tokyo")},
    ),
    Row(
        "who is the CEO of Microsoft",
        "Search",
        "search_google",
        {"query": contains("ceo of microsoft")},
    ),
    Row(
        "how do I make cold brew coffee?",
        "Search",
        "search_google",
        {"query": contains("cold brew")},
    ),
    Row(
        "how can I bake pizza dough at home?",
        "Search",
        "search_google",
        {"query": contains("pizza dough")},
    ),
    Row(
        "tell me about the history of Rome",
        "Search",
        "search_google",
        {"query": contains("history of rome")},
    ),
    Row(
        "what time is it in Tokyo right now",
        "Search",
        "search_google",
        {"query": contains("tokyo")},
    ),
]

# The everyday requests in English, French, Spanish and German: each language's prompt
# must reach the same tool with the same arguments (the bank's and Yelp's data are English,
# so "restaurantes" is looked up as restaurants and "Kaffee" as coffee).
LANGUAGES = [
    *(
        Row(prompt, "GMail", "google_email_inbox")
        for prompt in (
            "show me my inbox",
            "Qu'y a-t-il dans ma boîte de réception ?",
            "¿Qué hay en mi bandeja de entrada?",
            "Was ist in meinem Posteingang?",
        )
    ),
    *(
        Row(prompt, "GMail", "google_email_search", {"query": contains("is:unread", "dana")})
        for prompt in (
            "show my unread emails from Dana",
            "Montre mes e-mails non lus de Dana",
            "Muéstrame mis correos no leídos de Dana",
            "Zeig meine ungelesenen E-Mails von Dana",
        )
    ),
    *(
        Row(prompt, "Plaid", "get_transactions_at_plaid", {"query": "restaurants"}, last_month)
        for prompt in (
            "how much did I spend on restaurants last month?",
            "Combien ai-je dépensé en restaurants le mois dernier ?",
            "¿Cuánto gasté en restaurantes el mes pasado?",
            "Wie viel habe ich letzten Monat für Restaurants ausgegeben?",
        )
    ),
    *(
        Row(prompt, "Plaid", "get_transactions_at_plaid", {"query": "coffee"}, this_month)
        for prompt in (
            "what did I spend on coffee this month",
            "Combien ai-je dépensé en café ce mois-ci ?",
            "¿Cuánto he gastado en café este mes?",
            "Wie viel habe ich diesen Monat für Kaffee ausgegeben?",
        )
    ),
    *(
        Row(
            prompt,
            "Yelp",
            "search_businesses_at_yelp",
            {"term": "sushi", "location": "Boston, MA"},
        )
        for prompt in (
            "find sushi places in Boston",
            "Trouve des sushis à Boston",
            "Busca sushi en Boston",
            "Finde Sushi in Boston",
        )
    ),
    *(
        Row(
            prompt,
            "Yelp",
            "search_businesses_at_yelp",
            {"term": "italian", "location": "Chicago, IL"},
        )
        for prompt in (
            "find an Italian restaurant in Chicago",
            "Trouve un restaurant italien à Chicago",
            "Busca un restaurante italiano en Chicago",
            "Finde ein italienisches Restaurant in Chicago",
        )
    ),
    *(
        Row(prompt, "Search", "search_google", {"query": "python asyncio"})
        for prompt in (
            "search the web for python asyncio",
            "Cherche sur le web python asyncio",
            "Busca en la web python asyncio",
            "Suche im Web nach python asyncio",
        )
    ),
    *(
        Row(prompt, "GMail", "reply_to_google_email", {"body": contains(word)})
        for prompt, word in (
            ("reply to the latest email saying thank you", "thank you"),
            ("Réponds au dernier e-mail en disant merci", "merci"),
            ("Responde al último correo diciendo gracias", "gracias"),
            ("Antworte auf die letzte E-Mail mit danke", "danke"),
        )
    ),
    # Issue 33: this searched Yelp in Boston.
    Row(
        "Combien ai-je dépensé en restaurants ce mois-ci ?",
        "Plaid",
        "get_transactions_at_plaid",
        {"query": "restaurants"},
        this_month,
    ),
]

# What the demo cannot do: said plainly, in the prompt's language, with no tool called
# (each of these became a made-up web search).
DECLINES = [
    Row("transfer $500 to Bob", None, says=("can't move money", "I can ")),
    Row("Vire 500 $ à Bob", None, says=("ne peux pas virer", "je peux ")),
    Row("Transfiere 500 $ a Bob", None, says=("no puedo transferir", "esta demo puedo")),
    Row("Überweise 500 € an Bob", None, says=("kann kein geld überweisen", "kann ich ")),
    Row("delete all my newsletters", None, says=("can't delete", "I can ")),
    Row("Supprime toutes mes newsletters", None, says=("ne peux pas supprimer", "je peux ")),
    Row("Borra todos mis boletines", None, says=("no puedo borrar", "esta demo puedo")),
    Row("Lösche alle meine Newsletter", None, says=("keine e-mails löschen", "kann ich ")),
    Row("book a table for two", None, says=("can't book", "I can ")),
    Row("Réserve une table pour deux", None, says=("ne peux pas réserver", "je peux ")),
    Row("Reserva una mesa para dos", None, says=("no puedo reservar", "esta demo puedo")),
    Row("Reserviere einen Tisch für zwei", None, says=("keinen tisch reservieren", "kann ich ")),
    Row("weather in Paris", None, says=("can't check live weather", "I can ")),
    Row("what's the weather in Paris tomorrow", None, says=("can't check live weather",)),
    Row("Quel temps fait-il à Paris ?", None, says=("ne peux pas consulter la météo",)),
    Row("¿Qué tiempo hace en París?", None, says=("no puedo consultar el tiempo",)),
    Row("Wie ist das Wetter in Paris?", None, says=("wetter nicht abrufen",)),
]

NO_TOOLS = [
    Row("hi", None),
    Row("thanks!", None),
    Row("what can you do?", None),
    Row("Count from 1 to 5", None),
    Row("Say hello", None),
]

TABLE = {
    "gmail": GMAIL,
    "plaid": PLAID,
    "yelp": YELP,
    "search": SEARCH,
    "none": NO_TOOLS,
    "languages": LANGUAGES,
    "declines": DECLINES,
}
CASES = [
    pytest.param(row, id=f"{name}-{index:02d}-{row.prompt[:40]}")
    for name, rows in TABLE.items()
    for index, row in enumerate(rows)
]


@dataclass
class Turn:
    agents: list[str] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    answer: str = ""


async def run_turn(prompt: str) -> Turn:
    store = DemoStore()
    context = ChatContext("user-1", "chat-1", "turn-1", SETTINGS, store.for_user("user-1"))
    orchestrator = build_orchestrator(SETTINGS, CONNECTORS)
    config = RunConfig(
        model_provider=OfflineModelProvider(connectors=CONNECTORS), tracing_disabled=True
    )
    turn = Turn()
    result = Runner.run_streamed(orchestrator, input=prompt, context=context, run_config=config)
    await _record(turn, result)
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            state.approve(item)
        result = Runner.run_streamed(orchestrator, state, run_config=config)
        await _record(turn, result)
    turn.answer = str(result.final_output)
    return turn


async def _record(turn: Turn, result: RunResultStreaming) -> None:
    async for event in result.stream_events():
        if event.type == "agent_updated_stream_event":
            if turn.agents[-1:] != [event.new_agent.name]:
                turn.agents.append(event.new_agent.name)
        elif event.type == "run_item_stream_event" and event.name == "tool_called":
            raw = event.item.raw_item
            turn.calls.append((raw.name, json.loads(raw.arguments)))
        elif event.type == "run_item_stream_event" and event.name == "tool_output":
            turn.outputs.append(event.item.output)


def _matches(expected: Expected, actual: Any) -> bool:
    return expected(actual) if callable(expected) else bool(expected == actual)


def test_the_table_has_fifteen_prompts_per_connector() -> None:
    connectors = {connector.name for connector in CONNECTORS}
    assert {"gmail", "plaid", "yelp", "search"} <= connectors
    for name in ("gmail", "plaid", "yelp", "search"):
        assert len(TABLE[name]) >= 15, name
        assert len({row.prompt.lower() for row in TABLE[name]}) == len(TABLE[name])


@pytest.mark.parametrize("row", CASES)
async def test_an_everyday_prompt_reaches_the_right_tool(row: Row) -> None:
    started = _today()
    turn = await run_turn(row.prompt)
    days = {COLLECTED, started, _today()}

    missing = [words for words in row.says if words.lower() not in turn.answer.lower()]
    assert not missing, f"{row.prompt!r}: {turn.answer!r}"
    if row.agent is None:
        assert turn.agents == [ORCHESTRATOR] and turn.calls == [], turn.calls
        assert turn.answer.strip()
        return
    assert turn.agents == [ORCHESTRATOR, row.agent], turn.calls
    tools = [name for name, _ in turn.calls if not name.startswith("transfer_to_")]
    assert tools and tools[-1] == row.tool, turn.calls
    arguments = turn.calls[-1][1]
    wrong = {
        key: arguments.get(key)
        for key, value in row.arguments.items()
        if not _matches(value, arguments.get(key))
    }
    assert not wrong, f"{row.prompt!r}: {arguments}"
    if row.dates is not None:
        assert any(
            all(_matches(value, arguments.get(key)) for key, value in row.dates(day).items())
            for day in days
        ), f"{row.prompt!r}: {arguments}, expected {[row.dates(day) for day in sorted(days)]}"


async def test_the_coffee_answer_totals_the_coffee_transactions_of_last_month() -> None:
    started = _today()
    turn = await run_turn("what did I spend on coffee last month")
    # The month before the model's day: the turn's first, or its last past midnight.
    months = [last_month(day) for day in (started, _today())]
    dates = next((m for m in months if f" from {m['start_date']}" in turn.answer), months[0])

    (shown,) = turn.outputs
    spent = [
        txn
        for account in shown["response"].values()
        for txn in account["transactions"]
        if txn["amount"] > 0
    ]
    assert spent and all("coffee" in json.dumps(txn).lower() for txn in spent)
    assert all(dates["start_date"] <= txn["date"][:10] <= dates["end_date"] for txn in spent)
    total = sum(txn["amount"] for txn in spent)
    assert turn.answer.startswith(f"You spent ${total:,.2f} on coffee from {dates['start_date']}")
