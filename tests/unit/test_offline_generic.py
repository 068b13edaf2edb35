"""The offline model's generic path as pure functions: routing by word overlap, arguments
read by JSON schema, values read back from tool outputs, and the generic answer."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import pytest

from app.llm.offline_arguments import extract, last_resort, value_from_output
from app.llm.offline_knowledge import OfflineKnowledge
from app.llm.offline_routing import Route, plan, route_text, routes_for, vocabulary
from app.llm.offline_summary import generic_sentence
from connectors.offline_hints import Clause, OfflineHints, PastCall, hints_by_agent
from connectors.registry import Connector

TODAY = date(2025, 3, 12)  # a Wednesday


def clause(text: str) -> Clause:
    return Clause(text, text, TODAY)


def schema(required: list[str] | None = None, **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
    }


NULLABLE_STRING = {"anyOf": [{"type": "string"}, {"type": "null"}]}

# ----------------------------------------------------------------------------- routing

ROUTES = [
    Route("Mail", vocabulary("Reads and sends the user's email.", "What's in my inbox?")),
    Route("Tracker", vocabulary("Lists and files issues in the team's projects.", "File a bug")),
    Route("Weather", vocabulary("Gives weather forecasts for a city.")),
]


@pytest.mark.parametrize(
    ("text", "agent"),
    [
        ("file a bug about the login page", "Tracker"),
        ("any issues in the backend project?", "Tracker"),
        ("what's in my inbox", "Mail"),
        ("forecast for Oslo", "Weather"),
        ("ask Weather whether to bring an umbrella", "Weather"),  # the agent named outright
        ("who wrote Moby Dick", None),
    ],
)
def test_a_clause_goes_to_the_agent_whose_words_it_shares(text: str, agent: str | None) -> None:
    assert route_text(text, ROUTES) == agent


def test_a_keyword_hint_outweighs_a_shared_word() -> None:
    keyed = [*ROUTES[:1], Route("Bank", vocabulary("Bank accounts."), re.compile(r"\bspen[dt]\b"))]
    assert route_text("what did I spend on email ads", keyed) == "Bank"


def test_a_request_splits_into_parts_and_quoted_text_stays_whole() -> None:
    assert plan("file a bug titled 'Login and signup fail' and email it to me", ROUTES, None) == [
        ("Tracker", "file a bug titled 'Login and signup fail'"),
        ("Mail", "email it to me"),
    ]
    assert plan("who wrote Moby Dick", ROUTES, None) == []
    assert plan("who wrote Moby Dick", ROUTES, "Search") == [("Search", "who wrote Moby Dick")]


def test_sample_values_in_examples_do_not_route() -> None:
    knowledge = OfflineKnowledge(
        {"Food": OfflineHints(examples=("Find sushi in Boston", "Email 'Menu' to bob@example.com"))}
    )
    (food,) = routes_for(knowledge, None)
    assert {"sushi", "email"} <= food.words
    assert not {"boston", "menu", "bob"} & food.words
    assert route_text("will it rain in Boston", [food, *ROUTES]) is None
    assert route_text("sushi tonight?", [food, *ROUTES]) == "Food"


def test_a_result_passed_on_is_titled_by_its_connector_or_its_tool() -> None:
    knowledge = OfflineKnowledge.of([])
    assert knowledge.title_of(PastCall("c1", "list_issues", {}, "[]")) == "Issues"
    assert knowledge.title_of(PastCall("c1", "get_weather_forecast", {}, "")) == (
        "Weather forecast"
    )


# ----------------------------------------------------------------------------- arguments


def test_each_kind_of_argument_is_read_from_the_prompt() -> None:
    found = extract(
        schema(
            to={"type": "array", "items": {"type": "string"}, "description": "Email addresses."},
            title={"type": "string"},
            priority={"enum": ["low", "normal", "high"], "default": "normal"},
            days={"type": "integer", "default": 3},
            due_date=NULLABLE_STRING,
            urgent={"type": "boolean", "default": False},
        ),
        clause("remind ana@example.com of 'Ship v2' with high priority in 5 days, due friday"),
    )
    assert found.missing == []
    assert found.arguments == {
        "to": ["ana@example.com"],
        "title": "Ship v2",
        "priority": "high",
        "days": 5,
        "due_date": "2025-03-14",
        "urgent": False,
    }


def test_phrases_introduced_by_the_property_s_words() -> None:
    found = extract(
        schema(city={"type": "string"}, query={"type": "string"}, body=NULLABLE_STRING),
        clause("ask Weather about rain gear in Portland"),
    )
    assert found.arguments == {"city": "Portland", "query": "rain gear", "body": None}


def test_an_id_the_prompt_does_not_give_is_missing_not_guessed() -> None:
    found = extract(
        schema(project_id={"type": "string"}, title={"type": "string"}),
        clause("file a bug titled 'Crash' in Apollo"),
    )
    assert found.missing == ["project_id"]
    assert found.arguments == {"title": "Crash"}
    given = extract(schema(issue_id={"type": "string"}), clause("close issue ISS-42"))
    assert given.arguments == {"issue_id": "ISS-42"}


def test_a_free_text_argument_takes_the_request_only_when_nothing_better_is_there() -> None:
    found = extract(schema(query={"type": "string"}), clause("search for python asyncio"))
    assert found.arguments == {"query": "python asyncio"}
    bare = extract(schema(query={"type": "string"}), clause("python asyncio tutorials"))
    assert bare.arguments == {"query": "python asyncio tutorials"}
    named = extract(schema(label={"type": "string"}), clause("python asyncio tutorials"))
    assert named.missing == ["label"]  # not free text: the prompt is not a label
    assert last_resort("label", schema(label={"type": "string"}), clause("tag it")) == "tag it"


def test_a_connector_s_own_extraction_wins() -> None:
    found = extract(schema(name={"type": "string"}), clause("in Apollo"), {"name": "apollo"})
    assert found.arguments == {"name": "apollo"}


@pytest.mark.parametrize(
    ("output", "name", "types", "value"),
    [
        ('{"id": "PRJ-7", "name": "Apollo"}', "project_id", ("string",), "PRJ-7"),
        ('[{"id": 12, "title": "x"}, {"id": 13}]', "issue_id", ("string",), "12"),
        ('{"response": {"project_id": "P1"}}', "project_id", ("string",), "P1"),
        ("Found it.\nproject_id: P-9\n", "project_id", ("string",), "P-9"),
        ("1. Dinner (id=77)", "booking_id", ("integer",), 77),
        ('<external source="x">\n{"id": "R-3"}\n</external>', "recipe_id", ("string",), "R-3"),
        ("nothing here", "project_id", ("string",), None),
    ],
)
def test_a_value_is_read_back_from_an_earlier_output(
    output: str, name: str, types: tuple[str, ...], value: Any
) -> None:
    assert value_from_output(output, name, types) == value


# ----------------------------------------------------------------------------- answers


@pytest.mark.parametrize(
    ("name", "output", "sentence"),
    [
        (
            "list_issues",
            '[{"title": "Login fails"}, {"title": "Slow"}]',
            "I found 2 issues: **Login fails** and **Slow**.",
        ),
        (
            "create_issue",
            '{"id": "ISS-4", "title": "Crash", "labels": []}',
            "I created the issue: id ISS-4, title Crash.",
        ),
        ("get_status", "All systems normal.", "Here's what I found: All systems normal."),
        ("send_invite", "", "I sent the invite."),
        ("find_rooms", "[]", "I didn't find anything."),
    ],
)
def test_the_generic_answer_says_what_was_found_or_done(
    name: str, output: str, sentence: str
) -> None:
    assert generic_sentence(PastCall("c1", name, {}, output)) == sentence


def test_knowledge_indexes_hints_by_agent_and_tool() -> None:
    plain = Connector("plain", "Plain", "Plain", build_agent=lambda settings: None)  # type: ignore[arg-type,return-value]
    assert hints_by_agent([plain]) == {"Plain": OfflineHints()}
    assert OfflineKnowledge.of([plain]).catch_all is None
