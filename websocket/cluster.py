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
- listens on ``sb:control`` for cancels aimed at the turns it runs and for deleted chats,
  whose sockets it closes;
- holds a lease ``sb:lease:{chat_id}`` (expiring, renewed while the turn runs) so others
  can tell a live turn from one whose instance died. The database is the lock itself (one
  running turn per chat) and its fence: a writer only appends while its turn is still
  ``running``, so an instance that stalled past its lease cannot write into a turn that
  another instance has closed.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from websocket.hub import Frame, RunningTurn, Snapshot

if TYPE_CHECKING:
    from websocket.hub import Hub

logger = logging.getLogger(__name__)

CONTROL_CHANNEL = "sb:control"
EVENTS_PREFIX = "sb:chat:"  # followed by the hub channel
STATE_TTL_MS = 3_600_000  # snapshots of turns whose instance died expire on their own
REDIS_TIMEOUT = 2.0

CancelHandler = Callable[[str, str | None], None]  # (chat_id, turn_id)
DeletedHandler = Callable[[str], None]  # (chat_id)


class Cluster(Protocol):
    remote: bool
    instance_id: str

    async def start(self, on_cancel: CancelHandler, on_deleted: DeletedHandler) -> None: ...
    async def stop(self) -> None: ...
    async def watch(self, channel: str, hub: Hub) -> None: ...
    def unwatch(self, channel: str) -> None: ...
    async def snapshot(self, channel: str) -> Snapshot | None: ...
    def publish(self, channel: str, turn: RunningTurn | None, frames: list[Frame]) -> None: ...
    def turn_ended(self, channel: str) -> None: ...
    async def request_cancel(self, chat_id: str, turn_id: str | None) -> None: ...
    async def announce_deleted(self, chat_id: str) -> None: ...
    async def hold_lease(self, chat_id: str, turn_id: str) -> None: ...
    async def release_lease(self, chat_id: str, turn_id: str) -> None: ...
    async def lease_held(self, chat_id: str) -> bool: ...


class LocalCluster:
    """One process: nothing to coordinate."""

    remote = False

    def __init__(self) -> None:
        self.instance_id = "local"

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

    def turn_ended(self, channel: str) -> None:
        return None

    async def request_cancel(self, chat_id: str, turn_id: str | None) -> None:
        return None

    async def announce_deleted(self, chat_id: str) -> None:
        return None

    async def hold_lease(self, chat_id: str, turn_id: str) -> None:
        return None

    async def release_lease(self, chat_id: str, turn_id: str) -> None:
        return None

    async def lease_held(self, chat_id: str) -> bool:
        return False


_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


def _frame_to_wire(frame: Frame) -> list[Any]:
    return [frame.seq, frame.text, frame.delta, frame.agent, frame.message_done,
            list(frame.mark) if frame.mark else None]


def _frame_from_wire(row: list[Any]) -> Frame:
    mark = row[5]
    return Frame(row[0], row[1], row[2], row[3], bool(row[4]),
                 (mark[0], int(mark[1]), int(mark[2])) if mark else None)


