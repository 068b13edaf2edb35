"""Turn leases: this instance's claim on the turns it runs, and the closing of orphans.

Each running turn names its runner and holds a lease that the runner renews every
``LeaseTimings.renew_every``. A turn is orphaned only when its lease has expired, never
because an instance believes it is alone: any instance then closes it (``end_of_stream``
``failed``), at the latest ``LeaseTimings.sweep_every`` later, or at once when a socket
opens on its chat or a prompt comes (docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from storage.events import EventStore
from storage.records import Lease
from websocket.active_turns import ActiveTurns
from websocket.hub import Frame, Hub, channel_of
from websocket.metrics import Metrics
from wire.events import encode, now_ts

logger = logging.getLogger("switchboard.turn")

DEFAULT_LEASE_SECONDS = 15.0


@dataclass(frozen=True)
class LeaseTimings:
    """How often an instance renews its turns' leases and looks for expired ones.

    Renewing a few times per lease survives a missed renewal or two; renewing at least
    every 2 s also bounds how long a stop asked on another instance takes without Redis.
    A dead instance's turn ends at most ``seconds + sweep_every`` after its last renewal.
    """

    seconds: float

    @property
    def renew_every(self) -> float:
        return min(self.seconds / 3, 2.0)

    @property
    def sweep_every(self) -> float:
        return min(self.seconds / 3, 5.0)


async def every_so_often(
    period: float, work: Callable[[], Awaitable[object]], failure: str
) -> None:
    """Await ``work()`` every ``period`` seconds until cancelled; a failure is logged as
    ``failure`` and the next round tries again."""
    while True:
        await asyncio.sleep(period)
        try:
            await work()
        except Exception:
            logger.warning(failure, exc_info=True)


class Leases:
    """Renews the leases of ``turns`` (this instance's) and closes other instances'
    orphaned turns."""

    def __init__(
        self, store: EventStore, hub: Hub, metrics: Metrics, turns: ActiveTurns, lease: Lease
    ) -> None:
        self.store = store
        self.hub = hub
        self.metrics = metrics
        self.turns = turns
        self.lease = lease
        self.timings = LeaseTimings(lease.seconds)

    async def renew(self) -> None:
        """Renew the leases of the turns running here; stop those closed elsewhere (a
        turn marked failed must not go on acting) and those someone asked to stop."""
        running = [active for active in self.turns if active.phase.run_going_on]
        if not running:
            return
        renewal = await self.store.renew_leases(self.lease, [a.turn_id for a in running])
        for active in running:
            if active.finishing or not self.turns.holds(active):
                continue  # it ended meanwhile
            if active.turn_id not in renewal.kept:
                logger.warning(
                    "turn closed elsewhere after its lease expired; stopping it",
                    extra={"chat_id": active.chat_id, "turn_id": active.turn_id},
                )
                active.stop()
            elif active.turn_id in renewal.cancel and not active.stop_requested:
                active.cancel()

    async def keep(self) -> None:
        """Run ``renew`` every ``timings.renew_every`` seconds, until cancelled."""
        await every_so_often(self.timings.renew_every, self.renew, "could not renew turn leases")

    async def close_orphans(self, ts: str) -> int:
        """Close the turns whose runner's lease expired (their instance died or lost the
        database): at start-up, then every ``timings.sweep_every`` seconds, so a browser
        waiting on one sees it end unprompted."""
        closed = 0
        for running in await self.store.expired_turns():
            closed += await self.close_orphan(
                running.chat_id, running.turn_id, channel_of(running.user_id, running.chat_id), ts
            )
        return closed

    async def close_if_orphaned(self, user_id: str, chat_id: str) -> bool:
        """Close the chat's running turn if its runner's lease expired (a socket is about
        to watch it): the socket then need not wait for the sweep."""
        running = await self.store.running_turn(chat_id)
        if running is None or running.paused:
            return False
        return await self.close_orphan(chat_id, running.id, channel_of(user_id, chat_id), now_ts())

    async def watch_orphans(self) -> None:
        """Run ``close_orphans`` every ``timings.sweep_every`` seconds, until cancelled."""
        await every_so_often(
            self.timings.sweep_every,
            lambda: self.close_orphans(now_ts()),
            "could not look for orphaned turns",
        )

    async def close_orphan(self, chat_id: str, turn_id: str, channel: str, ts: str) -> bool:
        """Close the turn in storage if its lease expired, and tell every socket of the
        chat it ended. Never one of this instance's own turns: their leases are renewed,
        and a renewal that failed is no sign of death."""
        if turn_id in self.turns:
            return False
        ending = await self.store.close_turn(chat_id, turn_id, ts)
        if not ending:
            return False  # it ended meanwhile, its lease holds, or it is paused
        logger.warning("closed an orphaned turn", extra={"chat_id": chat_id, "turn_id": turn_id})
        self.metrics.turns.labels("failed").inc()
        self.hub.publish(channel, [Frame(r.seq, encode(r.to_wire())) for r in ending])
        self.hub.end_turn(channel, turn_id)
        return True
