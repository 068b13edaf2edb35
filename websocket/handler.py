"""The chat WebSocket endpoint: ``/ws/chats/{chat_id}`` (docs/protocol.md §1–§4).

A socket is two loops: this receive loop, which must always stay responsive (``ping``,
``cancel``, malformed frames) and a sender task that writes the socket's queue, so the
turn (its own task, see ``websocket.turn``) never waits on a slow browser.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import Counter
from collections.abc import Awaitable
from typing import Any

from starlette.routing import WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from storage.attachments import AttachmentProblem, AttachmentRecord, AttachmentRepository
from storage.chats import ChatRepository
from storage.errors import (
    ApprovalDecided,
    ApprovalNotFound,
    ChatForbidden,
    ChatNotFound,
    ClientMessageReused,
    TurnInProgress,
)
from storage.turn_actions import ActionRefused, ActionRequest
from websocket.hub import (
    Frame,
    Mark,
    Snapshot,
    Subscription,
    SubscriptionOverflow,
    channel_of,
)
from websocket.leases import every_so_often
from websocket.ports import SocketGate, SocketServices, socket_services
from websocket.protocol import (
    CHAT_ID,
    MAX_SEQ,
    ActionFrame,
    ApprovalFrame,
    CancelFrame,
    ContinueFrame,
    EditFrame,
    ErrorCode,
    FrameError,
    PingFrame,
    PromptFrame,
    RegenerateFrame,
    ResumeFrame,
    encode,
    now_ts,
    parse_client_frame,
)
from websocket.turn import NotApproved, ServerDraining
from wire.events import ErrorEvent, Event, LlmResponseDeltaEvent, PongEvent

logger = logging.getLogger("switchboard.socket")


CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_TOO_MANY = 4429
CLOSE_TOO_BIG = 1009
CLOSE_GOING_AWAY = 1001
CLOSE_SERVER_ERROR = 1011
CHAT_DELETED = "chat deleted"  # the reason of a 4403 close: the UI words it for people
# The reason of a 4401 close of an open socket: its token was revoked, or expired.
SIGNED_OUT = "credential revoked or expired: sign in again"
# How often every open socket's credential is looked at again, so that a revoked or
# expired one closes its sockets even when they only listen (docs/auth.md). A frame that
# acts is checked as it comes.
CREDENTIAL_CHECK_SECONDS = 15.0
# Seconds a close may wait for the peer to take what was sent before it; then the
# connection is cut (a peer that stopped reading would hold it open for ever).
CLOSE_TIMEOUT = 2.0


class ConnectionCounter:
    """Open sockets: per user, to enforce ``max_connections_per_user``, and all of them,
    to close them with 1001 when the server shuts down."""

    def __init__(self) -> None:
        self._open: Counter[str] = Counter()
        self._sessions: set[_Session] = set()

    def try_open(self, user_id: str, limit: int) -> bool:
        if self._open[user_id] >= limit:
            return False
        self._open[user_id] += 1
        return True

    def close(self, user_id: str) -> None:
        self._open[user_id] -= 1
        if self._open[user_id] <= 0:
            del self._open[user_id]

    def track(self, session: _Session) -> None:
        self._sessions.add(session)

    def untrack(self, session: _Session) -> None:
        self._sessions.discard(session)

    @property
    def total(self) -> int:
        return sum(self._open.values())

    async def close_all(self, code: int, reason: str) -> None:
        await self._close(list(self._sessions), code, reason)

    async def recheck(self) -> int:
        """Look at every open socket's credential again; close those whose credential is
        revoked or expired (4401). Returns how many were closed."""
        closed = 0
        for session in list(self._sessions):
            if not await session.signed_in(sweep=True):
                closed += 1
        return closed

    async def watch_credentials(self, every: float = CREDENTIAL_CHECK_SECONDS) -> None:
        """``recheck`` every ``every`` seconds, until cancelled."""
        await every_so_often(every, self.recheck, "could not re-check the sockets' credentials")

    async def close_chat(self, chat_id: str) -> None:
        """Close this process's sockets on a deleted chat: its id may be created again,
        by anyone, and an old socket must not stay attached to the new chat."""
        sessions = [session for session in self._sessions if session.chat_id == chat_id]
        await self._close(sessions, CLOSE_FORBIDDEN, CHAT_DELETED)

    @staticmethod
    async def _close(sessions: list[_Session], code: int, reason: str) -> None:
        await asyncio.gather(
            *(session.close(code, reason) for session in sessions), return_exceptions=True
        )


async def _refuse(websocket: WebSocket, code: int, reason: str) -> None:
    # Accept first: a close before accept becomes an HTTP 403 and the client never
    # learns the protocol's close code. No data frame is exchanged either way.
    await websocket.accept()
    await websocket.close(code=code, reason=reason)


def _cut(websocket: WebSocket) -> None:
    """Drop the connection now (a TCP reset), with no close frame: nobody would read it.

    ASGI has no message for this, and uvicorn's own close waits for its write buffer to
    drain, for ever if the peer never reads. Its ``receive`` is a method of the connection's
    protocol, which holds the transport. Under another server this does nothing: its own
    timeouts end the connection.
    """
    protocol = getattr(websocket._receive, "__self__", None)
    transport = getattr(protocol, "transport", None)
    if isinstance(transport, asyncio.Transport):
        transport.abort()


def _parse_after_seq(raw: str | None) -> int | None:
    if raw is None:
        return None
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18 or int(raw) > MAX_SEQ:
        raise ValueError(raw)
    return int(raw)


async def chat_socket(websocket: WebSocket) -> None:
    services = socket_services(websocket)
    settings = services.settings
    gate: SocketGate = services.gate
    chat_id = websocket.path_params["chat_id"]

    if not CHAT_ID.fullmatch(chat_id):
        return await _refuse(websocket, CLOSE_BAD_REQUEST, "chat id must match [A-Za-z0-9_-]{1,64}")
    if not gate.origin_allowed(websocket):
        return await _refuse(websocket, CLOSE_FORBIDDEN, "origin not allowed")
    try:
        after_seq = _parse_after_seq(websocket.query_params.get("after_seq"))
    except ValueError:
        return await _refuse(
            websocket, CLOSE_BAD_REQUEST, f"after_seq must be an integer from 0 to {MAX_SEQ}"
        )
    user = await gate.authenticate(websocket)
    if user is None:
        return await _refuse(websocket, CLOSE_UNAUTHENTICATED, "authentication required")
    try:
        chat = await ChatRepository(services.db, user.id).get_or_create(chat_id)
    except ChatForbidden:
        return await _refuse(websocket, CLOSE_FORBIDDEN, "not your chat")
    connections: ConnectionCounter = services.connections
    if not connections.try_open(user.id, settings.max_connections_per_user):
        return await _refuse(websocket, CLOSE_TOO_MANY, "too many connections")

    await websocket.accept()
    session = _Session(websocket, services, user.id, chat_id)
    connections.track(session)
    services.metrics.sockets_open.inc()
    try:
        await session.serve(after_seq, has_events=chat.last_seq > 0)
    finally:
        services.metrics.sockets_open.dec()
        connections.untrack(session)
        connections.close(user.id)


class _Session:
    """One accepted socket on one chat."""

    def __init__(
        self, websocket: WebSocket, services: SocketServices, user_id: str, chat_id: str
    ) -> None:
        self.websocket = websocket
        self.services = services
        self.settings = services.settings
        self.user_id = user_id
        self.chat_id = chat_id
        # Names this socket in the record of the approvals it decides (and in logs).
        self.id = secrets.token_hex(6)
        self.subscription: Subscription | None = None
        self.sender: asyncio.Task[None] | None = None

    async def serve(self, after_seq: int | None, *, has_events: bool = True) -> None:
        turns = self.services.turns
        # The instance running this chat's turn may have died: once its lease has expired
        # end that turn now, rather than have this socket wait for the sweep. (A chat with
        # no events when the socket opened had no turn to orphan.)
        try:
            if has_events:
                await turns.close_if_orphaned(self.user_id, self.chat_id)
        except Exception:
            logger.warning(
                "could not check for an orphaned turn",
                extra={"chat_id": self.chat_id},
                exc_info=True,
            )
        await self._follow(after_seq)
        try:
            await self._receive_loop()
        finally:
            await self._stop_sender()

    # -- outbound ---------------------------------------------------------------------

    async def _follow(self, after_seq: int | None) -> None:
        """(Re)subscribe: replay persisted events after ``after_seq``, then go live."""
        channel = channel_of(self.user_id, self.chat_id)
        subscription, snapshot = await self.services.hub.subscribe(channel)
        self.subscription = subscription
        self.sender = asyncio.create_task(self._send_loop(subscription, snapshot, after_seq))

    async def _stop_sender(self) -> None:
        if self.sender is not None:
            self.sender.cancel()
            await asyncio.gather(self.sender, return_exceptions=True)
            self.sender = None
        if self.subscription is not None:
            self.subscription.close()
            self.subscription = None

    async def _send_loop(
        self, subscription: Subscription, snapshot: Snapshot, after_seq: int | None
    ) -> None:
        send = self.websocket.send_text
        sent = self.services.metrics.events_sent
        sender = asyncio.current_task()
        assert sender is not None
        interrupted = False

        def interrupt() -> None:
            # A peer that stops reading leaves this task waiting in send (its TCP buffers
            # full) while the queue grows: the overflow must reach it wherever it waits.
            nonlocal interrupted
            interrupted = True
            sender.cancel()

        subscription.on_overflow = interrupt
        last_sent = -1
        # Deltas the snapshot already holds (a turn running on another instance).
        covered: Mark | None = None
        # After catching up from storage, deltas already queued may belong to a message
        # whose llm_response was just sent: drop deltas until the next persisted frame.
        stale_deltas = False
        # Storage replayed in full (no turn was running here when the socket subscribed)
        # may end with events that are queued live too, behind their message's deltas:
        # such deltas wait for the next persisted frame, which says whether the replay
        # already sent their message (a prompt sent as the socket opens races its replay).
        held: list[Frame] | None = None
        replayed = -1
        try:
            if after_seq is not None:
                snapshot = await self._trusted(snapshot, subscription.channel)
                covered = snapshot.mark
                last_sent = replayed = await self._replay(snapshot, after_seq)
                if snapshot.db_upto is None and replayed >= 0:
                    held = []
            while True:
                frame = await subscription.get()
                # Where storage is read from when live frames were lost: after what was
                # sent, else after what the client said it had.
                since = last_sent if last_sent >= 0 else after_seq
                if frame.resync:
                    if since is not None and since >= 0:
                        caught_up = await self._catch_up(since)
                        if caught_up > since:
                            last_sent, stale_deltas, held = caught_up, True, None
                    continue
                if frame.seq is not None:
                    if frame.seq <= last_sent:  # already replayed from storage
                        if held is not None:
                            held.clear()  # deltas of a message the replay sent whole
                            if frame.seq >= replayed:
                                held = None  # nothing queued was replayed after this
                        continue
                    if since is not None and 0 <= since < frame.seq - 1:
                        # Frames of another instance were lost on the way (a failed Redis
                        # publish): storage has them.
                        last_sent = await self._catch_up(since, before=frame.seq)
                    last_sent, stale_deltas = frame.seq, False
                    if held:
                        for delta in held:
                            await send(delta.text)
                            sent.inc()
                    held = None
                elif stale_deltas and frame.delta is not None:
                    continue
                elif held is not None and frame.delta is not None:
                    held.append(frame)
                    continue
                elif (
                    covered is not None and frame.mark is not None and _covers(covered, frame.mark)
                ):
                    continue
                await send(frame.text)
                sent.inc()
        except SubscriptionOverflow:  # it overflowed before this task began
            await self._too_slow()
        except asyncio.CancelledError:
            # Interrupted by the overflow alone: close. Cancelled by anything else, as well
            # or instead (_stop_sender: the socket is going away): stop.
            if not interrupted or sender.cancelling() > 1:
                raise
            sender.uncancel()
            await self._too_slow()
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass  # the receive loop notices the drop and cleans up

    async def _too_slow(self) -> None:
        logger.warning("socket too slow, closing", extra={"chat_id": self.chat_id})
        await self._close(CLOSE_SERVER_ERROR, "too slow: reconnect and resume")

    async def _trusted(self, snapshot: Snapshot, channel: str) -> Snapshot:
        """``snapshot``, unless it is another instance's of a turn that has ended.

        Such a snapshot is left in Redis when the turn's end could not be told (Redis was
        away, the instance was killed). Trusted, it would cut the replay at that old turn
        and the socket would wait for frames that never come.
        """
        if not snapshot.remote or snapshot.turn_id is None:
            return snapshot
        turn = await self.services.store.get_turn(snapshot.turn_id)
        if turn is not None and turn.status == "running":
            return snapshot
        cluster = self.services.hub.cluster
        if cluster is not None:
            cluster.turn_ended(channel, snapshot.turn_id)  # tidy it away: compare-and-delete
        return Snapshot()

    async def _replay(self, snapshot: Snapshot, after_seq: int) -> int:
        """Send persisted events after ``after_seq`` exactly once, then the text so far.

        The snapshot was taken atomically with the subscription: storage is replayed up to
        where it ends, then the frames it holds, then the message text streamed so far;
        everything later is in the live queue. Returns the highest seq sent (-1 if none):
        the live queue skips only what was replayed, so an ``after_seq`` past the chat's
        end (a chat deleted and created again under its id) cannot hide new events.
        """
        send = self.websocket.send_text
        upper = snapshot.db_upto
        last_sent = after_seq
        highest_sent = -1
        if upper is None or after_seq < upper:
            for record in await self.services.store.list_after(self.chat_id, after_seq):
                if upper is not None and record.seq > upper:
                    break
                await send(encode(record.to_wire()))
                last_sent = highest_sent = record.seq
        for frame in snapshot.frames:
            if frame.seq is not None and frame.seq > last_sent:
                await send(frame.text)
                last_sent = highest_sent = frame.seq
        if snapshot.turn_id is not None and snapshot.current_text:
            delta = LlmResponseDeltaEvent(
                delta=snapshot.current_text, current_agent=snapshot.current_agent
            )
            await send(encode(delta.enveloped(self.chat_id, snapshot.turn_id, None)))
        return highest_sent

    async def _catch_up(self, last_sent: int, before: int | None = None) -> int:
        """Send the persisted events after ``last_sent`` (up to ``before``); returns the
        highest seq sent."""
        logger.warning("catching up a socket from storage", extra={"chat_id": self.chat_id})
        for record in await self.services.store.list_after(self.chat_id, last_sent):
            if before is not None and record.seq >= before:
                break
            await self.websocket.send_text(encode(record.to_wire()))
            last_sent = record.seq
        return last_sent

    def _reply(self, event: Event) -> None:
        """A connection-level frame for this socket only, in order with its other frames."""
        if self.subscription is not None:
            frame = encode(event.enveloped(self.chat_id, None, None))
            self.services.hub.send_to(self.subscription, Frame(None, frame))

    def _error(
        self,
        code: ErrorCode,
        message: str,
        retryable: bool = False,
        approval_id: str | None = None,  # which approval a refused decision was about
    ) -> None:
        self._reply(
            ErrorEvent(code=code, message=message, retryable=retryable, approval_id=approval_id)
        )

    async def close(self, code: int, reason: str) -> None:
        """Close from the server side; the receive loop then ends."""
        await self._stop_sender()
        await self._close(code, reason)

    async def _close(self, code: int, reason: str) -> None:
        if self.websocket.application_state != WebSocketState.CONNECTED:
            return
        try:
            # uvicorn sends nothing, the close frame included, while its write buffer is
            # full: a peer that stopped reading would keep this waiting for ever.
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await self.websocket.close(code=code, reason=reason)
        except TimeoutError:
            logger.warning(
                "socket not reading, connection cut", extra={"chat_id": self.chat_id, "code": code}
            )
            _cut(self.websocket)
        except (RuntimeError, WebSocketDisconnect):
            pass  # already closed, or the peer is gone

    # -- inbound ----------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        max_bytes = self.settings.max_frame_bytes
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                data = message.get("bytes") or b""
                if len(data) > max_bytes:
                    return await self._close(CLOSE_TOO_BIG, "frame too big")
                self._error("invalid_request", "send text frames holding JSON objects")
                continue
            if len(text) > max_bytes or len(text.encode()) > max_bytes:
                return await self._close(CLOSE_TOO_BIG, "frame too big")
            try:
                frame = parse_client_frame(text, max_prompt_chars=self.settings.max_prompt_chars)
            except FrameError as exc:
                self._error("invalid_request", str(exc))
                continue
            await self._handle(frame)

    async def signed_in(self, *, sweep: bool = False) -> bool:
        """Whether the socket's credential still holds (a cached answer is at most as old
        as the token cache allows, 30 s: docs/auth.md); if not, the socket is closed 4401.
        A check that cannot be made (the database is away) keeps a listening socket open
        (``sweep``) but lets no frame act."""
        try:
            user = await self.services.gate.authenticate(self.websocket)
        except Exception:
            logger.warning(
                "could not check a socket's credential",
                extra={"chat_id": self.chat_id},
                exc_info=True,
            )
            if not sweep:
                self._error("server_error", "could not check your sign-in; try again", True)
            return sweep
        if user is not None and user.id == self.user_id:
            return True
        logger.info(
            "closing a socket whose credential was revoked or expired",
            extra={"chat_id": self.chat_id},
        )
        await self.close(CLOSE_UNAUTHENTICATED, SIGNED_OUT)
        return False

    async def _handle(self, frame: Any) -> None:
        if isinstance(frame, PingFrame):
            self._reply(PongEvent())
            return
        # Every frame that acts or reads the chat again is authorised anew.
        if not await self.signed_in():
            return
        if isinstance(frame, PromptFrame):
            await self._prompt(frame)
        elif isinstance(frame, CancelFrame):
            await self._cancel(frame)
        elif isinstance(frame, ApprovalFrame):
            await self._approval(frame)
        elif isinstance(frame, RegenerateFrame | EditFrame | ContinueFrame):
            await self._action(frame)
        elif isinstance(frame, ResumeFrame):
            await self._stop_sender()
            if await ChatRepository(self.services.db, self.user_id).get(self.chat_id) is None:
                await self._close(CLOSE_FORBIDDEN, CHAT_DELETED)
                return
            await self._follow(frame.after_seq)

    async def _cancel(self, frame: CancelFrame) -> None:
        try:
            cancelled = await self.services.turns.cancel_anywhere(
                self.user_id, self.chat_id, frame.turn_id
            )
        except Exception:
            # Never acknowledged by silence: the person must know the turn may go on.
            logger.warning(
                "could not deliver a cancel", extra={"chat_id": self.chat_id}, exc_info=True
            )
            self._error(
                "server_error",
                "the stop could not be delivered (the database is "
                "unavailable); the turn may still be running: try again",
                retryable=True,
            )
            return
        if not cancelled:
            self._error("invalid_request", "no such turn is running")

    async def _approval(self, frame: ApprovalFrame) -> None:
        """§2/§3a: decide a pending approval; what goes wrong is this socket's error."""
        try:
            decided = await self.services.turns.decide(
                self.user_id,
                self.chat_id,
                frame.approval_id,
                frame.decision == "approve",
                frame.reason,
                f"socket:{self.id}",
            )
        except (ApprovalNotFound, ApprovalDecided) as exc:
            self._error("invalid_request", decision_refused(exc), approval_id=frame.approval_id)
        except NotApproved as exc:
            code: ErrorCode = "server_error" if exc.retryable else "invalid_request"
            self._error(code, str(exc), exc.retryable, approval_id=frame.approval_id)
        except ServerDraining as exc:
            self._error(
                "server_error",
                f"{exc}; reconnect and decide again",
                retryable=True,
                approval_id=frame.approval_id,
            )
        except Exception:
            logger.exception(
                "could not record an approval decision", extra={"chat_id": self.chat_id}
            )
            self._error(
                "server_error",
                "could not record the decision; try again",
                retryable=True,
                approval_id=frame.approval_id,
            )
        else:
            if decided.expired:
                self._error(
                    "invalid_request",
                    expired_refusal(frame.approval_id),
                    approval_id=frame.approval_id,
                )

    async def _within_limits(self) -> bool:
        services = self.services
        if services.turns.running_for(self.user_id) >= self.settings.max_turns_per_user:
            services.metrics.rate_limited.labels("turns").inc()
            self._error(
                "rate_limited",
                "too many turns running at once; wait for one to end",
                retryable=True,
            )
            return False
        wait = await services.prompt_limiter.wait_for(self.user_id)
        if wait is not None:
            services.metrics.rate_limited.labels("prompts").inc()
            self._error(
                "rate_limited",
                f"too many prompts; try again in {max(1, round(wait))} s",
                retryable=True,
            )
            return False
        return True

    async def _prompt(self, frame: PromptFrame) -> None:
        turns = self.services.turns
        if turns.draining:
            self._error(
                "server_error", "the server is restarting; reconnect and send again", retryable=True
            )
            return
        if not await self._within_limits():
            return
        attachments: list[AttachmentRecord] = []
        if frame.attachments:
            try:
                attachments = await AttachmentRepository(self.services.db).for_prompt(
                    self.user_id, self.chat_id, frame.attachments
                )
            except AttachmentProblem as exc:
                self._error("invalid_request", exc.message)
                return
        try:
            submitted = await turns.submit(
                self.user_id,
                self.chat_id,
                frame.text,
                frame.client_message_id,
                now_ts(),
                attachments=attachments,
            )
        except TurnInProgress:
            # A reply to this socket's frame, not an event of the running turn: no turn id.
            self._error(
                "turn_in_progress", "a turn is already running in this chat", retryable=True
            )
            return
        except ClientMessageReused as exc:
            self._error("invalid_request", str(exc))
            return
        except ChatNotFound:
            await self.close(CLOSE_FORBIDDEN, CHAT_DELETED)
            return
        except Exception:
            logger.exception("could not start turn", extra={"chat_id": self.chat_id})
            self._error("server_error", "could not start the turn; try again", retryable=True)
            return
        if not submitted.created and self.subscription is not None:
            record = submitted.user_prompt
            self.services.hub.send_to(self.subscription, Frame(None, encode(record.to_wire())))

    async def _action(self, frame: ActionFrame) -> None:
        """``regenerate``, ``edit``, ``continue`` (docs/protocol.md, "Regenerate, edit and
        continue"): like a prompt, but a refusal names its cause (``refusal``) and the
        frame it answers (``client_message_id``)."""
        turns = self.services.turns
        message_id = frame.client_message_id

        def refuse(code: ErrorCode, message: str, refusal: Any = None, retry: bool = False) -> None:
            self._reply(
                ErrorEvent(
                    code=code,
                    message=message,
                    retryable=retry,
                    refusal=refusal,
                    client_message_id=message_id,
                )
            )

        if turns.draining:
            refuse("server_error", "the server is restarting; reconnect and send again", retry=True)
            return
        if not await self._within_limits():
            return
        request = ActionRequest(
            frame.type, frame.turn_id, frame.prompt if isinstance(frame, EditFrame) else None
        )
        try:
            submitted = await turns.submit_action(
                self.user_id, self.chat_id, request, message_id, now_ts()
            )
        except ActionRefused as exc:
            code: ErrorCode = "not_found" if exc.refusal == "turn_not_found" else "invalid_request"
            if exc.refusal == "awaiting_approval":
                code = "turn_in_progress"
            refuse(code, exc.message, exc.refusal)
            return
        except TurnInProgress:
            refuse(
                "turn_in_progress", "a turn is already running in this chat", "turn_running", True
            )
            return
        except ClientMessageReused as exc:
            refuse("invalid_request", str(exc))
            return
        except ChatNotFound:
            await self.close(CLOSE_FORBIDDEN, CHAT_DELETED)
            return
        except Exception:
            logger.exception("could not start a turn action", extra={"chat_id": self.chat_id})
            refuse("server_error", "could not start the turn; try again", retry=True)
            return
        if not submitted.created and self.subscription is not None:
            record = submitted.user_prompt
            self.services.hub.send_to(self.subscription, Frame(None, encode(record.to_wire())))


