"""A RAP tool server (https://infinity.hydro.run/docs/rap), as a third party would write it.

It speaks only the wire format and shares no code with Switchboard (its HMAC signing is
written out here from docs/rap.md): it publishes a toolset at ``/.well-known/rap-toolset``,
acknowledges each invocation at ``/invoke`` with 200 at once, and POSTs ``tool_result``
messages to the invocation's ``callback_url`` from a background task, as scripted::

    tool.on("edit_file", Result("Replaced text in app/greet.py", display_as=[…]))
    tool.on("lookup", Silence())                 # never answers (timeouts)
    tool.on("lookup", Result("ok", copies=3))    # the same result three times

Every invocation (``tool.invocations``) and every callback answer (``tool.deliveries``:
status and body) is kept for the test to check.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.fakes.fake_service import FakeService

DIFF = (
    "--- app/greet.py\n+++ app/greet.py\n@@ -1,2 +1,2 @@\n def greet():\n"
    "-    return 'hi'\n+    return 'hello'\n"
)

TOOLS = [
    # What each operation declares decides whether a call waits for approval: a write
    # asks, a read does not, and an operation that says nothing asks too.
    {
        "name": "edit_file",
        "description": "Replace a file's content in the repository.",
        "side_effect": True,
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    {
        "name": "lookup",
        "description": "Look a term up in the team's notes.",
        "side_effect": False,
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
    {
        "name": "watch_repo",
        "description": "Subscribe to pushes to a repository.",
        "inputSchema": {
            "type": "object",
            "properties": {"repo": {"type": "string"}},
            "required": ["repo"],
        },
    },
]


@dataclass(frozen=True)
class Result:
    """A ``tool_result`` (or, with ``kind="oauth"``, an ``oauth`` message)."""

    text: str = "done"
    display_as: list[dict[str, Any]] | None = None
    subscription: bool = False
    copies: int = 1  # deliveries of the very same message
    delay: float = 0.0  # before the first delivery
    id: str | None = None  # override the echoed id (a wrong one)
    group_id: str | None = None  # override the echoed group_id
    signature: str | None = None  # "forged": sign with another secret; "none": omit
    kind: str = "tool_result"
    auth_url: str = "https://auth.example.com/authorize?client_id=notes"


@dataclass(frozen=True)
class Silence:
    """Acknowledge the invocation and never send a result."""


@dataclass(frozen=True)
class Delivery:
    status: int
    body: Any


def signature(secret: str, body: bytes, stamp: int | None = None) -> str:
    stamp = int(time.time()) if stamp is None else stamp
    mac = hmac.new(secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={stamp},v1={mac}"


def signature_ok(secret: str, body: bytes, header: str | None) -> bool:
    if not header:
        return False
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    stamp = parts.get("t", "")
    if not stamp.isdigit() or abs(time.time() - int(stamp)) > 300:
        return False
    return hmac.compare_digest(
        signature(secret, body, int(stamp)).split("v1=")[1], parts.get("v1", "")
    )


class RapToolServer(FakeService):
    def __init__(self, name: str = "notes-tools", secret: str | None = None) -> None:
        super().__init__()
        self.name = name
        self.secret = secret
        self.scripts: dict[str, list[Result | Silence]] = {}
        self.invocations: list[dict[str, Any]] = []
        self.invocation_signed: list[bool] = []
        self.deliveries: list[Delivery] = []
        self.delivered = asyncio.Event()  # set after each callback answer
        self.invoked = asyncio.Event()  # set by the first invocation
        self._tasks: set[asyncio.Task[None]] = set()
        self._client = httpx.AsyncClient(timeout=10)

    def routes(self) -> list[tuple[str, Any, list[str]]]:
        return [
            ("/.well-known/rap-toolset", self._toolset, ["GET"]),
            ("/invoke", self._invoke, ["POST"]),
            ("/close_thread", self._close_thread, ["POST"]),
        ]

    def on(self, operation: str, *steps: Result | Silence) -> None:
        """What the next invocations of ``operation`` get (the last step repeats)."""
        self.scripts.setdefault(operation, []).extend(steps)

    def toolset(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": "Notes and repository tools of the team",
            "endpoint": f"{self.base_url}/invoke",
            "tools": TOOLS,
        }

    async def wait_deliveries(self, count: int, within: float = 10) -> list[Delivery]:
        async with asyncio.timeout(within):
            while len(self.deliveries) < count:
                self.delivered.clear()
                await self.delivered.wait()
        return self.deliveries

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._client.aclose()

    # -- endpoints ----------------------------------------------------------------------

    async def _toolset(self, request: Request) -> Response:
        return JSONResponse(self.toolset())

    async def _close_thread(self, request: Request) -> Response:
        return Response(status_code=200)

    async def _invoke(self, request: Request) -> Response:
        body = await request.body()
        invocation = json.loads(body)
        self.invocations.append(invocation)
        self.invoked.set()
        if self.secret is not None:
            self.invocation_signed.append(
                signature_ok(self.secret, body, request.headers.get("x-switchboard-signature"))
            )
        steps = self.scripts.get(invocation["operation"]) or [Result(f"echo {invocation}")]
        step = steps.pop(0) if len(steps) > 1 else steps[0]
        if isinstance(step, Result):
            task = asyncio.create_task(self._answer(invocation, step))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return Response(status_code=200)  # acknowledged; the result comes later

    async def _answer(self, invocation: dict[str, Any], step: Result) -> None:
        await asyncio.sleep(step.delay)
        message: dict[str, Any] = {
            "type": step.kind,
            "group_id": step.group_id or invocation["group_id"],
            "id": step.id or invocation["id"],
            "call_id": invocation.get("call_id"),
        }
        if step.kind == "oauth":
            message["auth_url"] = step.auth_url
        else:
            message["text"] = step.text
            if step.display_as is not None:
                message["display_as"] = step.display_as
            if step.subscription:
                message["subscription"] = True
        body = json.dumps(message).encode()
        for _ in range(step.copies):
            headers = {"Content-Type": "application/json"}
            if step.signature == "forged":
                headers["X-Switchboard-Signature"] = signature("not-the-shared-secret!!", body)
            elif self.secret is not None and step.signature != "none":
                headers["X-Switchboard-Signature"] = signature(self.secret, body)
            answer = await self._client.post(
                invocation["callback_url"], content=body, headers=headers
            )
            try:
                parsed = answer.json()
            except ValueError:
                parsed = answer.text
            self.deliveries.append(Delivery(answer.status_code, parsed))
            self.delivered.set()
