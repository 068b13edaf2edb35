"""The per-turn event writer: persist in order, in batches, then publish.

Everything a turn emits goes through one queue, so events are committed and published
in exactly the order they were produced. A batch is whatever is queued when the writer
wakes up (a few ms of events under load, one event when idle): it costs one
transaction, and only after that commit are its frames published, so a socket never
sees a seq that a crash could lose. Ephemeral deltas travel the same queue to keep
their place between persisted events; they are never written one by one, instead the
text of the message in progress is checkpointed at least every ``checkpoint_interval``
(a timer wakes the writer for it; a checkpoint is no event, so deltas do not wait for it).

A delta put while nothing is ahead of it (no event queued or being written) skips the
queue: it is published by a callback at the end of the event loop's current pass, with
every delta put in that pass as one frame. At a model's pace that is one frame per delta,
without a task wake-up, the batch bookkeeping or a generic encoding per token
(bench/streaming.py measures this path); a burst (a provider's chunk of several tokens,
a model streaming flat out) still goes out as one frame. Deltas put behind persisted
events queue up and go out after them; consecutive ones of a batch as one frame.

When the store fails (after ``_WRITE_ATTEMPTS`` quick tries) the writer sets ``error``,
which stops the turn, and keeps every event it could not write. Closing then retries, for
about half a minute (``final_retry_delays``), to write them all with the turn's end: if the
database comes back in time nothing is lost and every socket sees the turn end. Otherwise
the turn stays ``running`` in storage (closed as an orphan by the next prompt or restart)
and the chat's sockets get a connection-level ``server_error``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import orjson

from storage.errors import CancelRequested, TurnFenced
from storage.events import EventStore
from storage.records import EventRecord, NewEvent, TurnUpdate
from websocket.hub import Frame, Hub
from websocket.metrics import Metrics
from wire.events import (
    ErrorEvent,
    Event,
    LlmResponseDeltaEvent,
    LlmResponseEvent,
    encode,
    now_ts,
)

logger = logging.getLogger("switchboard.writer")

_WRITE_ATTEMPTS = 3
_RETRY_DELAYS = (0.05, 0.25, 1.0)
# Waits before each try to write a failed turn's last events and end (~24 s in all).
FINAL_RETRY_DELAYS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0)
UNSAVED_TURN = ErrorEvent(
    code="server_error",
    message="The database is unavailable, so this turn could not be saved. "
    "Reconnect and resume in a moment.",
    retryable=True,
)


class WriterFailed(RuntimeError):
    """The store kept failing; the turn cannot be persisted."""


@dataclass
class _Item:
    event: Event
    ts: str
    update: TurnUpdate | None


_CLOSE = object()
_CHECKPOINT = object()  # put by the checkpoint timer: the text is due to be stored


class _DeltaFrames:
    """Encodes a turn's ``llm_response_delta`` frames: ``encode(event.enveloped(...))``,
    byte for byte, with the envelope built once (only ts, the text and the agent vary)."""

    def __init__(self, chat_id: str, turn_id: str) -> None:
        self._head = (
            '{"type":"llm_response_delta","chat_id":'
            + orjson.dumps(chat_id).decode()
            + ',"turn_id":'
            + orjson.dumps(turn_id).decode()
            + ',"seq":null,"ts":"'
        )
        self._agent: str | None = None
        self._tail = ""

    def encode(self, delta: str, agent: str, ts: str) -> str:
        if agent != self._agent:
            self._agent, self._tail = agent, f',"current_agent":{orjson.dumps(agent).decode()}}}'
        # ts is now_ts()'s: digits and "-:.TZ", nothing JSON escapes.
        return f'{self._head}{ts}","delta":{orjson.dumps(delta).decode()}{self._tail}'


class EventWriter:
    def __init__(
        self,
        store: EventStore,
        hub: Hub,
        chat_id: str,
        turn_id: str,
        channel: str,
        *,
        checkpoint_interval: float = 0.25,
        max_batch: int = 512,
        after_end: bool = False,
        metrics: Metrics | None = None,
        on_end: Callable[[], None] | None = None,
        final_retry_delays: tuple[float, ...] = FINAL_RETRY_DELAYS,
    ) -> None:
        self.store = store
        self.hub = hub
        self.chat_id = chat_id
        self.turn_id = turn_id
        self.channel = channel  # the hub's (websocket.hub.channel_of)
        self.checkpoint_interval = checkpoint_interval
        self.max_batch = max_batch
        # Every write checks the turn still runs or, ``after_end`` (its suggested
        # prompts), that no later turn of the chat has begun (see EventStore.append).
        self.after_end = after_end
        # Called once the turn's end_of_stream is committed, before it is published.
        self.on_end = on_end
        # A stop asked elsewhere reached storage before the completed end: it says
        # cancelled instead.
        self.cancelled_at_end = False
        self.metrics = metrics
        self.final_retry_delays = final_retry_delays
        self.error: BaseException | None = None
        self._unwritten: list[_Item] = []  # since the store failed, in order
        # The message in progress (or the last finished one) as its pieces: ``text +=
        # delta`` on an attribute copies the whole text per delta, quadratic in a long
        # message (bench/streaming.py).
        self._text_parts: list[str] = []
        self._text_version = 0  # changes of the text so far
        self._checkpointed_version = 0  # the version the last checkpoint stored
        self._streaming = False
        self._last_checkpoint = time.monotonic()
        self._checkpoint_timer: asyncio.TimerHandle | None = None
        # From the first change after a checkpoint until the next one is stored (the timer
        # armed, _CHECKPOINT queued, or its write under way): no second timer meanwhile.
        self._checkpoint_pending = False
        # Items put and not yet published (queued, or in the batch being written): a delta
        # takes the queue behind them, else it goes out at once.
        self._ahead = 0
        self._closing = False
        self._delta_frames = _DeltaFrames(chat_id, turn_id)
        self._burst: list[LlmResponseDeltaEvent] = []  # deltas put in this loop pass
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[_Item | object] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name=f"writer-{turn_id}")

    def put(self, event: Event, update: TurnUpdate | None = None) -> None:
        if (
            not self._ahead
            and update is None
            and isinstance(event, LlmResponseDeltaEvent)
            and self.error is None
            and not self._closing
        ):
            if not self._burst:
                self._loop.call_soon(self._publish_burst)
            self._burst.append(event)
            return
        if self._burst:
            self._publish_burst()  # before anything put after them
        self._ahead += 1
        self._queue.put_nowait(_Item(event, now_ts(), update))

    async def close(self) -> None:
        """Write and publish everything queued so far, then stop."""
        if self._burst:
            self._publish_burst()
        self._closing = True
        self._queue.put_nowait(_CLOSE)
        await self._task
        if self.error is not None:
            raise WriterFailed("could not persist the turn") from self.error

    async def _run(self) -> None:
        closing = False
        try:
            while not closing:
                item = await self._queue.get()
                batch: list[_Item] = []
                checkpoint = False
                while True:
                    if item is _CLOSE:
                        closing = True
                        break
                    if item is _CHECKPOINT:
                        checkpoint = True
                    else:
                        assert isinstance(item, _Item)
                        batch.append(item)
                    if len(batch) >= self.max_batch or self._queue.empty():
                        break
                    item = self._queue.get_nowait()
                if self.error is None and (batch or checkpoint):
                    await self._write(batch, checkpoint=checkpoint)
                else:
                    self._track_text(batch)
                    self._unwritten += batch
                self._ahead -= len(batch)
                if checkpoint and self._checkpoint_timer is None:
                    self._rearm_checkpoint()  # nothing was stored: the text had not changed
        finally:
            if self._checkpoint_timer is not None:
                self._checkpoint_timer.cancel()
                self._checkpoint_timer = None
        if self.error is not None and self._unwritten:
            await self._write_after_failure()

    @property
    def text(self) -> str:
        if len(self._text_parts) > 1:
            self._text_parts[:] = ["".join(self._text_parts)]
        return self._text_parts[0] if self._text_parts else ""

    @property
    def _text_changed(self) -> bool:
        """The text has changed since the last checkpoint stored it."""
        return self._text_version != self._checkpointed_version

    def _text_did_change(self) -> None:
        self._text_version += 1
        if not self._checkpoint_pending:
            self._arm_checkpoint()

    def _arm_checkpoint(self) -> None:
        # Due checkpoint_interval after the last one: the timer wakes the writer then
        # (deltas that went out at once never did).
        self._checkpoint_pending = True
        delay = self._last_checkpoint + self.checkpoint_interval - time.monotonic()
        loop = asyncio.get_running_loop()
        self._checkpoint_timer = loop.call_later(max(0.0, delay), self._checkpoint_due)

    def _checkpoint_due(self) -> None:
        self._checkpoint_timer = None
        if not self._closing:  # else the turn's end stores the text
            self._queue.put_nowait(_CHECKPOINT)

    def _rearm_checkpoint(self) -> None:
        """After a checkpoint (or a due one found nothing to store): the next one is due
        checkpoint_interval later, if the text changes meanwhile or has already."""
        if self._checkpoint_timer is not None:
            self._checkpoint_timer.cancel()
            self._checkpoint_timer = None
        self._checkpoint_pending = False
        if self._text_changed and self.error is None and not self._closing:
            self._arm_checkpoint()

    def _publish_burst(self) -> None:
        """The deltas put with nothing ahead of them since the last call (see put): track
        them and publish them, one frame per agent's run of them (one frame, in practice)."""
        burst, self._burst = self._burst, []
        if not burst:
            return  # already published: something was put behind them
        if not self._streaming:
            self._text_parts, self._streaming = [], True
        ts = now_ts()
        start = 0
        for end in range(1, len(burst) + 1):
            agent = burst[start].current_agent
            if end < len(burst) and burst[end].current_agent == agent:
                continue
            delta = burst[start].delta if end - start == 1 else _joined(burst[start:end])
            self._text_parts.append(delta)
            text = self._delta_frames.encode(delta, agent, ts)
            self.hub.publish_delta(self.channel, text, delta, agent)
            start = end
        self._text_did_change()

    def _track_text(self, batch: list[_Item]) -> None:
        for item in batch:
            event = item.event
            if isinstance(event, LlmResponseDeltaEvent):
                if not self._streaming:
                    self._text_parts, self._streaming = [], True
                self._text_parts.append(event.delta)
                self._text_did_change()
            elif isinstance(event, LlmResponseEvent):
                self._text_parts, self._streaming = [event.text], False
                self._text_did_change()

    async def _write(self, batch: list[_Item], *, checkpoint: bool = False) -> None:
        self._track_text(batch)
        new_events = self._new_events(batch)
        update = self._merged_update(batch, checkpoint=checkpoint)
        version = self._text_version  # what a checkpoint in this write stores
        records = []
        if new_events or update is not None:
            try:
                started = time.monotonic()
                records = await self._append(new_events, update)
                if self.metrics is not None:
                    self.metrics.persist_seconds.observe(time.monotonic() - started)
                    self.metrics.events_persisted.inc(len(records))
            except Exception as exc:  # the store is down: stop persisting, tell the runner
                log_extra = {"chat_id": self.chat_id, "turn_id": self.turn_id}
                if isinstance(exc, TurnFenced):
                    logger.warning("turn no longer writable: %s", exc, extra=log_extra)
                else:
                    logger.exception("event write failed", extra=log_extra)
                self.error = exc
                self._unwritten += batch  # written, if ever, by _write_after_failure
                return
        if update is not None and update.partial_text is not None:
            self._checkpointed_version = version
            self._last_checkpoint = time.monotonic()
            self._rearm_checkpoint()
        self._ended(records)
        self._publish(batch, records)

    async def _write_after_failure(self) -> None:
        """Write the events the store refused, once it is back, so none is lost.

        Only worth waiting for when they end the turn: without the ``end_of_stream`` in
        storage the turn would stay ``running`` and its sockets would wait for it.
        """
        batch, self._unwritten = self._unwritten, []
        if isinstance(self.error, TurnFenced):
            return  # another instance closed the turn (TurnRun tells the sockets here)
        if not any(item.event.type == "end_of_stream" for item in batch):
            return
        new_events = self._new_events(batch)
        update = self._merged_update(batch)
        log_extra = {"chat_id": self.chat_id, "turn_id": self.turn_id}
        for delay in self.final_retry_delays:
            await asyncio.sleep(delay)
            try:
                records = await self.store.append(
                    self.chat_id,
                    new_events,
                    update,
                    fence_turn=self.turn_id,
                    after_end=self.after_end,
                )
            except TurnFenced:
                return  # another instance closed the turn meanwhile
            except Exception as exc:
                logger.warning(
                    "turn end still not written: %s", type(exc).__name__, extra=log_extra
                )
                continue
            logger.warning("turn end written after the store came back", extra=log_extra)
            self.error = None
            self._ended(records)
            self._publish(batch, records)
            return
        logger.error(
            "turn end could not be written; the turn stays running in storage", extra=log_extra
        )
        self.hub.publish(
            self.channel,
            [
                Frame(
                    None,
                    encode(UNSAVED_TURN.enveloped(self.chat_id, None, None)),
                )
            ],
        )

    def _ended(self, records: list[EventRecord]) -> None:
        if self.on_end is not None and any(r.type == "end_of_stream" for r in records):
            self.on_end()

    def _publish(self, batch: list[_Item], records: list[EventRecord]) -> None:
        published = iter(records)
        frames = []
        for item in _coalesce_deltas(batch):
            event = item.event
            if event.persisted:
                record = next(published)
                text, seq = encode(record.to_wire()), record.seq
            elif isinstance(event, LlmResponseDeltaEvent):
                text = self._delta_frames.encode(event.delta, event.current_agent, item.ts)
                seq = None
            else:
                wire = event.enveloped(self.chat_id, self.turn_id, None, item.ts)
                text, seq = encode(wire), None
            frames.append(
                Frame(
                    seq,
                    text,
                    delta=event.delta if isinstance(event, LlmResponseDeltaEvent) else None,
                    agent=getattr(event, "current_agent", None),
                    message_done=isinstance(event, LlmResponseEvent),
                )
            )
        self.hub.publish(self.channel, frames)

    def _new_events(self, batch: list[_Item]) -> list[NewEvent]:
        """The batch's persisted events, in order, before storage gives them seqs."""
        return [
            NewEvent.of(item.event, self.turn_id, item.ts) for item in batch if item.event.persisted
        ]

    def _merged_update(self, batch: list[_Item], *, checkpoint: bool = False) -> TurnUpdate | None:
        """The batch's last explicit update, with the text; or a checkpoint of the text if
        it changed and one is due (``checkpoint``: the timer said so)."""
        explicit = [item.update for item in batch if item.update is not None]
        update = explicit[-1] if explicit else None
        due = self._text_changed and (
            checkpoint or time.monotonic() - self._last_checkpoint >= self.checkpoint_interval
        )
        if update is None and not due:
            return None
        if update is None:
            return TurnUpdate(turn_id=self.turn_id, partial_text=self.text)
        if update.partial_text is None:
            update = replace(update, partial_text=self.text)
        return update

    async def _append(self, events: list[NewEvent], update: TurnUpdate | None) -> list[EventRecord]:
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                return await self.store.append(
                    self.chat_id, events, update, fence_turn=self.turn_id, after_end=self.after_end
                )
            except CancelRequested:
                events, update = _as_cancelled(events), _as_cancelled_update(update)
                self.cancelled_at_end = True
                return await self._append(events, update)
            except TurnFenced:
                raise  # another instance closed the turn: retrying cannot help
            except Exception:
                if attempt == _WRITE_ATTEMPTS - 1:
                    raise
                logger.warning(
                    "event write failed, retrying",
                    extra={"chat_id": self.chat_id, "turn_id": self.turn_id},
                )
                await asyncio.sleep(_RETRY_DELAYS[attempt])
        raise AssertionError("unreachable")


