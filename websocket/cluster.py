"""Coordination between instances: events, snapshots, cancels and turn leases over Redis.

Without ``SWITCHBOARD_REDIS_URL`` the server is one process and ``LocalCluster`` does
nothing. With Redis, every instance:

- while it has sockets on a chat, subscribes to its own channel for it,
  ``sb:chat:{channel}@{instance}`` (the channel is the hub's, owner and chat id): the
  subscriptions are the registry of who watches what, and no instance ever receives its
  own publications;
- publishes the frames of the turns it runs to the channels of the *other* instances
  watching the chat (one message per committed batch, in order), and only to them: with
  nobody else watching, a turn costs Redis nothing. With watchers it keeps the turn's
  resume snapshot in Redis in the same MULTI/EXEC: ``sb:turn:{channel}`` (turn id, last
  seq, message index, agent) and ``sb:text:{channel}`` (the text of the message being
  streamed, APPENDed delta by delta);
- learns who watches a chat from the subscriptions (``PUBSUB CHANNELS``) when it first
  needs to know, and from ``watch`` and ``unwatch`` notices on ``sb:control`` after that;
- listens on ``sb:control`` for cancels aimed at the turns it runs (a shortcut: the cancel
  is in the database too) and for deleted chats, whose sockets it closes.

A socket's first subscription to a chat on an instance (``watch``): subscribe, read who
else watches, announce ``watch`` on ``sb:control`` and wait until every other instance
has acknowledged it on the new channel. An instance running a turn on the chat writes the
turn's whole snapshot into Redis in the MULTI/EXEC that carries its acknowledgement, and
publishes every later batch to the new watcher; so once the acknowledgements are in, the
snapshot read next covers everything published before, and the live queue everything
after (duplicates are dropped by seq and mark). A PUBLISH that reaches nobody (the
watcher left, or died) drops that watcher.

Redis only carries news. Who runs a turn, whether it is orphaned and whether it must stop
are facts in the database (``websocket.turn``), so an instance that cannot reach Redis
stays what it is configured to be: it keeps trying to reconnect, reports itself degraded
(``healthy`` is False), and nothing it decides about turns depends on Redis.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from redis.exceptions import RedisError

from websocket.hub import Frame, RunningTurn, Snapshot

if TYPE_CHECKING:
    from websocket.hub import Hub

logger = logging.getLogger("switchboard.cluster")

CONTROL_CHANNEL = "sb:control"
EVENTS_PREFIX = "sb:chat:"  # followed by the hub channel, "@" and the watching instance
WATCHER_MARK = "@"  # instance ids never contain it (host name, pid, hex); channels may
STATE_TTL_MS = 3_600_000  # snapshots of turns whose instance died expire on their own
REDIS_TIMEOUT = 2.0
RECONNECT_DELAYS = (0.5, 1.0, 2.0, 5.0)  # then every 5 s, for as long as it takes

CancelHandler = Callable[[str, str | None], None]  # (chat_id, turn_id)
DeletedHandler = Callable[[str], None]  # (chat_id)


def new_instance_id() -> str:
    """A name for this server process, unique among instances and restarts, and
    readable in the database and logs (host, pid, random part)."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(4)}"


class Cluster(Protocol):
    remote: bool
    instance_id: str

    @property
    def healthy(self) -> bool: ...

    async def start(self, on_cancel: CancelHandler, on_deleted: DeletedHandler) -> None: ...
    async def stop(self) -> None: ...
    def attach(self, hub: Hub) -> None: ...
    async def watch(self, channel: str, hub: Hub) -> None: ...
    def unwatch(self, channel: str) -> None: ...
    def forget(self, channel: str) -> None: ...
    def local_turn_ended(self, channel: str, turn_id: str) -> None: ...
    async def snapshot(self, channel: str) -> Snapshot | None: ...
    def publish(self, channel: str, turn: RunningTurn | None, frames: list[Frame]) -> None: ...
    def turn_ended(self, channel: str, turn_id: str) -> None: ...
    async def request_cancel(self, chat_id: str, turn_id: str | None) -> None: ...
    async def announce_deleted(self, chat_id: str) -> None: ...


