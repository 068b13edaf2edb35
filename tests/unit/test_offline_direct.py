"""The offline demo model's own answers (requests about the answer's form and about the
conversation), the API caller's tools and ``tool_choice``: pure decisions over a
transcript and an offer, with the built-in connectors' hints."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from app.llm import offline_routing
from app.llm.offline_direct import direct_answer, recall
from app.llm.offline_knowledge import OfflineKnowledge
from app.llm.offline_planner import decide
from app.llm.offline_transcript import (
    CallTool,
    Offer,
    OfferedHandoff,
    OfferedTool,
    Say,
    read_transcript,
)
from app.settings import Settings
from connectors.registry import load_connectors

KNOWLEDGE = OfflineKnowledge.of(load_connectors(Settings()))
TODAY = date(2026, 5, 1)
WEATHER = OfferedTool(
    "get_weather",
    "Get the current weather for a location",
    {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
    caller=True,
)
# The orchestrator's offer: a hand-off to every connector agent.
HANDOFFS = {
    agent: OfferedHandoff(agent, f"transfer_to_{agent.lower()}", "") for agent in KNOWLEDGE.agents
}


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


def said(*items: dict[str, Any] | str) -> str | None:
    entries = [user(item) if isinstance(item, str) else item for item in items]
    return direct_answer(read_transcript(entries))


@pytest.mark.parametrize(
    ("prompt", "answer"),
    [
        ("Say hello in exactly 3 words.", "Hello there, friend!"),
        ("Say hello.", "Hello there, friend!"),
        ("Reply with exactly: first", "first"),
        ("Remember the code word: cobalt. Reply with OK.", "OK"),
        ("Start a new response and reply with exactly: recovered", "recovered"),
        ("Count from 1 to 5.", "1, 2, 3, 4, 5"),
        ("count 3 to 1", "3, 2, 1"),
        ("Remember that my dog is called Rex", "OK, I'll remember that."),
    ],
)
def test_requests_about_the_answer_itself_are_answered_directly(prompt: str, answer: str) -> None:
    assert said(prompt) == answer


def test_questions_about_the_conversation_are_answered_from_it() -> None:
    assert said(
        "My name is Alice.", {"role": "assistant", "content": "Hi Alice!"}, "What is my name?"
    ) == ("Your name is Alice.")
    assert (
        said(
            {"role": "assistant", "content": "I should answer with the saved number."},
            {"role": "assistant", "content": "The number is four."},
            "Repeat only the number.",
        )
        == "four"
    )
    assert (
        said(
            "Remember the code word: cobalt.",
            "What is the code word? Reply with only the code word.",
        )
        == "cobalt"
    )
    assert said("What code word did I ask you to remember?") is None  # nothing said yet
    assert recall("code word", [("user", "the code word is 'jade'")]) == "jade"


def test_an_attachment_the_model_cannot_read_is_said_so() -> None:
    image = {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What do you see in this image?"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
        ],
    }
    answer = said(image)
    assert answer is not None and "can't look at images" in answer


@pytest.mark.parametrize(
    "prompt",
    [
        "find sushi in Boston",
        "reply to Bob's email saying thanks",
        "Reply with a thank-you note to Bob about dinner",
        "search the web for asyncio",
        "what are my account balances",
        "What's the weather like in San Francisco?",
        "send an email to bob@example.com saying hello",
        "remember to email Bob about the lease",
    ],
)
def test_connector_requests_are_not_answered_directly(prompt: str) -> None:
    assert said(prompt) is None


def test_a_stop_word_with_an_apostrophe_says_nothing_about_the_service() -> None:
    words = [
        word
        for _, word in offline_routing.words_of(
            "What's the weather? It's cold", offline_routing.ROUTING_STOP
        )
    ]
    assert words == ["weather", "cold"]


def decision(prompt: str, tools: dict[str, OfferedTool], **kwargs: Any) -> Any:
    return decide(
        read_transcript([user(prompt)]), Offer(tools, HANDOFFS), TODAY, KNOWLEDGE, **kwargs
    )


def test_the_orchestrator_calls_the_callers_tool_for_its_part_of_a_request() -> None:
    assert decision("What's the weather like in San Francisco?", {"get_weather": WEATHER}) == (
        CallTool("get_weather", {"location": "San Francisco"})
    )
    # Another part first: its connector agent, which calls the caller's tool after.
    assert decision(
        "find sushi in Boston and get the weather in Boston", {"get_weather": WEATHER}
    ) == CallTool("transfer_to_yelp", {})


def test_tool_choice_is_followed() -> None:
    tools = {"get_weather": WEATHER}
    forced = decision("tell me about Lisbon", tools, tool_choice="get_weather")
    assert forced == CallTool("get_weather", {"location": "Lisbon"})
    assert decision("tell me about Lisbon", tools, tool_choice="transfer_to_gmail") == CallTool(
        "transfer_to_gmail", {}
    )
    # none: no tool and no hand-off, whatever the request.
    assert isinstance(decision("What's the weather in Paris?", tools, tool_choice="none"), Say)
    # required: what would have been an answer becomes a call.
    assert isinstance(decision("hello", tools), Say)
    assert decision("hello", tools, tool_choice="required") == CallTool(
        "get_weather", {"location": "hello"}
    )


def test_after_the_callers_result_the_orchestrator_answers_from_it() -> None:
    items = [
        user("Use the weather tool to get the temperature in San Francisco."),
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "64 degrees and clear"},
    ]
    # Its tools are not offered again: the call in the conversation says whose part it was.
    answer = decide(read_transcript(items), Offer({}, HANDOFFS), TODAY, KNOWLEDGE)
    assert isinstance(answer, Say) and "64 degrees and clear" in answer.text
