"""The tool calls waiting for their RAP callback, in this process.

A call is opened (with its callback token) before the invocation is sent, so a result
that arrives before the invocation's HTTP answer still finds it. It then moves once from
``pending`` to ``answered`` (its result was accepted), ``expired`` (no result in time) or
``closed`` (the invocation failed or the turn was cancelled). Finished calls are
remembered for ``retain`` seconds so that a repeated delivery is answered as a duplicate
(docs/rap.md: idempotent processing) and a late one as gone, instead of as unknown.
Those seconds are read from ``clock`` (``time.monotonic`` unless a test passes its own).

In memory, per process: each instance advertises its own callback URL (docs/rap.md).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from connectors.rap.signing import new_token, token_digest


class CallState(Enum):
    PENDING = "pending"
    ANSWERED = "answered"
    EXPIRED = "expired"
    CLOSED = "closed"


class Delivery(Enum):
    """What became of a delivered message."""

    ACCEPTED = "accepted"  # the call's result: handed to the waiting tool
    DUPLICATE = "duplicate"  # the same result again: ignored
    CONFLICT = "conflict"  # another result for an answered call: ignored
    GONE = "gone"  # the call timed out or was closed: discarded


class DuplicateCall(Exception):
    """A call with this ``group_id`` and ``id`` is already waiting."""


@dataclass(eq=False)
class PendingCall:
    server: str  # the connector (``SWITCHBOARD_RAP_TOOLS`` entry) that was invoked
    operation: str
    group_id: str  # the chat
    id: str  # the tool call
    call_id: str | None
    user_id: str
    turn_id: str
    digest: str  # SHA-256 of the callback token
    future: asyncio.Future[Any]
    state: CallState = CallState.PENDING
    fingerprint: str | None = None  # of the accepted result
    finished_at: float | None = None
    opened_at: float = field(default_factory=time.monotonic)


class PendingCalls:
    def __init__(
        self,
        retain: float = 3600.0,
        max_finished: int = 20_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.retain = retain
        self.max_finished = max_finished
        self.clock = clock
        self._by_digest: dict[str, PendingCall] = {}
        self._waiting: dict[tuple[str, str], PendingCall] = {}
        self._finished: OrderedDict[str, PendingCall] = OrderedDict()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def open(
        self,
        *,
        server: str,
        operation: str,
        group_id: str,
        id: str,
        call_id: str | None,
        user_id: str,
        turn_id: str,
    ) -> tuple[PendingCall, str]:
        """Register a call; returns it and the token for its ``callback_url``."""
        if (group_id, id) in self._waiting:
            raise DuplicateCall(f"tool call {id!r} is already waiting in this chat")
        token = new_token()
        call = PendingCall(
            server=server,
            operation=operation,
            group_id=group_id,
            id=id,
            call_id=call_id,
            user_id=user_id,
            turn_id=turn_id,
            digest=token_digest(token),
            future=asyncio.get_running_loop().create_future(),
            opened_at=self.clock(),
        )
        self._by_digest[call.digest] = call
        self._waiting[(group_id, id)] = call
        return call, token

    def find(self, token: str) -> PendingCall | None:
        """The call this callback token belongs to (waiting or recently finished)."""
        self._prune()
        return self._by_digest.get(token_digest(token))

    def deliver(self, call: PendingCall, message: Any, fingerprint: str) -> Delivery:
        """Hand ``message`` to the waiting tool, once; ``fingerprint`` tells duplicates."""
        if call.state is CallState.PENDING:
            call.fingerprint = fingerprint
            if not call.future.done():
                call.future.set_result(message)
            self._finish(call, CallState.ANSWERED)
            return Delivery.ACCEPTED
        if call.state is CallState.ANSWERED:
            return Delivery.DUPLICATE if fingerprint == call.fingerprint else Delivery.CONFLICT
        return Delivery.GONE

    async def wait(self, call: PendingCall, within: float) -> Any:
        """The delivered message; ``TimeoutError`` after ``within`` seconds (the call
        expires). A cancelled waiter closes the call."""
        try:
            async with asyncio.timeout(within):
                return await asyncio.shield(call.future)
        except TimeoutError:
            self._finish(call, CallState.EXPIRED)
            raise
        except asyncio.CancelledError:
            self._finish(call, CallState.CLOSED)
            raise

    def close(self, call: PendingCall) -> None:
        """The invocation was never accepted by the tool: nothing may answer it."""
        self._finish(call, CallState.CLOSED)

    def _finish(self, call: PendingCall, state: CallState) -> None:
        if call.state is not CallState.PENDING:
            return
        call.state = state
        call.finished_at = self.clock()
        self._waiting.pop((call.group_id, call.id), None)
        self._finished[call.digest] = call
        self._prune()

    def _prune(self) -> None:
        horizon = self.clock() - self.retain
        while self._finished:
            digest, oldest = next(iter(self._finished.items()))
            if len(self._finished) <= self.max_finished and (oldest.finished_at or 0) > horizon:
                break
            del self._finished[digest]
            self._by_digest.pop(digest, None)