def decision_refused(exc: ApprovalNotFound | ApprovalDecided) -> str:
    """Why a decision changed nothing; the same words for any approval id that is not a
    pending one of this chat (another user's, another chat's, made up)."""
    if isinstance(exc, ApprovalDecided):
        return f"approval '{exc.approval_id}' is already {exc.status}; the first decision stands"
    return f"no approval '{exc.approval_id}' in this chat"


def expired_refusal(approval_id: str) -> str:
    """Why a decision on an approval past its deadline changed nothing."""
    return f"approval '{approval_id}' had expired, so nothing was run"


def _covers(snapshot: Mark, mark: Mark) -> bool:
    """Whether a delta at ``mark`` is already part of the snapshot's text."""
    turn_id, message, end = snapshot
    return mark[0] == turn_id and (mark[1] < message or (mark[1] == message and mark[2] <= end))


class _ChatSocketApp:
    """``chat_socket`` as the route's ASGI app.

    A function endpoint Starlette would wrap in two coroutines and an exception handler
    wrapper (with closures), all kept for the socket's life: over a KiB per idle socket.
    The app's ``ExceptionMiddleware`` already wraps every socket with the same handlers.
    Not a coroutine function itself, so that no frame of its own stays either.
    """

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        return chat_socket(WebSocket(scope, receive=receive, send=send))


def websocket_routes() -> list[WebSocketRoute]:
    return [WebSocketRoute("/ws/chats/{chat_id}", _ChatSocketApp(), name="chat_socket")]