class LocalCluster:
    """One process: nothing to coordinate."""

    remote = False

    def __init__(self) -> None:
        self.instance_id = new_instance_id()

    @property
    def healthy(self) -> bool:
        return True

    async def start(self, on_cancel: CancelHandler, on_deleted: DeletedHandler) -> None:
        return None

    async def stop(self) -> None:
        return None

    def attach(self, hub: Hub) -> None:
        return None

    async def watch(self, channel: str, hub: Hub) -> None:
        return None

    def unwatch(self, channel: str) -> None:
        return None

    def forget(self, channel: str) -> None:
        return None

    def local_turn_ended(self, channel: str, turn_id: str) -> None:
        return None

    async def snapshot(self, channel: str) -> Snapshot | None:
        return None

    def publish(self, channel: str, turn: RunningTurn | None, frames: list[Frame]) -> None:
        return None

    def turn_ended(self, channel: str, turn_id: str) -> None:
        return None

    async def request_cancel(self, chat_id: str, turn_id: str | None) -> None:
        return None

    async def announce_deleted(self, chat_id: str) -> None:
        return None


# Forget a turn's snapshot only if it is still that turn's: the chat's next turn may
# already have begun, on any instance.
_END_TURN = """
if redis.call('hget', KEYS[1], 'turn_id') == ARGV[1] then
  return redis.call('del', KEYS[1], KEYS[2])
end
return 0
"""


def watcher_channel(channel: str, instance_id: str) -> str:
    """The Redis channel on which ``instance_id`` hears about the hub ``channel``."""
    return f"{EVENTS_PREFIX}{channel}{WATCHER_MARK}{instance_id}"


def parse_watcher_channel(name: str) -> tuple[str, str]:
    """(hub channel, instance id) of a ``watcher_channel`` name."""
    channel, _, instance = name.removeprefix(EVENTS_PREFIX).rpartition(WATCHER_MARK)
    return channel, instance


def _glob_escape(text: str) -> str:
    return "".join(f"\\{char}" if char in "*?[]\\" else char for char in text)


@dataclass
class _Watchers:
    """The other instances watching one channel, as far as this instance knows.

    ``generation`` orders one instance's notices: its ``unwatch`` and its next ``watch``
    may reach here in either order, and only the newest counts.
    """

    instances: set[str] = field(default_factory=set)
    generation: dict[str, int] = field(default_factory=dict)
    resolved: bool = False  # read from Redis's subscriptions once (``_resolve``)

    def note(self, instance: str, generation: int, watching: bool) -> None:
        if generation < self.generation.get(instance, -1):
            return
        self.generation[instance] = generation
        if watching:
            self.instances.add(instance)
        else:
            self.instances.discard(instance)


@dataclass
class _PendingWatch:
    """A ``watch`` waiting for every other instance's acknowledgement."""

    acks: set[str] = field(default_factory=set)
    generation: int = 0  # of the announcement: acknowledgements quote it
    expected: int | None = None  # known once the announcement is published
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def check(self) -> None:
        if self.expected is not None and len(self.acks) >= self.expected:
            self.done.set()


def _frame_to_wire(frame: Frame) -> list[Any]:
    return [
        frame.seq,
        frame.text,
        frame.delta,
        frame.agent,
        frame.message_done,
        list(frame.mark) if frame.mark else None,
    ]


def _frame_from_wire(row: list[Any]) -> Frame:
    mark = row[5]
    return Frame(
        row[0],
        row[1],
        row[2],
        row[3],
        bool(row[4]),
        (mark[0], int(mark[1]), int(mark[2])) if mark else None,
    )


