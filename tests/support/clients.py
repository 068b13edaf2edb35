"""Clients of a live server: the socket client that keeps every event it received, and the
official ``openai`` client pointed at ``/v1``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from openai import AsyncOpenAI
from websockets.asyncio.client import ClientConnection, connect

from tests.support.servers import LiveServer


class Client:
    """A websockets client that decodes events and keeps everything it received.

    ``auto_approve``: approve every approval request as it arrives (PROTOCOL §3a), as a
    person clicking Approve would, for tests about something else than approvals.
    """

    def __init__(self, connection: ClientConnection, auto_approve: bool = False) -> None:
        self.connection = connection
        self.auto_approve = auto_approve
        self.events: list[dict[str, Any]] = []

    async def send(self, frame: dict[str, Any] | str) -> None:
        await self.connection.send(frame if isinstance(frame, str) else json.dumps(frame))

    async def recv(self, within: float = 10) -> dict[str, Any]:
        event = json.loads(await asyncio.wait_for(self.connection.recv(), within))
        self.events.append(event)
        if self.auto_approve and event["type"] == "approval_required":
            await self.decide(event["approval_id"])
        return event

    async def until(self, type_: str, within: float = 20) -> list[dict[str, Any]]:
        """Receive until an event of ``type_``; return the events received on the way."""
        received = []
        async with asyncio.timeout(within):
            while True:
                event = await self.recv(within)
                received.append(event)
                if event["type"] == type_:
                    return received

    async def turn(self, text: str, *, approve: bool = True, **fields: Any) -> list[dict[str, Any]]:
        """Send a prompt and return every event up to its suggested prompts, deciding each
        approval it asks for as ``approve`` says (PROTOCOL §3a), as a person would."""
        await self.send({"type": "prompt", "text": text, **fields})
        events = await self.decide_until_end(approve)
        if events[-1]["status"] == "completed":
            events += await self.until("suggested_prompts")
        return events

    async def decide_until_end(
        self, approve: bool = True, within: float = 20
    ) -> list[dict[str, Any]]:
        """Receive until ``end_of_stream``, approving (or rejecting) each request."""
        received = []
        async with asyncio.timeout(within):
            while True:
                event = await self.recv(within)
                received.append(event)
                if event["type"] == "approval_required" and not self.auto_approve:
                    await self.decide(event["approval_id"], approve)
                if event["type"] == "end_of_stream":
                    return received

    async def decide(
        self, approval_id: str, approve: bool = True, reason: str | None = None
    ) -> None:
        await self.send(
            {
                "type": "approval",
                "approval_id": approval_id,
                "decision": "approve" if approve else "reject",
                "reason": reason,
            }
        )


@asynccontextmanager
async def open_client(
    url: str, *, auto_approve: bool = False, **kwargs: Any
) -> AsyncIterator[Client]:
    # max_queue=None: a test often stops reading a socket it keeps open (a second socket
    # on the chat, say); with websockets' bounded queue the client would then stop reading
    # the connection, miss the server's close frame and wait out its close_timeout (10 s).
    async with connect(url, open_timeout=10, **{"max_queue": None, **kwargs}) as connection:
        yield Client(connection, auto_approve)


def client_for(live: LiveServer, token: str = "sk-local-unused") -> AsyncOpenAI:
    """The ``openai`` client on ``live``'s Open Responses endpoint, authenticated by
    ``token``."""
    # max_retries=0: a test sees each error the server answers, not the client's retries.
    return AsyncOpenAI(base_url=f"{live.http}/v1", api_key=token, max_retries=0, timeout=30)
