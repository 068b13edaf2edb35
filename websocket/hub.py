"""Fan-out of a chat's events to every socket watching it, in this process and others.

Each socket owns one ``Subscription``: a queue of ready-to-send frames. The turn's writer
publishes a batch only after it is committed, so a subscriber that reads the database and
then its queue sees every event exactly once (see ``Hub.subscribe``).

For a turn running in this process the channel keeps what a socket joining mid-turn needs
to redraw it exactly: the frames published so far and the text of the message being
streamed. For a turn running in another instance the ``Cluster`` (Redis) provides the same
snapshot, and marks every delta with its position so the live queue can skip what the
snapshot already holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from websocket.lean import LeanQueue

if TYPE_CHECKING:
    from websocket.cluster import Cluster

# (turn_id, message index in the turn, length of that message's text after this delta)
Mark = tuple[str, int, int]


def channel_of(user_id: str, chat_id: str) -> str:
    """The hub channel of a user's chat.

    Keyed by owner as well as chat id: a chat id can be deleted and then created again by
    another user, and a socket still open on the old chat must never receive a frame of
    the new one, whatever instance it is on.
    """
    return f"{user_id}/{chat_id}"


class Frame(NamedTuple):
    """One frame for the sockets, shared by all of a channel's subscriptions: immutable.

    A named tuple rather than a frozen dataclass: one is built per streamed delta, and a
    frozen dataclass's ``__init__`` costs three times as much (bench/streaming.py)."""

    seq: int | None  # None for ephemeral events
    text: str  # the encoded JSON
    delta: str | None = None  # for llm_response_delta: the text it adds
    agent: str | None = None  # the event's current_agent
    message_done: bool = False  # an llm_response: the next delta starts a new message
    mark: Mark | None = None  # set by the publishing hub on deltas
    # Not for the socket: frames from other instances may have been lost (a Redis
    # reconnect); the socket catches up from storage (websocket.handler).
    resync: bool = False


RESYNC = Frame(None, "", resync=True)

# A socket that falls this far behind is disconnected rather than slowing the turn down
# for everyone else or growing the process without bound; it reconnects and resumes from
# its last seq. Bytes are what a fast model fills the queue with: it coalesces its deltas
# into few large frames. They are counted as characters of the frames' text (encoding each
# frame again to count its UTF-8 bytes would cost more than the bound is worth).
MAX_QUEUED_FRAMES = 50_000
MAX_QUEUED_BYTES = 8 * 1024 * 1024


class SubscriptionOverflow(Exception):
    """The socket did not keep up; it must reconnect and resume."""


class Subscription:
    def __init__(self, hub: Hub, channel: str) -> None:
        self.hub = hub
        self.channel = channel
        # Not asyncio.Queue: that allocates ~3 KiB while empty, and most sockets are idle.
        self._queue: LeanQueue[Frame | None] = LeanQueue()
        self._queued_bytes = 0
        self.overflowed = False
        # Called once, on overflow: the socket's sender may be stuck writing to a peer that
        # stopped reading, and would never reach the end of the queue to find out.
        self.on_overflow: Callable[[], object] | None = None

    def put(self, frame: Frame) -> None:
        if self.overflowed:
            return
        size = len(frame.text)
        # A frame larger than the bound alone is no backlog: an empty queue takes it.
        if self._queue.qsize() >= MAX_QUEUED_FRAMES or (
            self._queued_bytes > 0 and self._queued_bytes + size > MAX_QUEUED_BYTES
        ):
            self._overflow()
            return
        self._queued_bytes += size
        self._queue.put_nowait(frame)

    def _overflow(self) -> None:
        self.overflowed = True
        self._queue.clear()  # never to be sent: free it now
        self._queued_bytes = 0
        self._queue.put_nowait(None)
        if self.on_overflow is not None:
            self.on_overflow()

    async def get(self) -> Frame:
        frame = await self._queue.get()
        if frame is None:
            raise SubscriptionOverflow(self.channel)
        self._queued_bytes -= len(frame.text)
        return frame

    def close(self) -> None:
        self.hub._unsubscribe(self)


