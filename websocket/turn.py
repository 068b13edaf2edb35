"""Running turns: one task per turn, independent of the sockets that watch it.

A turn outlives the socket that started it: when the browser drops, the turn finishes,
is persisted, and the client resumes later. ``TurnManager`` owns the running tasks so
``cancel`` from any socket and a graceful shutdown can reach them; each task runs one
``websocket.turn_run.TurnRun``.

One turn per chat, whatever the timing or the number of processes, rests on facts in the
database, never on "I am alone" or on Redis:

- storage lets a chat have one running turn, and each running turn names its runner (this
  instance) and holds a lease that the runner renews every ``LeaseTimings.renew_every``;
- a turn is orphaned only when its lease has expired: any instance then closes it
  (``end_of_stream`` ``failed``), at the latest ``LeaseTimings.sweep_every`` later
  (``websocket.leases``);
- every write of a turn is fenced: it commits only while the turn still runs, so a runner
  that stalled past its lease cannot add to a turn closed elsewhere, and stops as soon as
  its renewal shows the lease lost;
- a stop is a database fact too (Redis only makes it arrive sooner);
- here, everything about a turn is keyed by its turn id and removed only by its own
  task (``websocket.active_turns``), and a new turn of a chat starts only once the chat's
  earlier tasks here are done, so nothing of one turn lands among the next one's events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from agents import RunContextWrapper, TResponseInputItem

from connectors.approvals import previews
from connectors.effects import Effect
from storage.approvals import ApprovalStore, Decided
from storage.attachments import AttachmentRecord, AttachmentRepository
from storage.engine import Database
from storage.errors import TurnInProgress
from storage.events import EventStore
from storage.records import EventRecord, Lease, PausedRun, TurnRecord
from storage.turn_actions import ActionRequest, ActionStarted, start_action_turn
from websocket.active_turns import ActiveTurn, ActiveTurns
from websocket.attachment_input import prompt_input
from websocket.cluster import Cluster, LocalCluster
from websocket.hub import Frame, Hub, channel_of
from websocket.leases import DEFAULT_LEASE_SECONDS, Leases, every_so_often
from websocket.metrics import Metrics
from websocket.pause import failure_text, wire_effect
from websocket.protocol import encode, now_ts
from websocket.turn_actions import model_input
from websocket.turn_plan import TurnEngine, TurnOutcome, TurnPlan
from websocket.turn_run import RunServices, TurnRun, new_approval_id
from websocket.usage_hooks import UsageHooks
from wire.events import ChatRenamedEvent

# The manager's API, with the plan and outcome types its callers hand it and get back
# (websocket.turn_plan), importable from here as before the turn runtime was split.
__all__ = ["ServerDraining", "Submitted", "TurnEngine", "TurnManager", "TurnOutcome", "TurnPlan"]

DEFAULT_APPROVAL_TIMEOUT = 86_400.0


class ServerDraining(RuntimeError):
    """This instance is shutting down and starts nothing new; try again in a moment."""


class NotApproved(RuntimeError):
    """An approval was refused because what it would do is not what it showed: it changed
    (a new request shows it now, ``asked_again``), or it cannot be checked now
    (``retryable``). Nothing was run; the message says so."""

    def __init__(self, message: str, *, retryable: bool, asked_again: str | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.asked_again = asked_again


@dataclass(frozen=True)
class Submitted:
    """The outcome of a prompt: a new turn, or the existing one for a repeated id."""

    user_prompt: EventRecord
    created: bool
    task: asyncio.Task[None] | None = None  # the running turn, when one was started


class TurnManager:
    def __init__(
        self,
        store: EventStore,
        hub: Hub,
        engine: TurnEngine,
        db: Database,
        cluster: Cluster | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        metrics: Metrics | None = None,
        approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT,
    ) -> None:
        self.store = store
        self.approvals = ApprovalStore(db)
        self.hub = hub
        self.engine = engine
        self.db = db
        self.cluster: Cluster = cluster or LocalCluster()
        # This instance's claim on the turns it runs (storage.records.Lease).
        self.lease = Lease(self.cluster.instance_id, lease_seconds)
        self.approval_timeout = approval_timeout
        self.draining = False
        self.metrics = metrics or Metrics()
        self._active = ActiveTurns()
        self.leases = Leases(store, hub, self.metrics, self._active, self.lease)
        self._services = RunServices(
            store,
            hub,
            self.approvals,
            self.metrics,
            db,
            approval_timeout,
            self._active,
            self._supersede,
            UsageHooks(self.metrics, engine.model_name),
        )

    @property
    def running_count(self) -> int:
        return len(self._active)

    def running_for(self, user_id: str) -> int:
        return self._active.running_for(user_id)

    def running_tasks(self, user_id: str) -> list[asyncio.Task[None]]:
        return self._active.running_tasks(user_id)

    async def submit(
        self,
        user_id: str,
        chat_id: str,
        text: str,
        client_message_id: str | None,
        ts: str,
        plan: TurnPlan | None = None,
        attachments: Sequence[AttachmentRecord] = (),
    ) -> Submitted:
        """Persist the prompt and start the turn (raises ``TurnInProgress``, and
        ``ClientMessageReused`` for a known ``client_message_id`` with another text).
        ``attachments``: the chat's attachments the prompt refers to (already checked)."""
        channel = channel_of(user_id, chat_id)
        summaries = [record.summary() for record in attachments]

        async def start() -> tuple[TurnRecord, EventRecord, bool]:
            # ``owner``: the chat may have been deleted, and its id taken by another user,
            # since this user's socket checked it (raises ChatNotFound).
            return await self.store.start_turn(
                chat_id,
                text,
                client_message_id,
                ts,
                owner=user_id,
                lease=self.lease,
                attachments=summaries,
            )

        try:
            turn, event, created = await start()
        except TurnInProgress as exc:
            # §3a: a prompt while the turn waits for approvals ends that turn (its
            # approvals superseded); a turn whose runner's lease expired is closed.
            # Either way the chat is free again.
            if not (
                await self._supersede(user_id, chat_id, exc.turn_id, "prompt", ts)
                or await self.leases.close_orphan(chat_id, exc.turn_id, channel, ts)
            ):
                raise
            turn, event, created = await start()
        if not created:
            return Submitted(event, created=False)
        self.metrics.events_persisted.inc()  # the user_prompt
        content = prompt_input(text, attachments) if attachments else None
        task = self._start(
            user_id, chat_id, turn.id, text, event.seq, plan, first=event, model_input=content
        )
        return Submitted(event, created=True, task=task)

    async def submit_action(
        self,
        user_id: str,
        chat_id: str,
        request: ActionRequest,
        client_message_id: str | None,
        ts: str,
    ) -> Submitted:
        """Start a ``regenerate``, ``edit`` or ``continue`` turn (docs/protocol.md,
        "Regenerate, edit and continue"). Raises ``ActionRefused``, ``TurnInProgress``,
        ``ClientMessageReused`` and ``ChatNotFound``; refused, nothing changed."""
        channel = channel_of(user_id, chat_id)

        async def start() -> ActionStarted:
            return await start_action_turn(
                self.db, chat_id, request, client_message_id, ts, owner=user_id, lease=self.lease
            )

        try:
            started = await start()
        except TurnInProgress as exc:
            # A turn whose runner's lease expired is closed; then the chat is free.
            if not await self.leases.close_orphan(chat_id, exc.turn_id, channel, ts):
                raise
            started = await start()
        if not started.created:
            return Submitted(started.user_prompt, created=False)
        self.metrics.events_persisted.inc(1 + len(started.superseded))
        turn = started.turn
        given = model_input(started)
        if given is None:
            given = await self._attached_input(turn.prompt, started.user_prompt)
        task = self._start(
            user_id,
            chat_id,
            turn.id,
            turn.prompt,
            turn.user_prompt_seq,
            None,
            first=started.user_prompt,
            before=started.superseded,
            model_input=given,
        )
        return Submitted(started.user_prompt, created=True, task=task)

    async def _attached_input(
        self, prompt: str, user_prompt: EventRecord
    ) -> list[TResponseInputItem] | None:
        """The model input of a regenerated or edited prompt that sent files: the prompt
        with the files its source sent (those deleted since are left out)."""
        ids = [str(a["id"]) for a in user_prompt.payload.get("attachments") or []]
        if not ids:
            return None
        found = await AttachmentRepository(self.db).by_ids(ids)
        kept = [found[i] for i in ids if i in found]
        return prompt_input(prompt, kept) if kept else None

    def _start(
        self,
        user_id: str,
        chat_id: str,
        turn_id: str,
        prompt: str,
        prompt_seq: int,
        plan: TurnPlan | None,
        resume: PausedRun | None = None,
        first: EventRecord | None = None,
        before: tuple[EventRecord, ...] = (),
        model_input: list[TResponseInputItem] | None = None,
    ) -> asyncio.Task[None]:
        """Start the turn's task and register it, with no await in between: from here on
        this process runs the turn, for cancels and lease renewals. ``first``: the
        turn's ``user_prompt``, published once the chat's earlier tasks here are done,
        after ``before`` (the ``turn_superseded`` events written with it).
        ``model_input``: what the model is given instead of ``prompt``."""
        active = ActiveTurn(
            turn_id=turn_id,
            chat_id=chat_id,
            user_id=user_id,
            prompt_seq=prompt_seq,
            channel=channel_of(user_id, chat_id),
        )
        earlier = [other for other in self._active.of_chat(chat_id) if other.task is not None]
        active.task = asyncio.create_task(
            self._run(active, prompt, plan, resume, first, earlier, before, model_input),
            name=f"turn-{turn_id}",
        )
        self._active.add(active)
        return active.task

    async def _run(
        self,
        active: ActiveTurn,
        prompt: str,
        plan: TurnPlan | None,
        resume: PausedRun | None,
        first: EventRecord | None,
        earlier: list[ActiveTurn],
        before: tuple[EventRecord, ...] = (),
        model_input: list[TResponseInputItem] | None = None,
    ) -> None:
        """The turn's task: once the chat's earlier tasks here are done, its run."""
        try:
            await self._after_earlier(earlier)
        except asyncio.CancelledError:
            self._active.detach(active)
            raise
        if resume is None:
            assert first is not None
            opening = [*before, first]
            self.hub.begin_turn(active.channel, active.turn_id, opening[0].seq)
            self.hub.publish(active.channel, [Frame(r.seq, encode(r.to_wire())) for r in opening])
        else:
            self.hub.begin_turn(active.channel, active.turn_id, resume.after_seq + 1)
        await TurnRun(self._services, self.engine, active, prompt, plan, resume, model_input).run()

    async def _after_earlier(self, earlier: list[ActiveTurn]) -> None:
        """Wait for the chat's earlier tasks here: storage says they ended (the chat runs
        one turn at a time), but they may still be writing suggestions, or, closed
        elsewhere after their lease lapsed, still be running. Either way they stop now."""
        for other in earlier:
            if other.suggestion is not None:
                other.suggestion.cancel()
            if other.phase.run_going_on:
                other.stop()
        tasks = [other.task for other in earlier if other.task is not None]
        if tasks:
            await asyncio.wait(tasks)

    # -- approvals (docs/protocol.md §3a) ------------------------------------------------------

    async def decide(
        self,
        user_id: str,
        chat_id: str,
        approval_id: str,
        approve: bool,
        reason: str | None,
        via: str,
        plan: TurnPlan | None = None,
    ) -> Decided:
        """Take the person's decision on a pending approval of their chat; when it was the
        pause's last, the turn resumes here (with ``plan``, for another front end).

        Raises ``ApprovalNotFound`` / ``ApprovalDecided``, or ``ServerDraining`` while
        this instance shuts down (the approval stays pending: a resumed turn would be cut
        short mid-action); an approval that had expired is resolved as ``expired``
        (``Decided.expired``) instead of decided.
        """
        if self.draining:
            raise ServerDraining("the server is restarting; decide again in a moment")
        reason = (reason or "").strip() or None  # a blank reason is no reason
        if approve:
            await self._confirm_effect(user_id, chat_id, approval_id)
        decided = await self.approvals.decide(
            user_id,
            chat_id,
            approval_id,
            "approved" if approve else "rejected",
            reason,
            via,
            now_ts(),
            self.lease,
        )
        self._after_decision(decided, plan)
        return decided

    async def _confirm_effect(self, user_id: str, chat_id: str, approval_id: str) -> None:
        """An approval runs exactly what it showed (docs/protocol.md, "What an approval
        will do"): what the call would do is looked up again before the approval is
        taken; changed, the person is asked again (``NotApproved``) and nothing runs."""
        approval = await self.approvals.pending(user_id, chat_id, approval_id)
        preview = previews(self.engine.orchestrator).get(approval.name)
        if approval.effect is None or preview is None:
            return
        context = self.engine.make_context(user_id, chat_id, approval.turn_id)
        outcome = await preview(RunContextWrapper(context), dict(approval.arguments))
        if not isinstance(outcome, Effect):
            raise NotApproved(
                f"could not check what this would do now ({failure_text(outcome)}); nothing "
                "was run: try again in a moment, or reject it",
                retryable=True,
            )
        effect = wire_effect(outcome)
        if effect is None or effect.model_dump() == approval.effect:
            return
        new_id = new_approval_id()
        events = await self.approvals.ask_again(
            chat_id,
            approval_id,
            new_id,
            effect,
            f"what it would do changed: {outcome.summary}",
            now_ts(),
        )
        self.metrics.approvals.labels("superseded").inc()
        self.metrics.approvals.labels("asked").inc()
        self.metrics.events_persisted.inc(len(events))
        channel = channel_of(user_id, chat_id)
        self.hub.publish(channel, [Frame(r.seq, encode(r.to_wire())) for r in events])
        raise NotApproved(
            f"what this would do changed since you were asked ({outcome.summary}); nothing "
            "was run: the new request shows what it would do now",
            retryable=False,
            asked_again=new_id,
        )

    def _after_decision(self, decided: Decided, plan: TurnPlan | None = None) -> None:
        """Publish a decision and, when it was the pause's last, resume the turn here.
        Synchronous: the resumed turn is registered before anything else can run."""
        event, paused = decided.event, decided.resume
        self.metrics.approvals.labels(event.payload["decision"]).inc()
        self.metrics.events_persisted.inc()
        channel = channel_of(decided.owner, event.chat_id)
        self.hub.publish(channel, [Frame(event.seq, encode(event.to_wire()))])
        if paused is None:
            return
        self._start(
            paused.user_id,
            paused.chat_id,
            paused.turn_id,
            paused.prompt,
            paused.prompt_seq,
            plan,
            paused,
        )

    async def expire_approvals(self) -> int:
        """Resolve the approvals past their expiry as ``expired`` (each is treated as a
        rejection; a pause with none left pending resumes here). Returns how many."""
        expired = 0
        for approval_id, chat_id in await self.approvals.due():
            if self.draining:
                break  # the instances that stay up expire the rest
            decided = await self.approvals.expire(chat_id, approval_id, now_ts(), self.lease)
            if decided is None:
                continue  # decided meanwhile
            self._after_decision(decided)
            expired += 1
        return expired

    async def watch_approvals(self, every: float) -> None:
        """Run ``expire_approvals`` every ``every`` seconds, until cancelled."""
        await every_so_often(every, self.expire_approvals, "could not expire approvals")

    async def _supersede(self, user_id: str, chat_id: str, turn_id: str, via: str, ts: str) -> bool:
        """End the chat's paused turn (a new prompt or a cancel came); False when
        ``turn_id`` is not paused."""
        ending = await self.approvals.supersede(chat_id, turn_id, via, ts)
        if ending is None:
            return False
        channel = channel_of(user_id, chat_id)
        self.metrics.events_persisted.inc(len(ending))
        self.hub.publish(channel, [Frame(r.seq, encode(r.to_wire())) for r in ending])
        self.metrics.approvals.labels("superseded").inc(
            sum(r.type == "approval_resolved" for r in ending)
        )
        self.metrics.turns.labels("cancelled").inc()
        return True

    def announce_title(self, user_id: str, chat_id: str, title: str) -> None:
        """Tell every socket on the chat, on every instance, the title a person gave it:
        ``chat_renamed``, ephemeral."""
        event = ChatRenamedEvent(title=title)
        frame = Frame(None, encode(event.enveloped(chat_id, None, None)))
        self.hub.publish(channel_of(user_id, chat_id), [frame])

    # -- leases and orphans (websocket.leases) -----------------------------------------------

    async def renew_leases(self) -> None:
        await self.leases.renew()

    async def keep_leases(self) -> None:
        await self.leases.keep()

    async def close_orphans(self, ts: str) -> int:
        return await self.leases.close_orphans(ts)

    async def close_if_orphaned(self, user_id: str, chat_id: str) -> bool:
        return await self.leases.close_if_orphaned(user_id, chat_id)

    async def watch_orphans(self) -> None:
        await self.leases.watch_orphans()

    # -- cancel -----------------------------------------------------------------------------

    def cancel(self, chat_id: str, turn_id: str | None = None) -> bool:
        """Cancel the chat's turn running in this process."""
        active = self._active.current(chat_id)
        if active is None or (turn_id is not None and turn_id != active.turn_id):
            return False
        return active.cancel()

    async def cancel_anywhere(self, user_id: str, chat_id: str, turn_id: str | None = None) -> bool:
        """Cancel the chat's running turn, whichever instance runs it; False when no
        such turn runs. Raises when the stop cannot be recorded (the database is down):
        the caller must say so, never pretend it was delivered."""
        for _ in range(3):  # the turn may pause, resume or end while we look
            if self.cancel(chat_id, turn_id):
                return True
            running = await self.store.running_turn(chat_id)
            if running is None or (turn_id is not None and running.id != turn_id):
                return False
            # §3a: waiting for approvals, nothing runs to hear the cancel: end it here.
            if running.paused:
                if await self._supersede(user_id, chat_id, running.id, "cancel", now_ts()):
                    return True
                continue  # resumed meanwhile, here or elsewhere
            if self.cancel(chat_id, turn_id):
                return True  # resumed here meanwhile
            # Nobody left to hear it: end it here, as failed (it was cut short).
            if await self.leases.close_orphan(
                chat_id, running.id, channel_of(user_id, chat_id), now_ts()
            ):
                return True
            # Its runner sees the stop at its next renewal; Redis, when up, tells it now.
            if await self.store.request_cancel(chat_id, running.id):
                await self.cluster.request_cancel(chat_id, running.id)
                return True
        return False

    def running_task(self, chat_id: str, turn_id: str) -> asyncio.Task[None] | None:
        """The task running ``turn_id`` in this process (e.g. resumed by ``decide``)."""
        active = self._active.get(turn_id)
        return active.task if active is not None and active.chat_id == chat_id else None

    # -- shutdown ---------------------------------------------------------------------------

    async def wait_idle(self, within: float | None = None) -> bool:
        """Wait for every running turn to end; False if some still run after ``within`` s."""
        tasks = self._active.tasks()
        if not tasks:
            return True
        _, pending = await asyncio.wait(tasks, timeout=within)
        return not pending

    async def shutdown(self, grace: float) -> None:
        """Let turns finish within ``grace`` seconds, then cancel them (persisted as cancelled)."""
        if await self.wait_idle(grace):
            return
        for active in self._active:
            if active.suggestion is not None:
                active.suggestion.cancel()  # a nicety: never worth holding a shutdown
            active.cancel()
        await self.wait_idle(5.0)
