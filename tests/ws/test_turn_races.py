"""One turn per chat in one process, whatever the timing: races driven by barriers.

The barriers sit in the real ``EventStore`` of a real server (a lifespan hook wraps its
methods): a test holds a turn exactly where the race is (its end committed but not yet
published, say) and lets the next prompt in there, so each race happens every time.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from app.services import Services
from storage.records import EventRecord
from tests.support.chat_log import check_chat_log
from tests.support.clients import open_client
from tests.support.servers import LiveServer, serve
from tests.support.waiting import wait_until

MULTI_AGENT = "find sushi in Boston and show my account balances"


class EndBarrier:
    """Holds the first turn whose ``end_of_stream`` commits, between the commit and its
    publication, until ``release``; ``started`` is set when a later turn is created."""

    def __init__(self) -> None:
        self.end_committed = asyncio.Event()
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.held: str | None = None

    def hook(self) -> Callable[[Services], Any]:
        barrier = self

        @asynccontextmanager
        async def install(services: Services) -> AsyncIterator[None]:
            store = services.store
            append, start_turn = store.append, store.start_turn

            async def held_append(
                chat_id: str, events: Any, update: Any = None, **fences: Any
            ) -> list[EventRecord]:
                records = await append(chat_id, events, update, **fences)
                if barrier.held is None and any(r.type == "end_of_stream" for r in records):
                    barrier.held = records[-1].turn_id
                    barrier.end_committed.set()
                    await barrier.release.wait()
                return records

            async def noted_start(*args: Any, **kwargs: Any) -> Any:
                turn, event, created = await start_turn(*args, **kwargs)
                if created and barrier.held is not None:
                    barrier.started.set()
                return turn, event, created

            store.append, store.start_turn = held_append, noted_start  # type: ignore[method-assign]
            yield

        return install


async def stored(live: LiveServer, chat_id: str) -> list[dict[str, Any]]:
    async with live.client() as http:
        return list((await http.get(f"/api/chats/{chat_id}/events")).json()["events"])


async def test_a_prompt_while_the_last_turn_saves_its_end_starts_a_turn_that_stays_whole(
    make_settings: Any,
) -> None:
    barrier = EndBarrier()
    async with serve(make_settings(offline_delta_delay=0.02), hooks=(barrier.hook(),)) as live:
        chat_id = uuid.uuid4().hex
        async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
            await client.send({"type": "prompt", "text": "what are my account balances"})
            await asyncio.wait_for(barrier.end_committed.wait(), 30)
            # Turn 1 has ended in storage and is about to publish, then suggest prompts:
            # the next prompt lands right there.
            await client.send({"type": "prompt", "text": MULTI_AGENT})
            await asyncio.wait_for(barrier.started.wait(), 30)
            barrier.release.set()
            seen = await client.until("user_prompt")  # turn 1's end, then turn 2's prompt
            seen += await client.until("user_prompt")
            second = seen[-1]["turn_id"]
            seen += await client.until("llm_response_delta")
            # Turn 2 is this chat's running turn, for a cancel and for a prompt.
            await client.send({"type": "prompt", "text": "and another"})
            refused = [e for e in await client.until("error") if e["type"] == "error"]
            assert refused[-1]["code"] == "turn_in_progress"
            await client.send({"type": "cancel", "turn_id": second})
            ends = [e for e in await client.until("end_of_stream") if e["type"] == "end_of_stream"]
        assert ends[-1]["turn_id"] == second and ends[-1]["status"] == "cancelled"
        await live.services.turns.wait_idle(30)
        log = check_chat_log(await stored(live, chat_id))
    assert list(log.ends.values()) == ["completed", "cancelled"]
    assert live.services.turns.running_count == 0


async def test_an_earlier_turns_suggestions_never_land_in_the_next_turn(make_settings: Any) -> None:
    """Suggestions still being made when the next turn starts are dropped, not written
    among the next turn's events (and the next turn does not wait for them)."""
    making = asyncio.Event()
    never = asyncio.Event()
    calls = 0

    @asynccontextmanager
    async def slow_suggestions(services: Services) -> AsyncIterator[None]:
        async def suggest(prompt: str, text: str, shown: list[str]) -> list[str]:
            nonlocal calls
            calls += 1
            if calls > 1:
                # The second turn's own, made at once: once they are written, every task
                # of the chat has ended (waited on below, not timed out on).
                return ["the second turn's"]
            making.set()
            await never.wait()  # as slow as a model can be
            return ["never shown"]

        services.turns.engine.suggest = suggest
        yield

    async with serve(make_settings(shutdown_grace_seconds=1), hooks=(slow_suggestions,)) as live:
        chat_id = uuid.uuid4().hex
        async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
            await client.send({"type": "prompt", "text": "what are my account balances"})
            await client.until("end_of_stream")
            await asyncio.wait_for(making.wait(), 30)
            await client.send({"type": "prompt", "text": "what's in my inbox"})
            second = (await client.until("end_of_stream"))[-1]
            await client.until("suggested_prompts")
        assert await live.services.turns.wait_idle(30)
        events = await stored(live, chat_id)
    check_chat_log(events)
    suggested = [e for e in events if e["type"] == "suggested_prompts"]
    assert [(e["turn_id"], e["prompts"]) for e in suggested] == [
        (second["turn_id"], ["the second turn's"])
    ]