@dataclass
class RunningTurn:
    """A turn running in this process, as a socket joining mid-turn needs it."""

    turn_id: str
    first_seq: int
    frames: list[Frame] = field(default_factory=list)
    current_agent: str = ""
    message_index: int = 0
    last_seq: int = 0
    # The streamed message as its deltas (joined on demand): ``+=`` on an attribute
    # would copy the whole text per delta.
    text_parts: list[str] = field(default_factory=list)
    text_length: int = 0

    @property
    def current_text(self) -> str:
        if len(self.text_parts) > 1:
            self.text_parts[:] = ["".join(self.text_parts)]
        return self.text_parts[0] if self.text_parts else ""


@dataclass(frozen=True)
class Snapshot:
    """Where a new subscription starts.

    Replay storage up to ``db_upto`` (all of it when None), then ``frames``, then one
    delta with ``current_text`` if a turn is running; then the live queue, skipping
    persisted frames already sent and deltas at or before ``mark``.
    """

    turn_id: str | None = None
    db_upto: int | None = None
    frames: tuple[Frame, ...] = ()
    current_text: str = ""
    current_agent: str = ""
    mark: Mark | None = None
    # Read from Redis, written by another instance: a hint that outlives its turn when
    # the instance could not tell Redis the turn ended (an outage, a kill). Checked
    # against storage before it is trusted.
    remote: bool = False


@dataclass
class _Channel:
    subscribers: set[Subscription] = field(default_factory=set)
    turn: RunningTurn | None = None


