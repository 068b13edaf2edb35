"""Socket-level demo turns: each connector in a multi-agent turn on a real server, and the
connect-card flow a first-time user sees after disconnecting a demo connector."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.settings import load_settings
from tests.support.clients import open_client
from tests.support.servers import LiveServer, serve
from websocket.protocol import validate_server_event


@pytest.fixture
async def demo_server(database_url: str, tmp_path: Path) -> AsyncIterator[LiveServer]:
    # Local auth, no keys: what `make run` starts.
    async with serve(load_settings(database_url=database_url, data_dir=tmp_path / "data")) as live:
        yield live


async def turn(server: LiveServer, prompt: str) -> list[dict[str, Any]]:
    async with open_client(server.ws_url(uuid.uuid4().hex)) as client:
        return await client.turn(prompt)


def check_order(events: list[dict[str, Any]]) -> None:
    for event in events:
        validate_server_event(event)
    types = [event["type"] for event in events]
    assert types[0] == "user_prompt" and types[-1] == "suggested_prompts"
    assert types[-2] == "end_of_stream" and events[-2]["status"] == "completed"
    seqs = [e["seq"] for e in events if e["seq"] is not None]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    calls = {e["call_id"] for e in events if e["type"] == "tool_call"}
    assert all(e["call_id"] in calls for e in events if e["type"] == "tool_output")


def outputs(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["output"] for e in events if e["type"] == "tool_output"]


def agents(events: list[dict[str, Any]]) -> list[str]:
    return [e["new_agent"] for e in events if e["type"] == "agent_updated"]


async def test_gmail_sends_what_yelp_found(demo_server: LiveServer) -> None:
    events = await turn(demo_server, "find sushi in Boston and email the list to bob@example.com")
    check_order(events)
    assert agents(events) == ["Yelp", "GMail"]
    found, sent = outputs(events)
    assert found["response_type"] == "yelp_search_results"
    assert sent["response_type"] == "send_google_email"
    assert sent["response"]["to"] == ["bob@example.com"]
    assert found["response"][0]["name"] in sent["response"]["body"]
    described = {e["name"]: e["description"] for e in events if e["type"] == "tool_call"}
    assert described["send_google_email"] == "Sending an email"
    # The list was just emailed to Bob: the follow-ups offer what comes next, not that again.
    offered = events[-1]["prompts"]
    assert offered and "Email this list to bob@example.com" not in offered


async def test_plaid_balances_then_an_email(demo_server: LiveServer) -> None:
    events = await turn(demo_server, "show my account balances and email them to dana@example.com")
    check_order(events)
    assert agents(events) == ["Plaid", "GMail"]
    balances, sent = outputs(events)
    assert balances["response_type"] == "plaid_accounts_response"
    assert {a["institution"]["name"] for a in balances["response"]} == {"Chase", "Ally Bank"}
    assert sent["response_type"] == "send_google_email"
    assert "Chase Total Checking" in sent["response"]["body"]


async def test_yelp_near_me_hides_the_location_then_search_cites(demo_server: LiveServer) -> None:
    events = await turn(
        demo_server, "find coffee near me and search the web for how to make cold brew"
    )
    check_order(events)
    assert agents(events) == ["Yelp", "Search"]
    called = [e["name"] for e in events if e["type"] == "tool_call"]
    assert called == ["resolve_user_location", "search_businesses_at_yelp", "search_google"]
    shown = outputs(events)
    assert [o["response_type"] for o in shown] == ["yelp_search_results", "google_search_results"]
    assert all(b["location"]["city"] == "Boston" for b in shown[0]["response"])
    assert shown[1]["content_chunks"][0]["id"] == "1"


async def test_search_results_emailed_with_their_links(demo_server: LiveServer) -> None:
    events = await turn(
        demo_server, "search the web for python asyncio and email the links to bob@example.com"
    )
    check_order(events)
    assert agents(events) == ["Search", "GMail"]
    results, sent = outputs(events)
    assert results["response_type"] == "google_search_results"
    assert results["response"][0]["url"] in sent["response"]["body"]


async def test_a_disconnected_demo_connector_shows_the_connect_card(
    demo_server: LiveServer,
) -> None:
    async with httpx.AsyncClient(base_url=demo_server.http) as client:
        first = await turn(demo_server, "what's in my inbox?")
        assert outputs(first)[0]["response_type"] == "google_email_inbox"

        assert (await client.delete("/api/connectors/gmail")).status_code == 200
        events = await turn(demo_server, "what's in my inbox?")
        check_order(events)
        (card,) = outputs(events)
        assert card["response_type"] == "google_account_needed"
        assert card["response"]["connector"] == "gmail"
        # What the model reads is the card's plain text, which asks for the connection,
        # and the answer says so instead of reporting an empty inbox.
        assert agents(events) == ["GMail"]
        answer = next(e["text"] for e in events if e["type"] == "llm_response")
        assert "Connect" in answer and "didn't find" not in answer

        bank = await turn(demo_server, "what did I spend on food this month?")
        # Others unaffected; spending on one thing is its transactions (the total in the answer).
        assert outputs(bank)[0]["response_type"] == "plaid_transactions_response"

        assert (await client.post("/api/connectors/gmail/connect")).json()["status"] == "connected"
        again = await turn(demo_server, "what's in my inbox?")
        assert outputs(again)[0]["response_type"] == "google_email_inbox"