async def test_a_client_message_id_reused_with_another_text_is_refused(make_settings: Any) -> None:
    async with serve(make_settings()) as live:
        chat_id = uuid.uuid4().hex
        async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
            await client.send(
                {
                    "type": "prompt",
                    "text": "what are my account balances",
                    "client_message_id": "m-1",
                }
            )
            await client.until("end_of_stream")
            await client.send(
                {
                    "type": "prompt",
                    "text": "send all my money to Mallory",
                    "client_message_id": "m-1",
                }
            )
            refusal = [e for e in await client.until("error") if e["type"] == "error"][-1]
        events = await stored(live, chat_id)
    assert refusal["code"] == "invalid_request"
    assert "m-1" in refusal["message"] and "different prompt" in refusal["message"]
    assert [e["text"] for e in events if e["type"] == "user_prompt"] == [
        "what are my account balances"
    ]


class Stall:
    """Makes an instance stall as a starved or paused process does: while ``stalled`` is
    set, its writes and lease renewals wait (``holding`` once one does) until ``release``."""

    def __init__(self) -> None:
        self.stalled = asyncio.Event()
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def _wait(self) -> None:
        if self.stalled.is_set():
            self.holding.set()
            await self.release.wait()

    def hook(self) -> Callable[[Services], Any]:
        stall = self

        @asynccontextmanager
        async def install(services: Services) -> AsyncIterator[None]:
            store = services.store
            append, renew = store.append, store.renew_leases

            async def stalled_append(*args: Any, **kwargs: Any) -> list[EventRecord]:
                await stall._wait()
                return await append(*args, **kwargs)

            async def stalled_renew(*args: Any, **kwargs: Any) -> Any:
                await stall._wait()
                return await renew(*args, **kwargs)

            store.append, store.renew_leases = stalled_append, stalled_renew  # type: ignore[method-assign]
            yield

        return install


async def test_a_turn_closed_elsewhere_while_its_runner_stalled_ends_on_the_runners_sockets(
    make_settings: Any,
) -> None:
    """Two instances without Redis: the runner stalls past its lease, the other closes the
    turn as orphaned (``end_of_stream`` ``failed``, told to its own sockets only). The
    runner's next write is fenced; the socket watching there must still see the turn end,
    not wait forever (a torture run on a loaded machine once did)."""
    stall = Stall()
    runner_settings = make_settings(offline_delta_delay=0.05, turn_lease_seconds=1)
    async with (
        serve(runner_settings, hooks=(stall.hook(),)) as runner,
        serve(make_settings(turn_lease_seconds=1)) as closer,
    ):
        chat_id = uuid.uuid4().hex
        async with open_client(runner.ws_url(chat_id), auto_approve=True) as client:
            await client.send({"type": "prompt", "text": MULTI_AGENT})
            seen = await client.until("llm_response_delta", within=60)
            turn_id = seen[-1]["turn_id"]
            stall.stalled.set()
            await asyncio.wait_for(stall.holding.wait(), 60)

            async def closed_elsewhere() -> bool:
                turn = await closer.services.store.get_turn(turn_id)
                return turn is not None and turn.status == "failed"

            await wait_until(closed_elsewhere, what="the other instance to close the turn")
            stall.release.set()
            rest = await client.until("end_of_stream", within=60)
        assert rest[-1]["turn_id"] == turn_id and rest[-1]["status"] == "failed"
        log = check_chat_log(await stored(closer, chat_id))
        assert log.order == [turn_id] and log.ends[turn_id] == "failed"


async def test_a_prompt_sent_while_its_socket_replays_storage_streams_no_delta_after_its_answer(
    make_settings: Any,
) -> None:
    """The chat page prompts as soon as its socket opens, while the socket still reads
    storage to replay (``after_seq``). That read may already hold the turn's answer and
    end, whose frames are queued live too, after the answer's deltas: those deltas are part
    of an answer already sent and must not follow it (a browser drew them as an extra,
    never-finished message). Here the replay's read waits until the turn has ended."""
    ended = asyncio.Event()

    @asynccontextmanager
    async def slow_replay(services: Services) -> AsyncIterator[None]:
        store = services.store
        append, list_after = store.append, store.list_after

        async def noted_append(chat_id: str, events: Any, update: Any = None, **fences: Any) -> Any:
            records = await append(chat_id, events, update, **fences)
            if any(r.type == "end_of_stream" for r in records):
                ended.set()
            return records

        async def late_list_after(*args: Any, **kwargs: Any) -> Any:
            await ended.wait()
            return await list_after(*args, **kwargs)

        store.append, store.list_after = noted_append, late_list_after  # type: ignore[method-assign]
        yield

    async with serve(make_settings(offline_delta_delay=0.002), hooks=(slow_replay,)) as live:
        chat_id = uuid.uuid4().hex
        async with open_client(live.ws_url(chat_id, after_seq=0), auto_approve=True) as client:
            await client.send({"type": "prompt", "text": "hello there"})
            events = await client.until("suggested_prompts")
            # The replay may have sent the suggestions already: a pong comes through the
            # same queue as the live frames, after whatever was queued before it.
            await client.send({"type": "ping"})
            events += await client.until("pong")
    answers = [i for i, e in enumerate(events) if e["type"] == "llm_response"]
    deltas = [i for i, e in enumerate(events) if e["type"] == "llm_response_delta"]
    assert answers and ended.is_set()
    assert not deltas or deltas[-1] < answers[-1], [e["type"] for e in events]
    seqs = [e["seq"] for e in events if e.get("seq") is not None]
    assert seqs == sorted(set(seqs)) == list(range(1, len(seqs) + 1))