def _as_cancelled(events: list[NewEvent]) -> list[NewEvent]:
    return [
        replace(e, payload={**e.payload, "status": "cancelled"}) if e.type == "end_of_stream" else e
        for e in events
    ]


def _as_cancelled_update(update: TurnUpdate | None) -> TurnUpdate | None:
    return replace(update, status="cancelled") if update is not None else None


def _joined(deltas: list[LlmResponseDeltaEvent]) -> str:
    return "".join(event.delta for event in deltas)


def _coalesce_deltas(batch: list[_Item]) -> list[_Item]:
    """Consecutive deltas of one agent in a batch become one delta frame.

    docs/protocol.md §3 only promises that a message's deltas join to its text; under load a
    batch holds many, and one frame instead of dozens halves the per-delta cost.
    """
    out: list[_Item] = []

    run: list[tuple[_Item, LlmResponseDeltaEvent]] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0][0])
        elif run:
            item, first = run[0]
            joined = "".join(delta.delta for _, delta in run)
            merged = LlmResponseDeltaEvent(delta=joined, current_agent=first.current_agent)
            out.append(_Item(merged, item.ts, None))
        run.clear()

    for item in batch:
        event = item.event
        if isinstance(event, LlmResponseDeltaEvent) and item.update is None:
            if run and run[0][1].current_agent != event.current_agent:
                flush()
            run.append((item, event))
            continue
        flush()
        out.append(item)
    flush()
    return out
