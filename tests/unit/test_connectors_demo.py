"""Demo connectors, the tooling wrapper, the registry and the orchestrator's hand-off graph."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from agents import Agent, FunctionTool, Handoff, RunConfig, RunContextWrapper, Runner
from agents.items import ToolCallItem, ToolCallOutputItem
from agents.stream_events import RunItemStreamEvent
from agents.tool_context import ToolContext
from openai.types.responses import ResponseFunctionToolCall

from app.llm.offline import OfflineModelProvider
from app.settings import Settings
from connectors.adapters import coerce_tool_output, coerce_tool_response, to_plain_text
from connectors.context import ChatContext, DemoStore
from connectors.orchestrator import ORCHESTRATOR_NAME, build_orchestrator
from connectors.registry import Connector, load_connectors, tool_descriptions
from connectors.responses import TextResponse, ToolResponse
from connectors.tooling import ToolError, ToolResult, connector_tool
from connectors.yelp.demo_businesses import all_businesses, reviews
from websocket.stream import StreamTranslator
from wire.tool_response import ToolResponseData

SETTINGS = Settings()
CONNECTORS = load_connectors(SETTINGS)
BY_NAME = {connector.name: connector for connector in CONNECTORS}


def context(store: DemoStore | None = None, user: str = "user-1") -> ChatContext:
    store = store or DemoStore()
    return ChatContext(
        user_id=user,
        chat_id="chat-1",
        turn_id="turn-1",
        settings=SETTINGS,
        demo=store.for_user(user),
    )


def tool(connector: str, name: str) -> FunctionTool:
    agent = BY_NAME[connector].build_agent(SETTINGS)
    return next(t for t in agent.tools if isinstance(t, FunctionTool) and t.name == name)


async def invoke(
    connector: str, name: str, ctx: ChatContext | None = None, **arguments: Any
) -> dict[str, Any]:
    """Call a tool the way the SDK does (JSON arguments in, tool output out)."""
    function = tool(connector, name)
    payload = json.dumps(arguments)
    output = await function.on_invoke_tool(
        ToolContext(
            ctx or context(), tool_name=name, tool_call_id="call-1", tool_arguments=payload
        ),
        payload,
    )
    assert isinstance(output, dict)
    assert ToolResponse.is_tool_response(output)
    ToolResponse.from_dict(output)  # valid
    assert output["response_type"] in BY_NAME[connector].response_types
    return output


def today() -> date:
    return datetime.now(UTC).date()


# ----------------------------------------------------------------------------- registry


def test_builtins_load_in_a_fixed_order_with_their_metadata() -> None:
    assert [c.name for c in CONNECTORS] == ["gmail", "plaid", "yelp", "search"]
    assert [c.agent_name for c in CONNECTORS] == ["GMail", "Plaid", "Yelp", "Search"]
    for connector in CONNECTORS:
        agent = connector.build_agent(SETTINGS)
        assert agent.name == connector.agent_name
        names = {t.name for t in agent.tools}
        assert names == set(connector.tool_descriptions), connector.name
        assert "error" in connector.response_types
    assert tool_descriptions(CONNECTORS)["search_businesses_at_yelp"] == "Searching Yelp"


# ----------------------------------------------------------------------------- orchestrator


async def test_handoff_graph_is_complete_and_named_by_the_sdk_default() -> None:
    orchestrator = build_orchestrator(SETTINGS, CONNECTORS)
    assert orchestrator.name == ORCHESTRATOR_NAME
    specialists = [h for h in orchestrator.handoffs if isinstance(h, Agent)]
    assert [Handoff.default_tool_name(agent) for agent in specialists] == [
        "transfer_to_gmail",
        "transfer_to_plaid",
        "transfer_to_yelp",
        "transfer_to_search",
    ]
    for agent in specialists:
        peers = {peer.name for peer in agent.handoffs if isinstance(peer, Agent)}
        assert peers == {a.name for a in specialists} - {agent.name}
        # The peers are the very same objects: one graph, not copies.
        assert all(any(peer is s for s in specialists) for peer in agent.handoffs)

    wrapper = RunContextWrapper(context())
    gmail = specialists[0]
    prompt = await gmail.get_system_prompt(wrapper)
    assert prompt is not None
    assert "transfer_to_yelp" in prompt and "transfer_to_gmail" not in prompt
    assert today().isoformat() in prompt
    routing = await orchestrator.get_system_prompt(wrapper)
    assert routing is not None and "transfer_to_search" in routing


# ----------------------------------------------------------------------------- context


def test_demo_store_keeps_one_state_per_user_and_forgets_the_oldest() -> None:
    store = DemoStore(max_users=2)
    alice = store.for_user("alice")
    assert store.for_user("alice") is alice
    alice.namespace("gmail")["x"] = 1
    store.for_user("bob")
    store.for_user("alice")  # recently used again
    store.for_user("carol")  # evicts bob, the least recently used
    assert store.for_user("alice").namespace("gmail") == {"x": 1}
    assert store.for_user("bob").namespaces == {}


# ----------------------------------------------------------------------------- gmail


async def test_inbox_items_have_the_seed_shape() -> None:
    output = await invoke("gmail", "google_email_inbox", max_results=5)
    assert output["response_type"] == "google_email_inbox"
    assert len(output["response"]) == 5
    for mail in output["response"]:
        assert list(mail) == [
            "subject",
            "from",
            "to",
            "markdown",
            "text",
            "unread",
            "id",
            "thread_id",
            "reply_to_id",
            "cc",
            "bcc",
            "date",
        ]
        assert mail["from"] != "me@example.com"
        datetime.fromisoformat(mail["date"])
    dates = [mail["date"] for mail in output["response"]]
    assert dates == sorted(dates, reverse=True)


async def test_gmail_search_syntax() -> None:
    ctx = context()

    async def search(query: str) -> list[dict[str, Any]]:
        return (await invoke("gmail", "google_email_search", ctx, query=query, max_results=50))[
            "response"
        ]

    from_alice = await search("from:alice.chen")
    assert from_alice and all("alice.chen" in m["from"] for m in from_alice)
    assert all(m["unread"] for m in await search("is:unread"))
    thread = await search('subject:"launch checklist"')
    assert len(thread) == 3 and len({m["thread_id"] for m in thread}) == 1
    assert {m["subject"].removeprefix("Re: ") for m in thread} == {
        "Project Atlas: launch checklist"
    }
    assert all("budget" in (m["subject"] + m["text"]).lower() for m in await search("budget"))
    assert not any("alice" in m["from"] for m in await search("atlas -from:alice"))
    assert all(m["from"] == "me@example.com" for m in await search("in:sent"))
    assert await search("zzz-no-such-word") == []


async def test_sent_mail_is_stored_per_user_and_searchable_in_sent() -> None:
    store = DemoStore()
    alice, bob = context(store, "alice"), context(store, "bob")
    sent = await invoke(
        "gmail",
        "send_google_email",
        alice,
        to=["carol@example.org"],
        subject="Lunch plans",
        body="Noon at the usual place?",
        cc=None,
        bcc=None,
    )
    assert sent["response"] == {
        "to": ["carol@example.org"],
        "cc": [],
        "bcc": [],
        "subject": "Lunch plans",
        "body": "Noon at the usual place?",
    }

    found = await invoke(
        "gmail", "google_email_search", alice, query="in:sent lunch", max_results=10
    )
    assert [m["subject"] for m in found["response"]] == ["Lunch plans"]
    other = await invoke("gmail", "google_email_search", bob, query="in:sent lunch", max_results=10)
    assert other["response"] == []


async def test_read_marks_a_message_read_and_reply_threads() -> None:
    ctx = context()
    inbox = (await invoke("gmail", "google_email_inbox", ctx, max_results=50))["response"]
    unread = next(m for m in inbox if m["unread"])
    opened = await invoke("gmail", "read_google_email", ctx, message_id=unread["id"])
    assert opened["response_type"] == "google_email_message"
    assert opened["response"]["id"] == unread["id"]
    assert opened["display_as"][0]["type"] == "markdown"
    again = (await invoke("gmail", "google_email_inbox", ctx, max_results=50))["response"]
    assert next(m for m in again if m["id"] == unread["id"])["unread"] is False

    reply = await invoke(
        "gmail", "reply_to_google_email", ctx, message_id=unread["id"], body="Thanks!"
    )
    assert reply["response"]["to"] == [unread["from"]]
    assert reply["response"]["subject"].startswith("Re: ")
    assert reply["response"]["thread_id"] == unread["thread_id"]


async def test_gmail_errors_are_actionable() -> None:
    missing = await invoke("gmail", "read_google_email", message_id="nope")
    assert missing["response_type"] == "error"
    assert missing["error_message"].startswith("Error: no email with id 'nope'")
    bad = await invoke(
        "gmail", "send_google_email", to=["bob"], subject="x", body="y", cc=None, bcc=None
    )
    assert "not a valid email address" in bad["error_message"]
    sender = await invoke("gmail", "google_email_search_from_email", email="bob@example.com")
    assert sender["response"] == []


# ----------------------------------------------------------------------------- plaid


async def test_accounts_have_plaid_shape() -> None:
    output = await invoke("plaid", "get_accounts_at_plaid")
    accounts = output["response"]
    assert len(accounts) == 5
    assert {a["institution"]["name"] for a in accounts} == {"Chase", "Ally Bank"}
    for account in accounts:
        assert {
            "account_id",
            "name",
            "official_name",
            "type",
            "subtype",
            "mask",
            "balances",
            "institution",
        } <= set(account)
        assert {"available", "current", "iso_currency_code"} <= set(account["balances"])


async def test_transactions_have_the_seed_shape_and_are_deterministic() -> None:
    output = await invoke(
        "plaid", "get_transactions_at_plaid", start_date=None, end_date=None, account_id=None
    )
    assert output["response"] == (await invoke("plaid", "get_transactions_at_plaid"))["response"]
    start = (today() - timedelta(days=29)).isoformat()
    for account in output["response"].values():
        assert list(account) == ["account_name", "account_official_name", "transactions"]
        for txn in account["transactions"]:
            assert list(txn) == ["date", "amount", "name", "category", "pending"]
            assert txn["date"].endswith("T00:00:00") and txn["date"][:10] >= start
            assert isinstance(txn["category"], list) and txn["category"]
    assert sum(len(a["transactions"]) for a in output["response"].values()) > 30


async def test_transactions_filter_and_validate() -> None:
    accounts = (await invoke("plaid", "get_accounts_at_plaid"))["response"]
    card = next(a for a in accounts if a["type"] == "credit")
    week_ago = (today() - timedelta(days=7)).isoformat()
    output = await invoke(
        "plaid",
        "get_transactions_at_plaid",
        start_date=week_ago,
        end_date=today().isoformat(),
        account_id=card["account_id"],
    )
    assert list(output["response"]) == [card["account_id"]]
    assert all(
        t["date"][:10] >= week_ago for t in output["response"][card["account_id"]]["transactions"]
    )

    bad_date = await invoke("plaid", "get_transactions_at_plaid", start_date="last tuesday")
    assert "use YYYY-MM-DD" in bad_date["error_message"]
    unknown = await invoke("plaid", "get_transactions_at_plaid", account_id="nope")
    assert "get_accounts_at_plaid" in unknown["error_message"]
    swapped = await invoke(
        "plaid", "get_transactions_at_plaid", start_date=today().isoformat(), end_date=week_ago
    )
    assert "after end_date" in swapped["error_message"]


async def test_transactions_filtered_by_merchant_or_category() -> None:
    everything = (await invoke("plaid", "get_transactions_at_plaid"))["response"]
    every = [t for account in everything.values() for t in account["transactions"]]
    coffee = (await invoke("plaid", "get_transactions_at_plaid", query="Coffee"))["response"]
    kept = [t for account in coffee.values() for t in account["transactions"]]
    # Case does not matter; a category level counts ("TATTE BAKERY & CAFE" is a coffee shop).
    assert kept and len(kept) < len(every)
    assert all(any("coffee" in f.lower() for f in [t["name"], *t["category"]]) for t in kept)
    assert any("coffee" not in t["name"].lower() for t in kept)
    assert kept == [
        t for t in every if any("coffee" in f.lower() for f in [t["name"], *t["category"]])
    ]
    # A plural finds the singular, and accounts with nothing that matches are left out.
    restaurants = await invoke("plaid", "get_transactions_at_plaid", query="restaurants")
    assert all(account["transactions"] for account in restaurants["response"].values())
    nothing = await invoke("plaid", "get_transactions_at_plaid", query="no such merchant")
    assert nothing["response"] == {}


async def test_spending_summary_totals_categories() -> None:
    output = await invoke("plaid", "get_spending_summary_at_plaid", days=30)
    summary = output["response"]
    assert summary["total_spent"] == pytest.approx(
        sum(c["amount"] for c in summary["categories"]), abs=0.05
    )
    assert not {"Transfer", "Payment"} & {c["category"] for c in summary["categories"]}
    amounts = [c["amount"] for c in summary["categories"]]
    assert amounts == sorted(amounts, reverse=True)
    assert output["display_as"][0]["type"] == "markdown"
    too_long = await invoke("plaid", "get_spending_summary_at_plaid", days=400)
    assert too_long["response_type"] == "error"


# ----------------------------------------------------------------------------- yelp


async def test_yelp_search_results_have_the_fusion_shape() -> None:
    output = await invoke("yelp", "search_businesses_at_yelp", term="sushi", location="Boston, MA")
    assert output["friendly_name"] == "Searching Yelp for sushi in Boston, MA"
    businesses = output["response"]
    assert 1 <= len(businesses) <= 5
    for business in businesses:
        assert {
            "id",
            "alias",
            "name",
            "image_url",
            "url",
            "review_count",
            "rating",
            "price",
            "location",
            "coordinates",
            "categories",
            "phone",
            "is_closed",
            "distance",
        } <= set(business)
        assert business["location"]["city"] == "Boston"
        assert business["categories"][0]["alias"] == "sushi"
        assert not any(key.startswith("_") for key in business)


@pytest.mark.parametrize("city", ["San Francisco", "New York", "Chicago", "Austin", "Boston"])
async def test_every_city_has_several_cuisines(city: str) -> None:
    for term in ("pizza", "coffee", "tacos"):
        output = await invoke("yelp", "search_businesses_at_yelp", term=term, location=city)
        assert len(output["response"]) >= 3, (city, term)


async def test_yelp_filters_and_sorting() -> None:
    cheap = await invoke(
        "yelp",
        "search_businesses_at_yelp",
        term="restaurants",
        location="Austin, TX",
        price="1",
        limit=20,
    )
    assert cheap["response"] and all(b["price"] == "$" for b in cheap["response"])
    nearest = await invoke(
        "yelp",
        "search_businesses_at_yelp",
        term="food",
        latitude=41.88,
        longitude=-87.63,
        sort_by="distance",
        limit=10,
    )
    distances = [b["distance"] for b in nearest["response"]]
    assert distances == sorted(distances)
    assert nearest["response"][0]["location"]["city"] == "Chicago"
    rated = await invoke(
        "yelp", "search_businesses_at_yelp", term="pizza", location="NYC", sort_by="rating"
    )
    ratings = [b["rating"] for b in rated["response"]]
    assert ratings == sorted(ratings, reverse=True)
    open_now = await invoke(
        "yelp",
        "search_businesses_at_yelp",
        term="coffee",
        location="Boston",
        open_now=True,
        limit=20,
    )
    assert all(b["business_hours"][0]["is_open_now"] for b in open_now["response"])


async def test_yelp_reviews_and_errors() -> None:
    business = (
        await invoke("yelp", "search_businesses_at_yelp", term="ramen", location="Chicago")
    )["response"][0]
    reviews = await invoke("yelp", "get_business_reviews_at_yelp", business_id=business["id"])
    assert len(reviews["response"]) == 3
    for review in reviews["response"]:
        assert {"id", "rating", "text", "time_created", "user"} <= set(review)
        assert review["user"]["name"]
    by_alias = await invoke("yelp", "get_business_reviews_at_yelp", business_id=business["alias"])
    assert by_alias["response"] == reviews["response"]

    nowhere = await invoke("yelp", "search_businesses_at_yelp", term="sushi", location="Paris")
    assert "the demo covers" in nowhere["error_message"]
    unknown = await invoke("yelp", "get_business_reviews_at_yelp", business_id="nope")
    assert "search Yelp first" in unknown["error_message"]


def test_no_two_reviews_of_a_place_share_a_sentence() -> None:
    for business in all_businesses():
        sentences = [
            sentence
            for review in reviews(business, date(2026, 11, 23))
            for sentence in review["text"].split(". ")
        ]
        assert len(sentences) == len(set(sentences)), (business["name"], sentences)


async def test_user_location_is_hidden() -> None:
    output = await invoke("yelp", "resolve_user_location", hint=None)
    assert output["display_response"] is False
    assert output["response"]["display"] == "Boston, MA"
    hinted = await invoke("yelp", "resolve_user_location", hint="downtown Austin")
    assert hinted["response"]["city"] == "Austin"


# ----------------------------------------------------------------------------- search


async def test_search_results_carry_citations() -> None:
    output = await invoke("search", "search_google", query="python asyncio", num_results=3)
    assert [r["display_link"] for r in output["response"]][0] == "docs.python.org"
    assert output["content_chunks"] == [
        {"id": str(n), "title": r["title"], "url": r["url"], "snippet": r["snippet"]}
        for n, r in enumerate(output["response"], 1)
    ]
    fallback = await invoke("search", "search_google", query="history of the bicycle")
    assert len(fallback["response"]) == 5
    assert fallback == await invoke("search", "search_google", query="history of the bicycle")
    assert "Bicycle" in fallback["response"][0]["title"]


# ----------------------------------------------------------------------------- tooling


async def test_the_model_reads_plain_text_while_the_output_stays_a_dict() -> None:
    output = await invoke("yelp", "search_businesses_at_yelp", term="sushi", location="Boston")
    assert isinstance(output, ToolResult)
    assert str(output) == to_plain_text(dict(output))
    assert not str(output).lstrip().startswith("{")
    assert json.loads(json.dumps(output)) == dict(output)  # still plain JSON for the socket


@connector_tool(agent_name="Flaky", side_effect=False)
async def check_flaky(ctx: RunContextWrapper[ChatContext], query: str) -> ToolResponse:
    """A plug-in tool that always fails with a secret in its exception.

    Args:
        query: Anything.
    """
    raise RuntimeError("database password hunter2 rejected")


@connector_tool(agent_name="Flaky", timeout=0.01)
async def slow_tool(ctx: RunContextWrapper[ChatContext]) -> ToolResponse:
    """Never finishes in time."""
    await asyncio.sleep(5)
    raise AssertionError("unreachable")


@connector_tool(agent_name="Flaky")
async def refusing_tool(ctx: RunContextWrapper[ChatContext], name: str) -> ToolResponse:
    """Raises a ToolError with advice.

    Args:
        name: Anything.
    """
    raise ToolError("the widget is offline; try again after 5 minutes")


async def _call(function: FunctionTool, arguments: str) -> Any:
    return await function.on_invoke_tool(
        ToolContext(context(), tool_name=function.name, tool_call_id="c", tool_arguments=arguments),
        arguments,
    )


async def test_tool_failures_become_error_responses(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        crashed = await _call(check_flaky, '{"query": "x"}')
    assert crashed["response_type"] == "error" and crashed["agent_name"] == "Flaky"
    assert crashed["error_message"].startswith("Error: check_flaky failed unexpectedly")
    assert "hunter2" not in json.dumps(crashed) and "hunter2" not in str(crashed)
    assert "hunter2" in caplog.text  # the stack trace goes to the server log only

    timed_out = await _call(slow_tool, "{}")
    assert timed_out["error_message"].startswith("Error: slow_tool timed out")
    refused = await _call(refusing_tool, '{"name": "x"}')
    assert refused["error_message"] == "Error: the widget is offline; try again after 5 minutes"
    bad_arguments = await _call(refusing_tool, '{"nom": 1}')
    assert bad_arguments["response_type"] == "error"
    assert "could not call refusing_tool" in str(bad_arguments)


def test_sync_tools_are_refused() -> None:
    def sync_tool(ctx: RunContextWrapper[ChatContext]) -> ToolResponse:  # pragma: no cover
        raise AssertionError

    with pytest.raises(TypeError, match="must be an async function"):
        connector_tool(sync_tool, agent_name="X")  # type: ignore[arg-type]


async def test_a_failing_tool_does_not_end_the_turn() -> None:
    flaky = Connector(
        name="flaky",
        agent_name="Flaky",
        display_name="Flaky",
        build_agent=lambda settings: Agent[ChatContext](
            name="Flaky", handoff_description="Checks flaky things.", tools=[check_flaky]
        ),
        tool_descriptions={"check_flaky": "Checking"},
        response_types=("error",),
    )
    orchestrator = build_orchestrator(SETTINGS, [*CONNECTORS, flaky])
    result = Runner.run_streamed(
        orchestrator,
        input="ask Flaky to check the weather",
        context=context(),
        run_config=RunConfig(model_provider=OfflineModelProvider(), tracing_disabled=True),
    )
    outputs = []
    async for event in result.stream_events():
        if event.type == "run_item_stream_event" and event.name == "tool_output":
            outputs.append((event.item.output, event.item.raw_item["output"]))
    ((output, model_text),) = outputs
    assert output["response_type"] == "error"
    assert model_text.startswith("Error: check_flaky failed unexpectedly")
    assert result.final_output and "couldn't" in result.final_output
    assert "hunter2" not in result.final_output


async def test_a_tool_error_is_explained_in_the_answer() -> None:
    provider = OfflineModelProvider(connectors=CONNECTORS)  # it knows their offline hints
    result = await Runner.run(
        build_orchestrator(SETTINGS, CONNECTORS),
        input="find sushi in Paris",
        context=context(),
        run_config=RunConfig(model_provider=provider, tracing_disabled=True),
    )
    assert "the demo covers" in result.final_output


@connector_tool(agent_name="Flaky")
async def sloppy_tool(ctx: RunContextWrapper[ChatContext], kind: str) -> Any:
    """Returns whatever it is asked to.

    Args:
        kind: dict, bad or text.
    """
    if kind == "dict":
        return {
            "response_type": "text",
            "agent_name": "Flaky",
            "friendly_name": "Note",
            "response": "hello",
            "debug_info": {"took_ms": 3},
        }
    if kind == "bad":
        return {"response_type": "", "agent_name": "Flaky", "friendly_name": "x", "response": "y"}
    return "just a string"


async def test_tool_return_values_are_checked() -> None:
    good = await _call(sloppy_tool, '{"kind": "dict"}')
    assert good["response"] == "hello" and good["debug_info"] == {"took_ms": 3}
    assert "took_ms" not in str(good)  # persisted for the owner, never shown to the model
    for kind in ("bad", "text"):
        result = await _call(sloppy_tool, json.dumps({"kind": kind}))
        assert result["error_message"] == (
            "Error: sloppy_tool returned an invalid result; try another way"
        )


SHARED_NOTE = TextResponse("Flaky", "a note")


@connector_tool(agent_name="Flaky", side_effect=False)
async def built_tool(ctx: RunContextWrapper[ChatContext]) -> ToolResponse:
    """Returns a response it built."""
    return SHARED_NOTE


async def test_a_built_response_is_not_validated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    def validated_again(*args: Any) -> Any:
        raise AssertionError("a built response was validated again")

    monkeypatch.setattr(ToolResponseData, "model_validate", validated_again)
    result = await _call(built_tool, "{}")
    assert isinstance(result, ToolResult) and result.tool_response is SHARED_NOTE
    assert dict(result) == SHARED_NOTE.to_dict(include_debug=True)
    # Nor on its way to the socket and the Open Responses stream.
    assert coerce_tool_response(result, "Flaky") is SHARED_NOTE
    assert coerce_tool_output(result, "Flaky") == dict(result)


@connector_tool(agent_name="Flaky")
async def unbounded_tool(ctx: RunContextWrapper[ChatContext]) -> ToolResponse:
    """Sets no timeout of its own, and never finishes."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def test_a_tool_without_its_own_timeout_gets_the_settings_one() -> None:
    tool_context = ToolContext(
        replace(context(), settings=SETTINGS.model_copy(update={"tool_timeout": 0.01})),
        tool_name=unbounded_tool.name,
        tool_call_id="c",
        tool_arguments="{}",
    )
    # wait_for: without the settings' limit the call would never end; fail, don't hang.
    timed_out = await asyncio.wait_for(unbounded_tool.on_invoke_tool(tool_context, "{}"), 30)
    assert timed_out["response_type"] == "error"
    assert timed_out["error_message"].startswith("Error: unbounded_tool timed out")
    assert timed_out["debug_info"] == {
        "tool": "unbounded_tool",
        "timeout_seconds": 0.01,
        "error_code": "tool_timeout",
    }
    # On the socket: the card, then an error the client may retry (as for a RAP timeout).
    translator = StreamTranslator("Switchboard", {}, {})
    agent = Agent(name="Flaky")
    call = ResponseFunctionToolCall(
        type="function_call", name="unbounded_tool", arguments="{}", call_id="c1", id="fc_1"
    )
    translator.translate(
        RunItemStreamEvent(name="tool_called", item=ToolCallItem(agent=agent, raw_item=call))
    )
    raw = {"type": "function_call_output", "call_id": "c1", "output": str(timed_out)}
    events = translator.translate(
        RunItemStreamEvent(
            name="tool_output",
            item=ToolCallOutputItem(agent=agent, raw_item=raw, output=timed_out),
        )
    )
    error = events[-1].payload()
    assert [e.type for e in events] == ["tool_output", "error"]
    assert (error["code"], error["retryable"]) == ("tool_timeout", True)