class RedisCluster:
    remote = True

    def __init__(self, url: str) -> None:
        import redis.asyncio as redis

        self.instance_id = new_instance_id()
        self._redis = redis.from_url(
            url,
            socket_timeout=REDIS_TIMEOUT,
            socket_connect_timeout=REDIS_TIMEOUT,
            health_check_interval=15,
        )
        self._pubsub = self._redis.pubsub()
        self._end_turn = self._redis.register_script(_END_TURN)
        self._hub: Hub | None = None
        self._on_cancel: CancelHandler | None = None
        self._on_deleted: DeletedHandler | None = None
        self._confirmations: dict[str, asyncio.Future[None]] = {}
        self._outbox: asyncio.Queue[tuple[str, str, Any]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._unsubscribing: set[asyncio.Task[Any]] = set()
        self._subscribed = False  # to the control channel, on a live connection
        # Channels this instance watches or runs a turn on: who else watches them.
        self._watchers: dict[str, _Watchers] = {}
        self._pending: dict[str, _PendingWatch] = {}
        # The turn of each channel whose snapshot this instance wrote to Redis (so it must
        # also delete it when the turn ends).
        self._snapshotted: dict[str, str] = {}
        self._generations = count(1)
        # One watch or unwatch of a channel at a time here: a socket leaving and another
        # arriving must not interleave their SUBSCRIBE/UNSUBSCRIBE and notices.
        self._watch_locks: dict[str, asyncio.Lock] = {}

    @property
    def healthy(self) -> bool:
        """Whether this instance hears the others right now (False while Redis is away)."""
        return self._subscribed

    async def start(self, on_cancel: CancelHandler, on_deleted: DeletedHandler) -> None:
        """Start listening; when Redis is unreachable, keep trying in the background."""
        self._on_cancel, self._on_deleted = on_cancel, on_deleted
        try:
            await asyncio.wait_for(self._pubsub.subscribe(CONTROL_CHANNEL), REDIS_TIMEOUT)
            self._subscribed = True
        except Exception as exc:
            logger.warning(
                "redis unreachable at start-up (%s); serving degraded and reconnecting",
                type(exc).__name__,
            )
        self._tasks = [
            asyncio.create_task(self._listen(), name="cluster-listen"),
            asyncio.create_task(self._publish_loop(), name="cluster-publish"),
        ]

    async def stop(self) -> None:
        if self._tasks and not self._tasks[1].done():
            try:  # let the last batches (end_of_stream) reach the other instances
                await asyncio.wait_for(self._outbox.join(), REDIS_TIMEOUT)
            except TimeoutError:
                pass
        for task in [*self._tasks, *self._unsubscribing]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._unsubscribing, return_exceptions=True)
        try:
            await self._pubsub.aclose()
            await self._redis.aclose()
        except Exception:  # closing a broken connection: nothing left to do
            pass

    # -- who watches ----------------------------------------------------------------------

    def attach(self, hub: Hub) -> None:
        self._hub = hub

    async def watch(self, channel: str, hub: Hub) -> None:
        self._hub = hub
        name = watcher_channel(channel, self.instance_id)
        # Known from here on: notices from now on are recorded, the subscriptions read
        # below give the rest.
        watchers = self._watchers.setdefault(channel, _Watchers())
        pending = self._pending[channel] = _PendingWatch()
        confirmed = asyncio.get_running_loop().create_future()
        self._confirmations[name] = confirmed
        try:
            async with self._watch_lock(channel), asyncio.timeout(REDIS_TIMEOUT):
                await self._pubsub.subscribe(name)
                await confirmed
                await self._resolve(channel, watchers)
                pending.generation, notice = self._notice("watch", channel)
                # Not counting itself: every other instance listening acknowledges.
                pending.expected = await self._redis.publish(CONTROL_CHANNEL, notice) - 1
                pending.check()
                # Every other instance now sends this channel what it publishes on the
                # chat; one running a turn there has put its snapshot in Redis first.
                await pending.done.wait()
        except Exception:
            logger.warning(
                "cannot watch chat on redis; other instances' events will be "
                "missed until reconnect",
                extra={"channel": channel},
            )
        finally:
            self._confirmations.pop(name, None)
            if self._pending.get(channel) is pending:
                del self._pending[channel]

    def unwatch(self, channel: str) -> None:
        # Kept until done (the loop holds tasks weakly) and cancelled on close.
        task = asyncio.create_task(self._quietly(self._unwatch(channel)))
        self._unsubscribing.add(task)
        task.add_done_callback(self._unsubscribing.discard)

    async def _unwatch(self, channel: str) -> None:
        async with self._watch_lock(channel):
            if self._hub is not None and self._hub.is_watched(channel):
                return  # a socket came back meanwhile: still watching
            _, notice = self._notice("unwatch", channel)
            await self._pubsub.unsubscribe(watcher_channel(channel, self.instance_id))
            await self._redis.publish(CONTROL_CHANNEL, notice)

    def _watch_lock(self, channel: str) -> asyncio.Lock:
        lock = self._watch_locks.get(channel)
        if lock is None:
            lock = self._watch_locks[channel] = asyncio.Lock()
        return lock

    def forget(self, channel: str) -> None:
        """No socket and no turn here any more: stop tracking who watches ``channel``."""
        self._watchers.pop(channel, None)
        lock = self._watch_locks.get(channel)
        if lock is not None and not lock.locked():
            del self._watch_locks[channel]

    def _notice(self, kind: str, channel: str) -> tuple[int, bytes]:
        """A ``watch`` or ``unwatch`` notice and its generation (newer than any before)."""
        generation = next(self._generations)
        return generation, orjson.dumps({kind: channel, "by": self.instance_id, "g": generation})

    async def _resolve(self, channel: str, watchers: _Watchers) -> None:
        """Add the instances subscribed to ``channel`` now (notices add later ones)."""
        pattern = watcher_channel(_glob_escape(channel), "*")
        for name in await self._redis.pubsub_channels(pattern):
            found, instance = parse_watcher_channel(_text(name))
            if found == channel and instance != self.instance_id:
                watchers.instances.add(instance)
        watchers.resolved = True

    # -- events -------------------------------------------------------------------------

    async def snapshot(self, channel: str) -> Snapshot | None:
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hgetall(f"sb:turn:{channel}")
                pipe.get(f"sb:text:{channel}")
                state, text = await pipe.execute()
        except Exception:
            logger.warning("cannot read turn snapshot from redis", extra={"channel": channel})
            return None
        if not state:
            return None
        state = {_text(key): _text(value) for key, value in state.items()}
        current = (text or b"").decode()
        turn_id = state["turn_id"]
        return Snapshot(
            turn_id=turn_id,
            db_upto=int(state["seq"]),
            current_text=current,
            current_agent=state.get("agent", ""),
            mark=(turn_id, int(state["msg"]), len(current)),
            remote=True,
        )

    def publish(self, channel: str, turn: RunningTurn | None, frames: list[Frame]) -> None:
        watchers = self._watchers.get(channel)
        if watchers is None:
            # A turn here with no socket here (an approval decided over REST): who
            # watches is read from Redis when the batch is sent (``_send``).
            watchers = self._watchers[channel] = _Watchers()
        elif watchers.resolved and not watchers.instances:
            return  # nobody else watches: nothing to tell Redis
        self._outbox.put_nowait(("frames", channel, (_state_of(turn), frames)))

    def local_turn_ended(self, channel: str, turn_id: str) -> None:
        """This instance's turn ended: delete its snapshot if it ever wrote one."""
        if self._snapshotted.get(channel) == turn_id:
            del self._snapshotted[channel]
            self.turn_ended(channel, turn_id)

    def turn_ended(self, channel: str, turn_id: str) -> None:
        self._outbox.put_nowait(("end", channel, turn_id))

    def _acknowledge(self, channel: str, instance: str, generation: int) -> None:
        """Answer ``instance``'s ``watch``; with the turn's whole snapshot if one runs here."""
        turn = self._hub.running_turn(channel) if self._hub is not None else None
        state = _state_of(turn)
        text = turn.current_text if turn is not None else None
        self._outbox.put_nowait(("ack", channel, (instance, generation, state, text)))

    async def _publish_loop(self) -> None:
        while True:
            kind, channel, payload = await self._outbox.get()
            try:
                if kind == "frames":
                    await self._send(channel, *payload)
                elif kind == "ack":
                    await self._send_ack(channel, *payload)
                elif kind == "end":
                    await self._end_turn(
                        keys=[f"sb:turn:{channel}", f"sb:text:{channel}"], args=[payload]
                    )

            except Exception:
                logger.warning(
                    "redis publish failed; other instances miss this batch until "
                    "their sockets resume",
                    extra={"channel": channel},
                )
            finally:
                self._outbox.task_done()

    async def _send(self, channel: str, state: dict[str, Any] | None, frames: list[Frame]) -> None:
        watchers = self._watchers.get(channel)
        if watchers is not None and not watchers.resolved:
            await self._resolve(channel, watchers)
        targets = sorted(watchers.instances) if watchers is not None else []
        if not targets:
            return
        turn_key, text_key = f"sb:turn:{channel}", f"sb:text:{channel}"
        async with self._redis.pipeline(transaction=True) as pipe:
            if state is not None:
                pipe.hset(turn_key, mapping=state)  # type: ignore[arg-type]
                for frame in frames:
                    if frame.delta is not None:
                        pipe.append(text_key, frame.delta)
                    if frame.message_done:
                        pipe.set(text_key, "")
                pipe.pexpire(turn_key, STATE_TTL_MS)
                pipe.pexpire(text_key, STATE_TTL_MS)
                self._snapshotted[channel] = state["turn_id"]
            message = orjson.dumps(
                {"o": self.instance_id, "f": [_frame_to_wire(f) for f in frames]}
            )
            for instance in targets:
                pipe.publish(watcher_channel(channel, instance), message)
            results = await pipe.execute()
        self._drop_gone(channel, targets, results[-len(targets) :])

    async def _send_ack(
        self,
        channel: str,
        instance: str,
        generation: int,
        state: dict[str, Any] | None,
        text: str | None,
    ) -> None:
        turn_key, text_key = f"sb:turn:{channel}", f"sb:text:{channel}"
        async with self._redis.pipeline(transaction=True) as pipe:
            if state is not None:
                pipe.delete(turn_key)
                pipe.hset(turn_key, mapping=state)  # type: ignore[arg-type]
                pipe.set(text_key, text or "", px=STATE_TTL_MS)
                pipe.pexpire(turn_key, STATE_TTL_MS)
                self._snapshotted[channel] = state["turn_id"]
            pipe.publish(
                watcher_channel(channel, instance),
                orjson.dumps({"o": self.instance_id, "ack": generation}),
            )
            await pipe.execute()

    def _drop_gone(self, channel: str, targets: list[str], received: list[Any]) -> None:
        """A watcher nobody listens for any more (it left or died) is told nothing again;
        if it comes back, its ``watch`` notice adds it."""
        watchers = self._watchers.get(channel)
        for instance, listeners in zip(targets, received, strict=True):
            if watchers is not None and not listeners:
                watchers.instances.discard(instance)

    async def _listen(self) -> None:
        failures = 0
        while True:
            try:
                if not self._subscribed:
                    # The chats' channels too, also those whose sockets came while Redis
                    # was away; each confirmation tells their sockets to catch up from
                    # storage and announces the watch again (``_dispatch``): what was
                    # published meanwhile is lost, and the others may have dropped us.
                    watched = [
                        watcher_channel(channel, self.instance_id)
                        for channel in (self._hub.watched_channels() if self._hub else [])
                    ]
                    await asyncio.wait_for(
                        self._pubsub.subscribe(CONTROL_CHANNEL, *watched), REDIS_TIMEOUT
                    )
                    self._subscribed, failures = True, 0
                    for watchers in self._watchers.values():
                        watchers.resolved = False  # notices were missed: read them again
                    logger.warning("redis reachable again; cluster mode restored")
                async for message in self._pubsub.listen():
                    self._dispatch(message)
            except asyncio.CancelledError:
                raise
            except Exception:
                if self._subscribed or not failures:
                    logger.warning(
                        "redis unreachable; other instances' events and cancels "
                        "reach this one only through the database until it is back"
                    )
                self._subscribed = False
                delay = RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS) - 1)]
                failures += 1
                await asyncio.sleep(delay)

    def _dispatch(self, message: dict[str, Any]) -> None:
        name = message["channel"].decode()
        if message["type"] == "subscribe":
            confirmed = self._confirmations.get(name)
            if confirmed is not None and not confirmed.done():
                confirmed.set_result(None)
            elif name != CONTROL_CHANNEL and self._hub is not None:
                # Subscribed again after a lost connection: what was published meanwhile
                # never reached us, and the others may have stopped sending us the chat.
                channel, _ = parse_watcher_channel(name)
                self._hub.resync(channel)
                _, notice = self._notice("watch", channel)
                task = asyncio.create_task(
                    self._quietly(self._redis.publish(CONTROL_CHANNEL, notice))
                )
                self._unsubscribing.add(task)
                task.add_done_callback(self._unsubscribing.discard)
            return
        if message["type"] != "message":
            return
        data = orjson.loads(message["data"])
        if name == CONTROL_CHANNEL:
            self._on_control(data)
            return
        channel, _ = parse_watcher_channel(name)
        if data.get("o") == self.instance_id or self._hub is None:
            return  # never sent to ourselves; kept as a guard
        if "ack" in data:
            pending = self._pending.get(channel)
            if pending is not None and data["ack"] == pending.generation:
                pending.acks.add(data["o"])
                pending.check()
            return
        frames = [_frame_from_wire(row) for row in data["f"]]
        self._hub.deliver_remote(channel, frames)

    def _on_control(self, data: dict[str, Any]) -> None:
        if self._on_cancel is not None and "cancel" in data:
            self._on_cancel(data["cancel"], data.get("turn_id"))
        elif self._on_deleted is not None and "deleted" in data:
            self._on_deleted(data["deleted"])
        elif "watch" in data or "unwatch" in data:
            by = data["by"]
            if by == self.instance_id:
                return
            channel = data.get("watch") or data["unwatch"]
            watchers = self._watchers.get(channel)
            if watchers is not None:
                watchers.note(by, int(data.get("g", 0)), "watch" in data)
            if "watch" in data:
                # Acknowledged in the outbox's order: after every batch queued before.
                self._acknowledge(channel, by, int(data.get("g", 0)))

    async def request_cancel(self, chat_id: str, turn_id: str | None) -> None:
        await self._quietly(
            self._redis.publish(
                CONTROL_CHANNEL, orjson.dumps({"cancel": chat_id, "turn_id": turn_id})
            )
        )

    async def announce_deleted(self, chat_id: str) -> None:
        await self._quietly(
            self._redis.publish(CONTROL_CHANNEL, orjson.dumps({"deleted": chat_id}))
        )

    @staticmethod
    async def _quietly(awaitable: Any) -> Any:
        try:
            return await awaitable
        except (RedisError, OSError) as exc:
            # Redis down is a state the cluster reports and recovers from (healthy,
            # reconnect): a line, not a traceback.
            logger.warning("redis command failed: %s", type(exc).__name__)
            return None
        except Exception:
            logger.warning("redis command failed", exc_info=True)
            return None


def _state_of(turn: RunningTurn | None) -> dict[str, Any] | None:
    """A running turn's resume state, captured now: the turn moves on before it is sent."""
    if turn is None:
        return None
    return {
        "turn_id": turn.turn_id,
        "seq": turn.last_seq,
        "msg": turn.message_index,
        "agent": turn.current_agent,
    }


async def build_cluster(
    redis_url: str | None, on_cancel: CancelHandler, on_deleted: DeletedHandler
) -> Cluster:
    """Redis when configured (reachable or not: it is reconnected to); otherwise one
    process talking to nobody, which the database still keeps safe."""
    if not redis_url:
        return LocalCluster()
    cluster = RedisCluster(redis_url)
    await cluster.start(on_cancel, on_deleted)
    logger.info("cluster mode: redis", extra={"instance": cluster.instance_id})
    return cluster


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
