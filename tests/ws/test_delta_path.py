"""The writer's per-delta path (websocket/writer.py): a delta with nothing ahead of it goes
out by the end of the loop's pass, as its own frame (a burst of them as one), encoded
exactly as ``encode`` would; one behind persisted events waits for them; the checkpoint timer stores the text of deltas that never passed
through the writer's queue, and never holds them up. Real SQLite store and hub; the store
is only watched (and, to hold a write open, gated) around its real ``append``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from storage.chats import ChatRepository
from storage.engine import Database
from storage.events import EventStore
from storage.records import EventRecord, NewEvent, TurnUpdate
from storage.users import UserRepository
from websocket.hub import Frame, Hub, Subscription, channel_of
from websocket.writer import EventWriter, _DeltaFrames
from wire.events import LlmResponseDeltaEvent, LlmResponseEvent, encode, now_ts

WAIT = 10.0  # seconds: a bound on waiting for a condition, never a pause


class WatchedStore(EventStore):
    """The real store; each append is recorded, and waits for ``gate`` when it is set."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.gate: asyncio.Event | None = None
        self.appending = asyncio.Event()  # set when an append has begun
        self.checkpointed = asyncio.Event()  # set when a partial_text was stored
        self.checkpoints: list[str] = []

    async def append(
        self,
        chat_id: str,
        events: list[NewEvent],
        update: TurnUpdate | None = None,
        **kwargs: Any,
    ) -> list[EventRecord]:
        self.appending.set()
        if self.gate is not None:
            await self.gate.wait()
        records = await super().append(chat_id, events, update, **kwargs)
        if update is not None and update.partial_text is not None and not events:
            self.checkpoints.append(update.partial_text)
            self.checkpointed.set()
        return records


class Turn:
    def __init__(self, store: WatchedStore, hub: Hub, writer: EventWriter, sub: Subscription):
        self.store, self.hub, self.writer, self.subscription = store, hub, writer, sub

    async def next_frames(self, count: int) -> list[Frame]:
        async with asyncio.timeout(WAIT):
            return [await self.subscription.get() for _ in range(count)]

    def queued(self) -> list[Frame]:
        """The frames queued for the socket so far (taken off its queue)."""
        frames = []
        while not self.subscription._queue.empty():
            frame = self.subscription._queue.get_nowait()
            assert frame is not None
            frames.append(frame)
        return frames


@pytest.fixture
async def turn(db: Database) -> AsyncIterator[Turn]:
    user, _ = await UserRepository(db).create_user("alice")
    chat = await ChatRepository(db, user.id).get_or_create("chat-1")
    store = WatchedStore(db)
    record, prompt, _ = await store.start_turn(chat.id, "stream", None, now_ts())
    hub = Hub()
    channel = channel_of(user.id, chat.id)
    hub.begin_turn(channel, record.id, prompt.seq + 1)
    subscription, _ = await hub.subscribe(channel)
    writer = EventWriter(store, hub, chat.id, record.id, channel, checkpoint_interval=0.05)
    yield Turn(store, hub, writer, subscription)
    if store.gate is not None:
        store.gate.set()
    await writer.close()


def delta(text: str) -> LlmResponseDeltaEvent:
    return LlmResponseDeltaEvent(delta=text, current_agent="Switchboard")


@pytest.mark.parametrize(
    "text", ["w1 ", "", 'quote " and \\ back', "tab\tnew\nline\x00\x1f", "é 中文 🎉", "\u2028"]
)
@pytest.mark.parametrize("agent", ["Switchboard", 'A "quoted" agent ünï'])
def test_a_delta_frame_is_what_encode_makes(text: str, agent: str) -> None:
    frames = _DeltaFrames('chat "1"', "turn-\u00e9")
    ts = now_ts()
    event = LlmResponseDeltaEvent(delta=text, current_agent=agent)
    expected = encode(event.enveloped('chat "1"', "turn-\u00e9", None, ts))
    assert frames.encode(text, agent, ts) == expected
    assert frames.encode(text, "Other", ts) == encode(
        LlmResponseDeltaEvent(delta=text, current_agent="Other").enveloped(
            'chat "1"', "turn-\u00e9", None, ts
        )
    )


