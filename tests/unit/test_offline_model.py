"""The offline demo model driving the real orchestrator through the real Agents SDK runner."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import pytest
from agents import ModelSettings, ModelTracing, RunConfig, Runner, function_tool
from agents.result import RunResultStreaming

from app.llm import offline_routing
from app.llm.offline import (
    OfflineModel,
    OfflineModelProvider,
    offline_suggestions,
    offline_title,
)
from app.llm.offline_knowledge import OfflineKnowledge
from app.llm.offline_summary import summarize
from app.llm.offline_transcript import Transcript
from app.settings import Settings
from connectors.context import ChatContext, DemoStore
from connectors.offline_hints import PastCall
from connectors.offline_reading import NOT_CONNECTED, date_range
from connectors.orchestrator import build_orchestrator
from connectors.registry import load_connectors
from connectors.responses import ToolResponse

SETTINGS = Settings()
CONNECTORS = load_connectors(SETTINGS)
KNOWLEDGE = OfflineKnowledge.of(CONNECTORS)


def plan(prompt: str) -> list[tuple[str, str]]:
    """The request split as the orchestrator splits it (agent, clause)."""
    routes = offline_routing.routes_for(KNOWLEDGE, None)
    return offline_routing.plan(prompt, routes, KNOWLEDGE.catch_all)


def _provider(**knobs: Any) -> OfflineModelProvider:
    return OfflineModelProvider(connectors=CONNECTORS, **knobs)


@dataclass
class Turn:
    result: RunResultStreaming
    events: list[tuple[Any, ...]] = field(default_factory=list)
    raw_types: list[str] = field(default_factory=list)
    deltas: list[str] = field(default_factory=list)

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(e[1], e[2]) for e in self.events if e[0] == "call"]

    def outputs(self) -> list[dict[str, Any]]:
        return [e[2] for e in self.events if e[0] == "output"]

    def agents(self) -> list[str]:
        return [e[1] for e in self.events if e[0] == "agent"]

    def messages(self) -> list[str]:
        return [e[1] for e in self.events if e[0] == "message"]


async def run_turn(
    prompt: str | list[Any],
    *,
    store: DemoStore | None = None,
    user: str = "user-1",
    provider: OfflineModelProvider | None = None,
    approve: bool = True,
) -> Turn:
    """Run a turn, deciding each approval it pauses for (the SDK's own resume path) as
    ``approve`` says; the events of every leg are recorded in order."""
    store = store or DemoStore()
    context = ChatContext(
        user_id=user,
        chat_id="chat-1",
        turn_id="turn-1",
        settings=SETTINGS,
        demo=store.for_user(user),
    )
    orchestrator = build_orchestrator(SETTINGS, CONNECTORS)
    config = RunConfig(model_provider=provider or _provider(), tracing_disabled=True)
    result = Runner.run_streamed(orchestrator, input=prompt, context=context, run_config=config)
    turn = Turn(result)
    await _record(turn, result)
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            turn.events.append(("approval", item.name))
            if approve:
                state.approve(item)
            else:
                state.reject(item, rejection_message="Not run: the user declined this call.")
        result = turn.result = Runner.run_streamed(orchestrator, state, run_config=config)
        await _record(turn, result)
    return turn


async def _record(turn: Turn, result: RunResultStreaming) -> None:
    async for event in result.stream_events():
        if event.type == "raw_response_event":
            turn.raw_types.append(event.data.type)
            if event.data.type == "response.output_text.delta":
                turn.deltas.append(event.data.delta)
        elif event.type == "agent_updated_stream_event":
            turn.events.append(("agent", event.new_agent.name))
        elif event.name == "handoff_occured":
            turn.events.append(
                ("handoff", event.item.source_agent.name, event.item.target_agent.name)
            )
        elif event.name == "tool_called":
            raw = event.item.raw_item
            turn.events.append(("call", raw.name, json.loads(raw.arguments), raw.call_id))
        elif event.name == "tool_output":
            turn.events.append(
                (
                    "output",
                    event.item.raw_item["call_id"],
                    event.item.output,
                    event.item.raw_item["output"],
                )
            )
        elif event.name == "message_output_created":
            text = "".join(part.text for part in event.item.raw_item.content)
            turn.events.append(("message", text, event.item.agent.name))


async def test_multi_agent_turn_searches_yelp_then_emails_the_list() -> None:
    turn = await run_turn("find sushi in Boston and email the list to bob@example.com")

    handoffs = [e[1:] for e in turn.events if e[0] == "handoff"]
    assert handoffs == [("Switchboard", "Yelp"), ("Yelp", "GMail")]
    names = [name for name, _ in turn.calls()]
    assert names == ["search_businesses_at_yelp", "send_google_email"]
    # The send waited for approval (PROTOCOL §3a) and ran only once approved.
    send_id = next(e[3] for e in turn.events if e[0] == "call" and e[1] == "send_google_email")
    asked = turn.events.index(("approval", "send_google_email"))
    sent_at = next(i for i, e in enumerate(turn.events) if e[0] == "output" and e[1] == send_id)
    assert asked < sent_at
    search_args = turn.calls()[0][1]
    assert search_args["term"] == "sushi"
    assert search_args["location"] == "Boston, MA"

    businesses = turn.outputs()[0]["response"]
    assert businesses, "the demo has sushi in Boston"
    send_args = turn.calls()[1][1]
    assert send_args["to"] == ["bob@example.com"]
    assert all(business["name"] in send_args["body"] for business in businesses)
    sent = turn.outputs()[1]
    assert sent["response_type"] == "send_google_email"
    assert list(sent["response"]) == ["to", "cc", "bcc", "subject", "body"]

    (text,) = turn.messages()
    assert businesses[0]["name"] in text and "bob@example.com" in text
    assert 20 <= len(text.split()) <= 70
    assert turn.result.final_output == text
    assert turn.result.last_agent.name == "GMail"


async def test_a_request_with_a_part_the_demo_cannot_do_does_the_rest_and_says_so() -> None:
    turn = await run_turn("find sushi in Boston and book a table for two")

    assert [name for name, _ in turn.calls()] == ["search_businesses_at_yelp"]
    (text,) = turn.messages()
    assert text.startswith("I found") and "sushi" in text
    assert "I can't book a table or make reservations" in text


async def test_the_demo_inbox_injection_is_reported_not_obeyed() -> None:
    turn = await run_turn("what's in my inbox?")
    assert [name for name, _ in turn.calls()] == ["google_email_inbox"]
    assert [e for e in turn.events if e[0] == "approval"] == []
    (text,) = turn.messages()
    assert (
        "**Action required: verify your account** contains instructions aimed at an AI "
        "assistant; I did not follow them" in text
    )


async def test_a_rejected_email_is_not_sent_and_the_answer_says_so() -> None:
    store = DemoStore()
    turn = await run_turn(
        "find sushi in Boston and email the list to bob@example.com", store=store, approve=False
    )
    assert [e[1] for e in turn.events if e[0] == "approval"] == ["send_google_email"]
    assert store.for_user("user-1").namespace("gmail").get("sent", []) == []
    # The model reads the refusal instead of an output; the tool never ran.
    assert [o if isinstance(o, str) else o["response_type"] for o in turn.outputs()] == [
        "yelp_search_results",
        "Not run: the user declined this call.",
    ]
    (text,) = turn.messages()
    assert "didn't send" in text and "declined" in text


@pytest.mark.parametrize(
    ("prompt", "agent", "tools", "response_type"),
    [
        ("what's in my inbox", "GMail", ["google_email_inbox"], "google_email_inbox"),
        (
            "what are my account balances",
            "Plaid",
            ["get_accounts_at_plaid"],
            "plaid_accounts_response",
        ),
        (
            "show my transactions from last week",
            "Plaid",
            ["get_transactions_at_plaid"],
            "plaid_transactions_response",
        ),
        (  # "coffee" is Yelp's word, but these are bank transactions (issue 20)
            "show my coffee transactions from last month",
            "Plaid",
            ["get_transactions_at_plaid"],
            "plaid_transactions_response",
        ),
        (
            "how much did I spend this month?",
            "Plaid",
            ["get_spending_summary_at_plaid"],
            "plaid_spending_summary",
        ),
        (
            "find coffee near me",
            "Yelp",
            ["resolve_user_location", "search_businesses_at_yelp"],
            "yelp_search_results",
        ),
        ("search the web for python asyncio", "Search", ["search_google"], "google_search_results"),
    ],
)
async def test_single_connector_prompts(
    prompt: str, agent: str, tools: list[str], response_type: str
) -> None:
    turn = await run_turn(prompt)

    assert turn.agents() == ["Switchboard", agent]
    assert [name for name, _ in turn.calls()] == tools
    assert turn.outputs()[-1]["response_type"] == response_type
    (text,) = turn.messages()
    assert 15 <= len(text.split()) <= 70


async def test_transactions_last_week_asks_for_a_seven_day_range() -> None:
    turn = await run_turn("show my transactions from last week")
    ((_, arguments),) = turn.calls()
    start, end, _ = date_range("last week", _today())
    assert (arguments["start_date"], arguments["end_date"]) == (start, end)


async def test_a_spending_summary_does_not_offer_the_breakdown_it_just_gave() -> None:
    turn = await run_turn("how much did I spend by category")
    assert turn.outputs()[-1]["response_type"] == "plaid_spending_summary"
    (text,) = turn.messages()
    assert "by category" not in text and "transactions behind" in text


def test_a_connect_card_gets_no_follow_up_offer() -> None:
    card = PastCall(
        "c1",
        "get_spending_summary_at_plaid",
        {},
        f"{NOT_CONNECTED} a bank account. Ask them to connect it.",
    )
    text = summarize(
        Transcript(prompt="how much did I spend", calls=(card,), size=2), [], KNOWLEDGE
    )
    assert text == (
        "I need access to that account first: use the **Connect** button on "
        "the card above, then ask me again."
    )


async def test_near_me_resolves_the_hidden_location_first() -> None:
    turn = await run_turn("find coffee near me")

    location, results = turn.outputs()
    assert location["response_type"] == "user_location"
    assert location["display_response"] is False
    search_args = turn.calls()[1][1]
    assert (search_args["latitude"], search_args["longitude"]) == (
        location["response"]["latitude"],
        location["response"]["longitude"],
    )
    assert results["display_response"] is True
    assert "Boston, MA" in turn.messages()[0]


async def test_search_answer_cites_results() -> None:
    turn = await run_turn("search the web for python asyncio")
    output = turn.outputs()[0]
    assert [chunk["id"] for chunk in output["content_chunks"]] == ["1", "2", "3", "4", "5"]
    assert "[1]" in turn.messages()[0]


async def test_greeting_and_help_are_answered_directly() -> None:
    for prompt in ("hi", "help"):
        turn = await run_turn(prompt)
        assert turn.calls() == []
        assert turn.agents() == ["Switchboard"]
        assert "offline demo model" in turn.messages()[0]


async def test_tool_answers_do_not_mention_the_offline_model() -> None:
    turn = await run_turn("what's in my inbox")
    assert "offline" not in turn.messages()[0].lower()


async def test_stream_is_made_of_real_responses_events() -> None:
    turn = await run_turn("what are my account balances")

    # Three model calls: route, call the tool, answer; each a full Responses event stream.
    assert turn.raw_types.count("response.created") == 3
    assert turn.raw_types.count("response.completed") == 3
    assert turn.raw_types.count("response.function_call_arguments.done") == 2
    message_events = turn.raw_types[turn.raw_types.index("response.content_part.added") - 1 :]
    assert message_events[:2] == ["response.output_item.added", "response.content_part.added"]
    assert message_events[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert len(turn.deltas) > 10  # one word per delta by default
    assert "".join(turn.deltas) == turn.messages()[0]

    usage = turn.result.context_wrapper.usage
    assert usage.requests == 3
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens


async def test_words_per_delta_groups_words() -> None:
    one = await run_turn("what are my account balances")
    four = await run_turn("what are my account balances", provider=_provider(words_per_delta=4))
    assert "".join(four.deltas) == "".join(one.deltas)
    assert len(four.deltas) == -(-len(one.deltas) // 4)


def test_model_knobs_are_validated() -> None:
    with pytest.raises(ValueError):
        OfflineModel(delta_delay=-1)
    with pytest.raises(ValueError):
        OfflineModel(words_per_delta=0)
    model = OfflineModelProvider(delta_delay=0.01, words_per_delta=2).get_model("anything")
    assert isinstance(model, OfflineModel)
    assert (model.delta_delay, model.words_per_delta) == (0.01, 2)


async def test_same_prompt_gives_the_same_events() -> None:
    prompt = "find sushi in Boston and email the list to bob@example.com"
    first, second = await run_turn(prompt), await run_turn(prompt)
    assert first.events == second.events
    assert first.deltas == second.deltas


async def test_second_turn_continues_from_the_first_turn_history() -> None:
    store = DemoStore()
    first = await run_turn(
        "find sushi in Boston and email the list to bob@example.com", store=store
    )
    history = first.result.to_input_list()
    second = await run_turn(
        history + [{"role": "user", "content": "show my sent emails"}], store=store
    )

    assert second.agents() == ["Switchboard", "GMail"]
    ((name, arguments),) = second.calls()
    assert name == "google_email_search" and "in:sent" in arguments["query"]
    subjects = [mail["subject"] for mail in second.outputs()[0]["response"]]
    assert first.calls()[1][1]["subject"] in subjects
    assert second.messages()


async def test_non_streamed_run_uses_get_response() -> None:
    context = ChatContext("user-1", "chat-1", "turn-1", SETTINGS, DemoStore().for_user("user-1"))
    result = await Runner.run(
        build_orchestrator(SETTINGS, CONNECTORS),
        input="what's in my inbox",
        context=context,
        run_config=RunConfig(model_provider=_provider(), tracing_disabled=True),
    )
    assert "inbox" in result.final_output
    assert result.last_agent.name == "GMail"
    assert result.context_wrapper.usage.requests == 3


async def test_every_tool_output_is_a_tool_response() -> None:
    for prompt in (
        "what's in my inbox",
        "find coffee near me",
        "find sushi in Boston and email the list to bob@example.com",
    ):
        for output in (await run_turn(prompt)).outputs():
            assert ToolResponse.from_dict(output).response_type == output["response_type"]


def test_plan_splits_multi_part_requests() -> None:
    assert plan("find sushi in Boston and email the list to bob@example.com") == [
        ("Yelp", "find sushi in Boston"),
        ("GMail", "email the list to bob@example.com"),
    ]
    assert plan("what are my balances and transactions") == [
        ("Plaid", "what are my balances and transactions")
    ]
    assert plan("reply to bob@example.com saying see you then") == [
        ("GMail", "reply to bob@example.com saying see you then")
    ]
    assert plan("who wrote Moby Dick") == [("Search", "who wrote Moby Dick")]


def test_suggestions_and_titles() -> None:
    suggestions = offline_suggestions("find sushi in Boston", ["yelp_search_results"], KNOWLEDGE)
    assert 1 <= len(suggestions) <= 4
    assert suggestions == offline_suggestions(
        "find sushi in Boston", ["yelp_search_results"], KNOWLEDGE
    )
    assert offline_suggestions("hi", [], KNOWLEDGE) != []
    assert (
        len(
            offline_suggestions(
                "x",
                ["google_email_inbox", "plaid_accounts_response", "yelp_search_results", "error"],
                KNOWLEDGE,
            )
        )
        == 4
    )
    assert offline_suggestions("anything", ["unknown_type"], KNOWLEDGE) == []

    assert offline_title("find sushi in Boston", KNOWLEDGE) == "Find sushi in Boston"
    assert offline_title("  please, what's in my inbox?  ", KNOWLEDGE) == "What's in my inbox"
    assert offline_title("", KNOWLEDGE) == "New chat"
    assert (
        offline_title("what are my account balances and my spending this month", KNOWLEDGE)
        == "What are my account balances"
    )
    assert (
        offline_title("show the last ten emails from the team", KNOWLEDGE)
        == "Show the last ten emails"
    )
    assert offline_title("email the list to my friend", KNOWLEDGE) == "Email the list to my friend"
    long_title = offline_title(
        "find me the very best and most wonderful sushi restaurants "
        "in the whole of Boston and then email them to bob@example.com",
        KNOWLEDGE,
    )
    assert len(long_title) <= 48


def _today() -> date:
    return datetime.now(UTC).date()


_PROSE = (
    "the old lighthouse stood on the northern cape where fishermen watched the tides turn "
    "grey under autumn storms while the keeper wrote long letters about the sea"
).split()


def pasted(words: int) -> str:
    """``words`` words of plain prose in paragraphs of 200 (sentences of 20), as pasted."""
    sentences = [
        " ".join(_PROSE[(start + i) % len(_PROSE)] for i in range(20)).capitalize() + "."
        for start in range(0, words, 20)
    ]
    return "\n\n".join(" ".join(sentences[i : i + 10]) for i in range(0, len(sentences), 10))


async def test_a_long_paste_is_neither_searched_nor_echoed() -> None:
    # Issue 33: this became a 31,000-character web search and a 31,000-character answer.
    text = pasted(5000)
    turn = await run_turn(text + "\n\nSummarise this in 3 bullets.")

    assert turn.calls() == [] and turn.agents() == ["Switchboard"]
    (answer,) = turn.messages()
    assert len(answer) <= 1500
    assert "5,005 words" in answer and "offline demo model" in answer
    assert "can't summarise" in answer
    bullets = [line for line in answer.splitlines() if line.startswith("- ")]
    assert len(bullets) == 3 and all(len(line) <= 200 for line in bullets)
    assert all(line.removeprefix("- ").strip("“”…") in text for line in bullets)


async def test_a_search_query_read_from_a_long_prompt_is_cut_at_a_word() -> None:
    words = pasted(150).split()  # under the long-text line: still a search
    turn = await run_turn("search the web for " + " ".join(words))

    ((name, arguments),) = turn.calls()
    query = arguments["query"]
    assert name == "search_google" and 100 <= len(query) <= 200
    assert query.split() == words[: len(query.split())]
    (answer,) = turn.messages()
    assert len(answer) <= 1500


async def test_an_answer_quoting_a_huge_tool_output_is_capped() -> None:
    @function_tool
    def get_report(topic: str) -> str:
        """Get the report on a topic."""
        return topic

    output = json.dumps({"title": "storm " * 20_000, "pages": 3})
    model = _provider().get_model(None)
    response = await model.get_response(
        None,
        [
            {"type": "message", "role": "user", "content": "get the report on storms"},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_report",
                "arguments": '{"topic": "storms"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": output},
        ],
        ModelSettings(),
        [get_report],
        None,
        [],
        ModelTracing.DISABLED,
    )
    (message,) = response.output
    answer = message.content[0].text
    assert answer.startswith("Here's what I found: title storm storm")
    assert len(answer) <= 1500 and answer.endswith("…")
