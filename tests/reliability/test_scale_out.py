"""Two real server processes on one PostgreSQL and one Redis behave as one server: the
tests that need a pair of their own (paced, killed, or behind a Redis proxy). Those that
can share one pair are in ``test_scale_out_shared_pair.py``."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.support.clients import open_client
from tests.support.processes import readiness
from tests.support.proxies import DroppingProxy
from tests.support.waiting import wait_until

# Two agents, two tools, a streamed answer, and nothing that waits for an approval
# (tests/ws/test_approvals.py and test_approval_faults.py cover those).
MULTI_AGENT = "find sushi in Boston and show my account balances"
EPHEMERAL = {"llm_response_delta", "pong"}
EMAIL = "find sushi in Boston and email the list to bob@example.com"

# Run on PostgreSQL only: several processes on one SQLite file is not a deployment we offer.
pytestmark = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)


def persisted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] not in EPHEMERAL]


@pytest.fixture
def slow_pair(servers: Any, database_url: str, redis_url: str) -> tuple[Any, Any]:
    """A pair whose offline model writes a word every quarter second: a resume that starts
    after the first word lands while the answer is still being written, with seconds to
    spare on a loaded machine (at 10 ms a word the answer could end before the second
    socket had opened, and nothing would be left to resume mid-message)."""
    first = servers(database_url, redis_url=redis_url, offline_delta_delay=0.25)
    second = servers(database_url, redis_url=redis_url, offline_delta_delay=0.25)
    first.start()
    second.start()
    return first, second


async def test_resume_on_the_other_instance_mid_turn_misses_nothing(slow_pair: Any) -> None:
    first, second = slow_pair
    chat_id = uuid.uuid4().hex
    async with open_client(first.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        before = await client.until("llm_response_delta")
    last_seq = max(e["seq"] for e in before if e["seq"] is not None)
    async with open_client(second.ws_url(chat_id, after_seq=last_seq), auto_approve=True) as client:
        after = await client.until("end_of_stream")
    async with httpx.AsyncClient(base_url=first.http) as http:
        stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]

    seen = persisted(before) + persisted(after)
    assert seen == stored[: len(seen)] and seen[-1]["type"] == "end_of_stream"
    # The first delta after the resume redraws the message so far; the rest extend it.
    final = next(e for e in after if e["type"] == "llm_response")["text"]
    resumed = [e["delta"] for e in after if e["type"] == "llm_response_delta"]
    assert resumed and "".join(resumed) == final
    streamed_before = "".join(e["delta"] for e in before if e["type"] == "llm_response_delta")
    assert resumed[0].startswith(streamed_before)


async def test_an_orphaned_turn_is_closed_when_its_lease_expires(
    servers: Any, database_url: str, redis_url: str
) -> None:
    first = servers(
        database_url, redis_url=redis_url, offline_delta_delay=0.05, turn_lease_seconds=1
    )
    second = servers(database_url, redis_url=redis_url, turn_lease_seconds=1)
    first.start()
    second.start()
    chat_id = uuid.uuid4().hex
    async with open_client(first.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        await client.until("llm_response_delta")
        first.kill()
    async with open_client(second.ws_url(chat_id, after_seq=0), auto_approve=True) as client:
        # Nobody prompts: the lease expires and the second instance's sweep ends the turn.
        events = await client.until("end_of_stream", within=30)
        await client.send({"type": "prompt", "text": "what's in my inbox"})
        events += await client.until("end_of_stream")  # the new turn's
    ends = [e for e in events if e["type"] == "end_of_stream"]
    assert [e["status"] for e in ends] == ["failed", "completed"]
    assert [e["seq"] for e in persisted(events)] == list(range(1, len(persisted(events)) + 1))


async def test_a_socket_resumed_while_redis_is_away_gets_the_turn_once_it_is_back(
    servers: Any, database_url: str, redis_proxy: tuple[DroppingProxy, str]
) -> None:
    """A socket that resumes on another instance while Redis is away, with nothing new to
    replay, catches up from storage when Redis comes back: the turn it follows may have
    ended meanwhile, its frames lost on the way."""
    proxy, via_proxy = redis_proxy
    first = servers(database_url, redis_url=via_proxy, offline_delta_delay=0.01)
    second = servers(database_url, redis_url=via_proxy, offline_delta_delay=0.01)
    first.start()
    second.start()
    chat_id = uuid.uuid4().hex
    async with open_client(first.ws_url(chat_id)) as here:
        await here.send({"type": "prompt", "text": EMAIL})
        asked = (await here.until("approval_required"))[-1]
        proxy.refusing = True
        proxy.drop()
        for server in (first, second):
            await wait_until(
                lambda s=server: redis_state(s, "unreachable"), what="redis unreachable"
            )
        async with open_client(second.ws_url(chat_id, after_seq=asked["seq"])) as there:
            await there.send({"type": "ping"})
            await there.until("pong")  # replayed (nothing) and following the chat
            await here.decide(asked["approval_id"])
            ended = await here.until("end_of_stream")  # published to no one
            proxy.refusing = False
            resumed = await there.until("end_of_stream", within=60)
    assert persisted(resumed) == persisted(ended)


async def redis_state(server: Any, state: str) -> bool:
    return (await readiness(server)).get("redis") == state