class Hub:
    def __init__(self, cluster: Cluster | None = None) -> None:
        self._channels: dict[str, _Channel] = {}
        self.cluster = cluster
        if cluster is not None:
            cluster.attach(self)  # it reads running turns' snapshots for other instances

    async def subscribe(self, channel: str) -> tuple[Subscription, Snapshot]:
        state = self._channels.setdefault(channel, _Channel())
        subscription = Subscription(self, channel)
        first = not state.subscribers
        # Queued from here on, and listening to other instances before reading their
        # snapshot, so nothing published in between is missed (duplicates are dropped by
        # seq and mark); and the channel counts as watched while ``watch`` runs.
        state.subscribers.add(subscription)
        if self.cluster is not None and self.cluster.remote and first:
            try:
                await self.cluster.watch(channel, self)
            except BaseException:  # cancelled (the socket went away): nobody holds it
                self._unsubscribe(subscription)
                raise
        turn = state.turn
        if turn is not None:  # running here: the exact local snapshot, taken without awaiting
            return subscription, Snapshot(
                turn_id=turn.turn_id,
                db_upto=turn.first_seq - 1,
                frames=tuple(turn.frames),
                current_text=turn.current_text,
                current_agent=turn.current_agent,
                mark=(turn.turn_id, turn.message_index, turn.text_length),
            )
        if self.cluster is not None and self.cluster.remote:
            remote = await self.cluster.snapshot(channel)
            if remote is not None:
                return subscription, remote
        return subscription, Snapshot()

    def _unsubscribe(self, subscription: Subscription) -> None:
        state = self._channels.get(subscription.channel)
        if state is None or subscription not in state.subscribers:
            return
        state.subscribers.discard(subscription)
        if not state.subscribers and self.cluster is not None and self.cluster.remote:
            self.cluster.unwatch(subscription.channel)
        self._drop_if_idle(subscription.channel, state)

    def begin_turn(self, channel: str, turn_id: str, first_seq: int) -> RunningTurn:
        state = self._channels.setdefault(channel, _Channel())
        state.turn = RunningTurn(turn_id=turn_id, first_seq=first_seq)
        return state.turn

    def end_turn(self, channel: str, turn_id: str) -> None:
        """Forget the snapshot of ``turn_id``; a later turn of the channel that has begun
        meanwhile (a prompt right after a pause) keeps its own."""
        state = self._channels.get(channel)
        if state is not None:
            if state.turn is not None and state.turn.turn_id != turn_id:
                return
            state.turn = None
            self._drop_if_idle(channel, state)
        if self.cluster is not None:
            self.cluster.local_turn_ended(channel, turn_id)

    def publish(self, channel: str, frames: Iterable[Frame]) -> None:
        """Deliver committed (or ephemeral) frames of this process's turn, in order."""
        state = self._channels.get(channel)
        turn = state.turn if state is not None else None
        marked: list[Frame] = []
        for frame in frames:
            if turn is not None:
                frame = _track(turn, frame)
            marked.append(frame)
            if state is not None:
                for subscription in state.subscribers:
                    subscription.put(frame)
        if self.cluster is not None and self.cluster.remote:
            self.cluster.publish(channel, turn, marked)

    def publish_delta(self, channel: str, text: str, delta: str, agent: str) -> None:
        """``publish`` of one delta frame (encoded as ``text``) of this process's turn.

        The per-token path (websocket.writer): the frame is built once, already marked.
        """
        state = self._channels.get(channel)
        turn = state.turn if state is not None else None
        mark = None
        if turn is not None:  # as _track does for a delta
            turn.current_agent = agent
            turn.text_parts.append(delta)
            turn.text_length += len(delta)
            mark = (turn.turn_id, turn.message_index, turn.text_length)
        frame = Frame(None, text, delta, agent, False, mark)
        if state is not None:
            for subscription in state.subscribers:
                subscription.put(frame)
        if self.cluster is not None and self.cluster.remote:
            self.cluster.publish(channel, turn, [frame])

    def deliver_remote(self, channel: str, frames: Iterable[Frame]) -> None:
        """Frames another instance published on a channel this process watches."""
        self.deliver_local(channel, frames)

    def deliver_local(self, channel: str, frames: Iterable[Frame]) -> None:
        """Frames for this process's sockets only: another instance wrote them (it
        published them itself), and they are not this process's turn to track."""
        state = self._channels.get(channel)
        if state is None:
            return
        for frame in frames:
            for subscription in state.subscribers:
                subscription.put(frame)

    def resync(self, channel: str) -> None:
        """Tell the channel's sockets that frames from other instances may be missing."""
        state = self._channels.get(channel)
        for subscription in state.subscribers if state is not None else ():
            subscription.put(RESYNC)

    def send_to(self, subscription: Subscription, frame: Frame) -> None:
        """A frame for one socket only (pong, errors about its own frames)."""
        subscription.put(frame)

    def is_watched(self, channel: str) -> bool:
        state = self._channels.get(channel)
        return state is not None and bool(state.subscribers)

    def watched_channels(self) -> list[str]:
        """The channels some socket of this process watches."""
        return [channel for channel, state in self._channels.items() if state.subscribers]

    def running_turn(self, channel: str) -> RunningTurn | None:
        state = self._channels.get(channel)
        return state.turn if state else None

    def _drop_if_idle(self, channel: str, state: _Channel) -> None:
        if not state.subscribers and state.turn is None:
            self._channels.pop(channel, None)
            if self.cluster is not None:
                self.cluster.forget(channel)


def _track(turn: RunningTurn, frame: Frame) -> Frame:
    """Update the running turn's snapshot with ``frame``; marks deltas with their position."""
    if frame.agent is not None:
        turn.current_agent = frame.agent
    if frame.seq is not None:
        turn.frames.append(frame)
        turn.last_seq = frame.seq
    if frame.delta is not None:
        turn.text_parts.append(frame.delta)
        turn.text_length += len(frame.delta)
        frame = Frame(
            frame.seq,
            frame.text,
            frame.delta,
            frame.agent,
            False,
            (turn.turn_id, turn.message_index, turn.text_length),
        )
    if frame.message_done:
        turn.text_parts.clear()
        turn.text_length = 0
        turn.message_index += 1
    return frame
