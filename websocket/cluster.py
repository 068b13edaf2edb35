"""Coordination between instances: events, snapshots, cancels and turn leases over Redis.

Without ``SWITCHBOARD_REDIS_URL`` the server is one process and ``LocalCluster`` does
nothing. With Redis, every instance:

- publishes the frames of the turns it runs on ``sb:chat:{channel}`` (one message per
  committed batch, in order; the channel is the hub's, owner and chat id) and keeps the
  turn's resume snapshot in Redis in the same MULTI/EXEC: ``sb:turn:{channel}`` (turn id,
  last seq, message index, agent) and ``sb:text:{channel}`` (the text of the message
  being streamed, APPENDed delta by delta). A socket on another instance subscribes
  first, then reads both atomically, so it can redraw the turn exactly and drop from its
  live queue what the snapshot holds;
- listens on ``sb:control`` for cancels aimed at the turns it runs (a shortcut: the cancel
  is in the database too) and for deleted chats, whose sockets it closes.

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
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from redis.exceptions import RedisError

from websocket.hub import Frame, RunningTurn, Snapshot

if TYPE_CHECKING:
    from websocket.hub import Hub

logger = logging.getLogger("switchboard.cluster")

CONTROL_CHANNEL = "sb:control"
EVENTS_PREFIX = "sb:chat:"  # followed by the hub channel
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
    async def watch(self, channel: str, hub: Hub) -> None: ...
    def unwatch(self, channel: str) -> None: ...
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

    async def watch(self, channel: str, hub: Hub) -> None:
        return None

    def unwatch(self, channel: str) -> None:
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
        self._outbox: asyncio.Queue[tuple[str, Any, list[Frame] | None]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._unsubscribing: set[asyncio.Task[Any]] = set()
        self._subscribed = False  # to the control channel, on a live connection

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

    # -- events -------------------------------------------------------------------------

    async def watch(self, channel: str, hub: Hub) -> None:
        self._hub = hub
        name = EVENTS_PREFIX + channel
        confirmed = asyncio.get_running_loop().create_future()
        self._confirmations[name] = confirmed
        try:
            await self._pubsub.subscribe(name)
            await asyncio.wait_for(confirmed, REDIS_TIMEOUT)
        except Exception:
            logger.warning(
                "cannot watch chat on redis; other instances' events will be "
                "missed until reconnect",
                extra={"channel": channel},
            )
        finally:
            self._confirmations.pop(name, None)

    def unwatch(self, channel: str) -> None:
        # Kept until done (the loop holds tasks weakly) and cancelled on close.
        task = asyncio.create_task(self._quietly(self._pubsub.unsubscribe(EVENTS_PREFIX + channel)))
        self._unsubscribing.add(task)
        task.add_done_callback(self._unsubscribing.discard)

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
        state = {key.decode(): value.decode() for key, value in state.items()}
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
        state = None
        if turn is not None:  # captured now: the turn moves on before the batch is sent
            state = {
                "turn_id": turn.turn_id,
                "seq": turn.last_seq,
                "msg": turn.message_index,
                "agent": turn.current_agent,
            }
        self._outbox.put_nowait((channel, state, frames))

    def turn_ended(self, channel: str, turn_id: str) -> None:
        self._outbox.put_nowait((channel, turn_id, None))

    async def _publish_loop(self) -> None:
        while True:
            channel, state, frames = await self._outbox.get()
            try:
                await self._send(channel, state, frames)
            except Exception:
                logger.warning(
                    "redis publish failed; other instances miss this batch until "
                    "their sockets resume",
                    extra={"channel": channel},
                )
            finally:
                self._outbox.task_done()

    async def _send(self, channel: str, state: Any, frames: list[Frame] | None) -> None:
        turn_key, text_key = f"sb:turn:{channel}", f"sb:text:{channel}"
        if frames is None:  # the turn ``state`` (its id) ended
            await self._end_turn(keys=[turn_key, text_key], args=[state])
            return
        async with self._redis.pipeline(transaction=True) as pipe:
            if state is not None:
                pipe.hset(turn_key, mapping=state)
                for frame in frames:
                    if frame.delta is not None:
                        pipe.append(text_key, frame.delta)
                    if frame.message_done:
                        pipe.set(text_key, "")
                pipe.pexpire(turn_key, STATE_TTL_MS)
                pipe.pexpire(text_key, STATE_TTL_MS)
            message = {"o": self.instance_id, "f": [_frame_to_wire(f) for f in frames]}
            pipe.publish(EVENTS_PREFIX + channel, orjson.dumps(message))
            await pipe.execute()

    async def _listen(self) -> None:
        failures = 0
        while True:
            try:
                if not self._subscribed:
                    # Also re-subscribes the chats' channels (redis-py keeps them), whose
                    # confirmations tell their sockets to catch up (``_dispatch``).
                    # The chats' channels too, also those whose sockets came while Redis
                    # was away; each confirmation tells their sockets to catch up from
                    # storage (``_dispatch``): what was published meanwhile is lost.
                    watched = [
                        EVENTS_PREFIX + channel
                        for channel in (self._hub.watched_channels() if self._hub else [])
                    ]
                    await asyncio.wait_for(
                        self._pubsub.subscribe(CONTROL_CHANNEL, *watched), REDIS_TIMEOUT
                    )
                    self._subscribed, failures = True, 0
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
                # never reached us.
                self._hub.resync(name.removeprefix(EVENTS_PREFIX))
            return
        if message["type"] != "message":
            return
        data = orjson.loads(message["data"])
        if name == CONTROL_CHANNEL:
            if self._on_cancel is not None and "cancel" in data:
                self._on_cancel(data["cancel"], data.get("turn_id"))
            elif self._on_deleted is not None and "deleted" in data:
                self._on_deleted(data["deleted"])
            return
        if data.get("o") == self.instance_id or self._hub is None:
            return  # our own batch: local sockets already have it
        frames = [_frame_from_wire(row) for row in data["f"]]
        self._hub.deliver_remote(name.removeprefix(EVENTS_PREFIX), frames)

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