class RedisCluster:
    remote = True

    def __init__(self, url: str, lease_ttl: float) -> None:
        import redis.asyncio as redis

        self.instance_id = secrets.token_hex(6)
        self.lease_ttl_ms = int(lease_ttl * 1000)
        self._redis = redis.from_url(url, socket_timeout=REDIS_TIMEOUT,
                                     socket_connect_timeout=REDIS_TIMEOUT,
                                     health_check_interval=15)
        self._pubsub = self._redis.pubsub()
        self._renew = self._redis.register_script(_RENEW)
        self._release = self._redis.register_script(_RELEASE)
        self._hub: Hub | None = None
        self._on_cancel: CancelHandler | None = None
        self._on_deleted: DeletedHandler | None = None
        self._confirmations: dict[str, asyncio.Future[None]] = {}
        self._outbox: asyncio.Queue[tuple[str, Any, list[Frame] | None]] = asyncio.Queue()
        self._leases: dict[str, tuple[str, asyncio.Task[None]]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, on_cancel: CancelHandler, on_deleted: DeletedHandler) -> None:
        self._on_cancel, self._on_deleted = on_cancel, on_deleted
        await asyncio.wait_for(self._redis.ping(), REDIS_TIMEOUT)
        await self._pubsub.subscribe(CONTROL_CHANNEL)
        self._tasks = [asyncio.create_task(self._listen(), name="cluster-listen"),
                       asyncio.create_task(self._publish_loop(), name="cluster-publish")]

    async def stop(self) -> None:
        for _, task in self._leases.values():
            task.cancel()
        if self._tasks and not self._tasks[1].done():
            try:  # let the last batches (end_of_stream) reach the other instances
                await asyncio.wait_for(self._outbox.join(), REDIS_TIMEOUT)
            except TimeoutError:
                pass
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
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
            logger.warning("cannot watch chat on redis; other instances' events will be "
                           "missed until reconnect", extra={"channel": channel})
        finally:
            self._confirmations.pop(name, None)

    def unwatch(self, channel: str) -> None:
        asyncio.ensure_future(self._quietly(self._pubsub.unsubscribe(EVENTS_PREFIX + channel)))

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
        return Snapshot(turn_id=turn_id, db_upto=int(state["seq"]), current_text=current,
                        current_agent=state.get("agent", ""),
                        mark=(turn_id, int(state["msg"]), len(current)))

    def publish(self, channel: str, turn: RunningTurn | None, frames: list[Frame]) -> None:
        state = None
        if turn is not None:  # captured now: the turn moves on before the batch is sent
            state = {"turn_id": turn.turn_id, "seq": turn.last_seq,
                     "msg": turn.message_index, "agent": turn.current_agent}
        self._outbox.put_nowait((channel, state, frames))

    def turn_ended(self, channel: str) -> None:
        self._outbox.put_nowait((channel, None, None))

    async def _publish_loop(self) -> None:
        while True:
            channel, state, frames = await self._outbox.get()
            try:
                await self._send(channel, state, frames)
            except Exception:
                logger.warning("redis publish failed; other instances miss this batch until "
                               "their sockets resume", extra={"channel": channel})
            finally:
                self._outbox.task_done()

    async def _send(self, channel: str, state: dict[str, Any] | None,
                    frames: list[Frame] | None) -> None:
        turn_key, text_key = f"sb:turn:{channel}", f"sb:text:{channel}"
        async with self._redis.pipeline(transaction=True) as pipe:
            if frames is None:
                pipe.delete(turn_key, text_key)
            else:
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
        while True:
            try:
                async for message in self._pubsub.listen():
                    self._dispatch(message)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("redis subscription lost; retrying in 1 s")
                await asyncio.sleep(1.0)

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
        await self._quietly(self._redis.publish(
            CONTROL_CHANNEL, orjson.dumps({"cancel": chat_id, "turn_id": turn_id})))

    async def announce_deleted(self, chat_id: str) -> None:
        await self._quietly(self._redis.publish(
            CONTROL_CHANNEL, orjson.dumps({"deleted": chat_id})))

    # -- leases -------------------------------------------------------------------------

    async def hold_lease(self, chat_id: str, turn_id: str) -> None:
        token = f"{self.instance_id}:{turn_id}"
        await self._quietly(self._redis.set(f"sb:lease:{chat_id}", token,
                                            px=self.lease_ttl_ms))
        task = asyncio.create_task(self._keep_lease(chat_id, token), name=f"lease-{turn_id}")
        self._leases[chat_id] = (token, task)

    async def _keep_lease(self, chat_id: str, token: str) -> None:
        while True:
            await asyncio.sleep(self.lease_ttl_ms / 3000)
            try:
                renewed = await self._renew(keys=[f"sb:lease:{chat_id}"],
                                            args=[token, self.lease_ttl_ms])
            except Exception:
                logger.warning("lease renewal failed", extra={"chat_id": chat_id})
                continue
            if not renewed:
                logger.warning("turn lease lost; the database fence stops this turn's "
                               "writes if another instance closed it", extra={"chat_id": chat_id})
                return

    async def release_lease(self, chat_id: str, turn_id: str) -> None:
        held = self._leases.get(chat_id)
        if held is None or held[0] != f"{self.instance_id}:{turn_id}":
            return  # not held, or held by a later turn of the chat
        del self._leases[chat_id]
        token, task = held
        task.cancel()
        await self._quietly(self._release(keys=[f"sb:lease:{chat_id}"], args=[token]))

    async def lease_held(self, chat_id: str) -> bool:
        try:
            return bool(await self._redis.exists(f"sb:lease:{chat_id}"))
        except Exception:
            # Redis is down: assume the turn is alive rather than closing it wrongly.
            return True

    @staticmethod
    async def _quietly(awaitable: Any) -> Any:
        try:
            return await awaitable
        except Exception:
            logger.warning("redis command failed", exc_info=True)
            return None


async def build_cluster(redis_url: str | None, lease_ttl: float,
                        on_cancel: CancelHandler, on_deleted: DeletedHandler) -> Cluster:
    """Redis when configured and reachable; otherwise one process, with a warning."""
    if not redis_url:
        return LocalCluster()
    cluster = RedisCluster(redis_url, lease_ttl)
    try:
        await cluster.start(on_cancel, on_deleted)
    except Exception as exc:
        logger.warning("redis unreachable (%s); running as a single instance",
                       type(exc).__name__)
        return LocalCluster()
    logger.info("cluster mode: redis", extra={"instance": cluster.instance_id})
    return cluster