async def test_a_delta_with_nothing_ahead_goes_out_as_its_own_frame(turn: Turn) -> None:
    for word in ("one ", "two ", "three "):
        turn.writer.put(delta(word))
        (frame,) = await turn.next_frames(1)
        assert turn.queued() == []
        wire = orjson.loads(frame.text)
        assert (wire["type"], wire["delta"], wire["seq"]) == ("llm_response_delta", word, None)
        assert frame.delta == word and frame.mark is not None
    running = turn.hub.running_turn(turn.writer.channel)
    assert running is not None and running.current_text == "one two three "


async def test_deltas_put_in_one_pass_of_the_loop_go_out_as_one_frame(turn: Turn) -> None:
    for word in ("a ", "b ", "c "):  # a provider's chunk of tokens, or a model flat out
        turn.writer.put(delta(word))
    (frame,) = await turn.next_frames(1)
    assert frame.delta == "a b c " and orjson.loads(frame.text)["delta"] == "a b c "
    assert frame.mark is not None and frame.mark[2] == len("a b c ")
    turn.writer.put(delta("d "))
    assert [f.delta for f in await turn.next_frames(1)] == ["d "]


async def test_a_delta_behind_a_persisted_event_waits_for_its_commit(turn: Turn) -> None:
    turn.store.gate = asyncio.Event()
    turn.writer.put(delta("Hello "))
    turn.writer.put(LlmResponseEvent(text="Hello ", current_agent="Switchboard"))
    turn.writer.put(delta("next "))
    await asyncio.wait_for(turn.store.appending.wait(), WAIT)
    assert [f.delta for f in turn.queued()] == ["Hello "]  # "next " waits behind the commit
    turn.store.gate.set()
    frames: list[Frame] = []
    async with asyncio.timeout(WAIT):
        while len(frames) < 2:
            frames.append(await turn.subscription.get())
    assert frames[0].seq is not None and orjson.loads(frames[0].text)["type"] == "llm_response"
    assert frames[1].delta == "next "
    turn.writer.put(delta("then "))  # nothing ahead again
    assert [f.delta for f in await turn.next_frames(1)] == ["then "]


async def test_deltas_that_never_queue_are_checkpointed_and_never_wait_for_it(
    turn: Turn,
) -> None:
    turn.writer.put(delta("a "))
    turn.writer.put(delta("b "))
    await asyncio.wait_for(turn.store.checkpointed.wait(), WAIT)
    assert turn.store.checkpoints == ["a b "]
    stored = await turn.store.get_turn(turn.writer.turn_id)
    assert stored is not None and stored.partial_text == "a b "
    # A checkpoint held open does not hold the deltas back: it is no event.
    turn.store.gate, turn.store.checkpointed = asyncio.Event(), asyncio.Event()
    turn.store.appending.clear()
    turn.queued()
    turn.writer.put(delta("c "))
    await asyncio.wait_for(turn.store.appending.wait(), WAIT)
    assert [f.delta for f in turn.queued()] == ["c "]
    turn.writer.put(delta("d "))
    assert [f.delta for f in await turn.next_frames(1)] == ["d "]  # the write is still held
    assert not turn.store.checkpointed.is_set()
    turn.store.gate.set()
    await asyncio.wait_for(turn.store.checkpointed.wait(), WAIT)
    # That checkpoint had "a b c " (or "a b c d ": the text when its write began); the
    # next one stores the rest.
    turn.store.checkpointed.clear()
    if turn.store.checkpoints[-1] != "a b c d ":
        await asyncio.wait_for(turn.store.checkpointed.wait(), WAIT)
    assert turn.store.checkpoints[-1] == "a b c d "
