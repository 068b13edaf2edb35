"""Redis carries a chat's events only to the other instances watching it.

Two instances in one process (each a real ``Hub`` with its real ``RedisCluster``, on the
real Redis), driven the way the turn runtime drives a hub: ``begin_turn``, ``publish``
of committed and streamed frames, ``end_turn``. Redis's ``MONITOR`` shows what each one
sent: nothing for a chat nobody else watches, frames only to the instances that do (and
never to itself), and a watcher that arrives mid-turn misses nothing, however its
``watch`` and the turn interleave. The whole-server behaviour (every event on both
instances, resume, cancel) is tests/reliability/test_scale_out.py's, on two processes.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import redis.asyncio as redis

from tests.support.waiting import wait_until
from websocket.cluster import RedisCluster, build_cluster, watcher_channel
from websocket.hub import Frame, Hub, Snapshot, Subscription


def _ignore(*_: Any) -> None:
    return None


@asynccontextmanager
async def instance(redis_url: str) -> AsyncIterator[Hub]:
    cluster = await build_cluster(redis_url, _ignore, _ignore)
    try:
        yield Hub(cluster)
    finally:
        await cluster.stop()


def cluster_of(hub: Hub) -> RedisCluster:
    assert isinstance(hub.cluster, RedisCluster)
    return hub.cluster


class Monitor:
    """Every command Redis executes (``MONITOR``), collected as it arrives."""

    def __init__(self, url: str) -> None:
        self._client = redis.from_url(url)
        self.commands: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Monitor:
        self._monitor = self._client.monitor()
        await self._monitor.__aenter__()
        self._task = asyncio.create_task(self._collect())
        return self

    async def _collect(self) -> None:
        async for command in self._monitor.listen():
            self.commands.append(command["command"])

    async def __aexit__(self, *_: Any) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self._monitor.__aexit__()
        await self._client.aclose()

    async def mark(self, hub: Hub) -> list[str]:
        """What Redis ran up to now for ``hub``: a marker sent through the instance's own
        outbox (which sends in order) comes after everything it queued before."""
        name = f"marker-{uuid.uuid4().hex}"
        cluster_of(hub).turn_ended(f"tester/{name}", name)
        await wait_until(
            lambda: any(name in command and "EVAL" in command for command in self.commands),
            what=f"the marker {name} in MONITOR",
        )
        return list(self.commands)


def published_to(commands: list[str], channel: str) -> list[str]:
    """The ``PUBLISH`` commands sent to a watcher channel of hub channel ``channel``."""
    prefix = f"PUBLISH sb:chat:{channel}@"
    return [command for command in commands if command.startswith(prefix)]


def turn_frames(first_seq: int, words: list[str]) -> list[Frame]:
    """A committed frame, then one streamed delta per word."""
    frames = [Frame(first_seq, f'{{"seq":{first_seq}}}')]
    frames += [Frame(None, f'{{"delta":"{word}"}}', delta=word) for word in words]
    return frames


def drain(subscription: Subscription) -> list[Frame]:
    """The frames queued for ``subscription`` now (none is ``None``: no overflow here)."""
    frames = []
    while not subscription._queue.empty():
        frame = subscription._queue.get_nowait()
        assert frame is not None
        frames.append(frame)
    return frames


class Received:
    """What a subscription has been given so far."""

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.frames: list[Frame] = []

    def through_seq(self, seq: int) -> list[Frame] | None:
        self.frames += drain(self.subscription)
        return self.frames if any(frame.seq == seq for frame in self.frames) else None

    def at_least(self, count: int) -> list[Frame] | None:
        self.frames += drain(self.subscription)
        return self.frames if len(self.frames) >= count else None


@pytest.fixture
def channel() -> str:
    return f"tester/{uuid.uuid4().hex}"


async def test_a_turn_nobody_else_watches_costs_redis_nothing(redis_url: str, channel: str) -> None:
    async with instance(redis_url) as here, instance(redis_url) as elsewhere:
        subscription, _ = await here.subscribe(channel)  # a socket here only
        other, _ = await elsewhere.subscribe(f"tester/{uuid.uuid4().hex}")  # another chat
        async with Monitor(redis_url) as monitor:
            await monitor.mark(here)
            here.begin_turn(channel, "turn-1", 1)
            here.publish(channel, turn_frames(1, ["hello ", "world"]))
            here.publish(channel, [Frame(2, '{"seq":2}', message_done=True)])
            here.end_turn(channel, "turn-1")
            commands = await monitor.mark(here)
        received = drain(subscription)
        subscription.close()
        other.close()
    about_the_chat = [command for command in commands if channel in command]
    assert about_the_chat == []  # no PUBLISH, no snapshot written, none to delete
    assert [frame.seq for frame in received if frame.seq] == [1, 2]  # the local socket's


async def test_frames_go_to_the_instance_watching_and_never_back_to_their_sender(
    redis_url: str, channel: str
) -> None:
    async with instance(redis_url) as here, instance(redis_url) as there:
        local, _ = await here.subscribe(channel)
        remote, _ = await there.subscribe(channel)
        async with Monitor(redis_url) as monitor:
            here.begin_turn(channel, "turn-1", 1)
            here.publish(channel, turn_frames(1, ["hello ", "world"]))
            here.end_turn(channel, "turn-1")
            commands = await monitor.mark(here)
        there_received = Received(remote)
        seen_there = await wait_until(
            lambda: there_received.at_least(3), what="the frames on the other instance"
        )
        seen_here = drain(local)
        local.close()
        remote.close()
    targets = {command.split()[1] for command in published_to(commands, channel)}
    assert targets == {watcher_channel(channel, cluster_of(there).instance_id)}
    assert [f.delta or f.seq for f in seen_there] == [1, "hello ", "world"]
    assert [f.delta or f.seq for f in seen_here] == [1, "hello ", "world"]  # once, not twice


async def test_a_watcher_arriving_mid_turn_gets_the_snapshot_then_every_later_frame(
    redis_url: str, channel: str
) -> None:
    """The race: the turn streams while the other instance starts watching. The frames
    sent after the watcher subscribed but before the runner heard of it are the ones a
    naive "publish only if someone watches" loses; they must be in the snapshot."""
    async with instance(redis_url) as here, instance(redis_url) as there:
        local, _ = await here.subscribe(channel)
        here.begin_turn(channel, "turn-1", 1)
        here.publish(channel, turn_frames(1, ["one ", "two "]))  # nobody else yet

        runner = cluster_of(here)
        hear: Callable[[dict[str, Any]], None] = runner._on_control

        def streaming_meanwhile(notice: dict[str, Any]) -> None:
            if notice.get("watch") != channel:
                hear(notice)
                return
            # The worst moment: the watcher has subscribed and announced itself, the
            # runner has not heard of it yet, and the turn goes on streaming.
            here.publish(channel, [Frame(None, '{"delta":"three "}', delta="three ")])
            hear(notice)
            here.publish(channel, [Frame(None, '{"delta":"four "}', delta="four ")])

        runner._on_control = streaming_meanwhile  # type: ignore[method-assign]
        remote, snapshot = await there.subscribe(channel)
        runner._on_control = hear  # type: ignore[method-assign]
        here.publish(channel, [Frame(2, '{"seq":2}', message_done=True)])
        received = Received(remote)
        live = await wait_until(
            lambda: received.through_seq(2), what="the frames up to the next committed one"
        )
        here.end_turn(channel, "turn-1")
        local.close()
        remote.close()

    assert snapshot.remote and snapshot.turn_id == "turn-1" and snapshot.db_upto == 1
    # What the socket shows: the snapshot's text, then the live deltas it does not hold.
    text = snapshot.current_text + "".join(
        f.delta for f in live if f.delta is not None and not _covered(snapshot, f)
    )
    assert text == "one two three four "
    assert [f.seq for f in live if f.seq is not None] == [2]


def _covered(snapshot: Snapshot, frame: Frame) -> bool:
    """A delta the snapshot's text already holds (the socket skips it, by its mark)."""
    assert frame.mark is not None and snapshot.mark is not None
    return frame.mark[:2] == snapshot.mark[:2] and frame.mark[2] <= snapshot.mark[2]


async def test_a_watcher_that_left_is_told_nothing_more(redis_url: str, channel: str) -> None:
    async with instance(redis_url) as here, instance(redis_url) as there:
        local, _ = await here.subscribe(channel)
        remote, _ = await there.subscribe(channel)
        remote.close()  # its last socket on the chat: it unsubscribes and says so
        async with redis.from_url(redis_url) as client:

            async def unsubscribed() -> bool:
                name = watcher_channel(channel, cluster_of(there).instance_id)
                return not (await client.pubsub_numsub(name))[0][1]

            await wait_until(unsubscribed, what="the other instance's unsubscription")
        await wait_until(
            lambda: not cluster_of(here)._watchers[channel].instances,
            what="the unwatch notice heard",
        )
        async with Monitor(redis_url) as monitor:
            here.begin_turn(channel, "turn-1", 1)
            here.publish(channel, turn_frames(1, ["hi"]))
            here.end_turn(channel, "turn-1")
            commands = await monitor.mark(here)
        local.close()
    assert published_to(commands, channel) == []
