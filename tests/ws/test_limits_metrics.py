"""Rate limits answer ``rate_limited`` and start nothing; /metrics tells what happened."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.support.clients import open_client
from tests.support.servers import serve
from websocket.limits import PromptRateLimiter


def test_the_prompt_window_slides() -> None:
    limiter = PromptRateLimiter(per_minute=2)
    assert limiter.allow("u", now=0.0) is None
    assert limiter.allow("u", now=10.0) is None
    assert limiter.allow("u", now=20.0) == 40.0  # the first prompt leaves the window at 60
    assert limiter.allow("other", now=20.0) is None  # per user
    assert limiter.allow("u", now=60.0) is None


async def test_too_many_prompts_a_minute_are_refused(make_settings: Any) -> None:
    async with serve(make_settings(prompts_per_minute=2)) as live:
        chat_id = uuid.uuid4().hex
        async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
            await client.turn("what's in my inbox")
            await client.turn("what are my account balances")
            await client.send({"type": "prompt", "text": "search the web for tea"})
            refusal = await client.recv()
        assert refusal["type"] == "error" and refusal["code"] == "rate_limited"
        assert refusal["retryable"] is True and refusal["seq"] is None
        async with live.client() as http:
            turns = (await http.get(f"/api/chats/{chat_id}")).json()["turns"]
        assert len(turns) == 2


async def test_turns_in_flight_per_user_are_limited(make_settings: Any) -> None:
    async with serve(make_settings(max_turns_per_user=1, offline_delta_delay=0.02)) as live:
        async with (
            open_client(live.ws_url(uuid.uuid4().hex), auto_approve=True) as first,
            open_client(live.ws_url(uuid.uuid4().hex), auto_approve=True) as second,
        ):
            await first.send({"type": "prompt", "text": "search the web for python asyncio"})
            await first.until("user_prompt")
            await second.send({"type": "prompt", "text": "what's in my inbox"})
            refusal = await second.recv()
            assert refusal["code"] == "rate_limited"
            await first.until("end_of_stream")
            await first.until("suggested_prompts")
            events = await second.turn("what's in my inbox")  # free again
            assert events[0]["type"] == "user_prompt"


def sample(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in metrics")


async def test_metrics_count_sockets_turns_events_and_tools(server: Any) -> None:
    async with open_client(server.ws_url(uuid.uuid4().hex), auto_approve=True) as client:
        events = await client.turn("find sushi in Boston and email the list to bob@example.com")
        async with httpx.AsyncClient(base_url=server.http) as http:
            during = (await http.get("/metrics")).text
    async with httpx.AsyncClient(base_url=server.http) as http:
        response = await http.get("/metrics")
    after = response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert sample(during, "switchboard_sockets_open") == 1
    assert sample(after, "switchboard_sockets_open") == 0
    assert sample(after, 'switchboard_turns_total{status="completed"}') == 1
    assert sample(after, "switchboard_turn_seconds_count") == 1
    assert sample(after, "switchboard_events_sent_total") >= len(events)
    persisted = len([e for e in events if e["seq"] is not None])
    assert sample(after, "switchboard_events_persisted_total") == persisted
    assert sample(after, 'switchboard_tool_calls_total{agent="Yelp",outcome="ok"}') == 1
    assert sample(after, 'switchboard_tool_calls_total{agent="GMail",outcome="ok"}') == 1
    assert sample(after, "switchboard_turns_running") == 0
