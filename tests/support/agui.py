"""Talking AG-UI to a live server: a ``RunAgentInput``, the SSE answer read and checked.

Every event is validated with the ``ag-ui-protocol`` package's own ``Event`` union, and a
run's order with the rules ``@ag-ui/client`` enforces (``verifyEvents``): ``RUN_STARTED`` or
``RUN_ERROR`` first, text messages and tool calls opened before and closed after their
content, nothing open at ``RUN_FINISHED``, nothing after the terminal event.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from ag_ui.core import Event
from pydantic import TypeAdapter

from tests.support.servers import LiveServer

EVENT = TypeAdapter(Event)
MULTI = "find sushi in Boston and email the list to bob@example.com"
LOCAL_USER = "local"


def new_thread() -> str:
    return str(uuid.uuid4())


def prompt_input(thread_id: str, text: str, **fields: Any) -> dict[str, Any]:
    """A ``RunAgentInput`` whose last message is the person's new ``text``."""
    message = {"id": f"m-{uuid.uuid4().hex[:12]}", "role": "user", "content": text}
    return {
        "threadId": thread_id,
        "runId": f"r-{uuid.uuid4().hex[:12]}",
        "messages": [message],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **fields,
    }


def resume_input(thread_id: str, *entries: dict[str, Any]) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": f"r-{uuid.uuid4().hex[:12]}",
        "messages": [],
        "resume": list(entries),
    }


def approve(interrupt_id: str, approved: bool = True, **payload: Any) -> dict[str, Any]:
    return {
        "interruptId": interrupt_id,
        "status": "resolved",
        "payload": {"approved": approved, **payload},
    }


@dataclass
class Answer:
    status: int
    headers: httpx.Headers
    text: str
    events: list[dict[str, Any]]

    def of(self, type_: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["type"] == type_]

    @property
    def types(self) -> list[str]:
        return [event["type"] for event in self.events]

    @property
    def last(self) -> dict[str, Any]:
        return self.events[-1]

    @property
    def interrupts(self) -> list[dict[str, Any]]:
        outcome = self.last.get("outcome") or {}
        assert outcome.get("type") == "interrupt", self.last
        return list(outcome["interrupts"])

    def text_of(self) -> str:
        return "".join(event["delta"] for event in self.of("TEXT_MESSAGE_CONTENT"))

    def error(self) -> dict[str, Any]:
        """A refused request's REST error."""
        assert self.status >= 400, self.text
        body = json.loads(self.text)
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
        return dict(body["error"])


def parse_sse(text: str) -> list[dict[str, Any]]:
    events = []
    for block in text.split("\n\n"):
        data = [line[5:].lstrip() for line in block.splitlines() if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


def check_run(events: list[dict[str, Any]]) -> None:
    """The events are AG-UI events, in an order ``@ag-ui/client`` accepts."""
    assert events, "no event"
    for event in events:
        EVENT.validate_python(event)
    first = events[0]["type"]
    assert first in ("RUN_STARTED", "RUN_ERROR"), first
    text: set[str] = set()
    calls: set[str] = set()
    for index, event in enumerate(events):
        kind = event["type"]
        if kind in ("RUN_FINISHED", "RUN_ERROR"):
            assert index == len(events) - 1, f"{kind} is not the last event"
            if kind == "RUN_FINISHED":
                assert not text and not calls, (text, calls)
        elif kind == "TEXT_MESSAGE_START":
            assert event["messageId"] not in text
            text.add(event["messageId"])
        elif kind in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            assert event["messageId"] in text, event
            if kind == "TEXT_MESSAGE_END":
                text.discard(event["messageId"])
        elif kind == "TOOL_CALL_START":
            assert event["toolCallId"] not in calls
            calls.add(event["toolCallId"])
        elif kind in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            assert event["toolCallId"] in calls, event
            if kind == "TOOL_CALL_END":
                calls.discard(event["toolCallId"])
    assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"), "the run did not end"


async def post(
    live: LiveServer,
    body: Any,
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    check: bool = True,
) -> Answer:
    """POST ``body`` (JSON, or raw bytes/str as is) to ``/ag-ui``; a streamed answer is
    checked with ``check_run``."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(base_url=live.http, timeout=60) as http:
        if isinstance(body, bytes | str):
            sent.setdefault("Content-Type", "application/json")
            response = await http.post("/ag-ui", content=body, headers=sent)
        else:
            response = await http.post("/ag-ui", json=body, headers=sent)
    streamed = response.headers.get("content-type", "").startswith("text/event-stream")
    events = parse_sse(response.text) if streamed else []
    if streamed and check:
        check_run(events)
    return Answer(response.status_code, response.headers, response.text, events)


async def chat_detail(live: LiveServer, chat_id: str, token: str | None = None) -> dict[str, Any]:
    """The chat as the REST API shows it, with its persisted events."""
    async with live.client(token) as http:
        detail = (await http.get(f"/api/chats/{chat_id}")).json()
        events = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
    return {**detail, "events": events}


async def chat_ids(live: LiveServer, token: str | None = None) -> list[str]:
    async with live.client(token) as http:
        return [chat["id"] for chat in (await http.get("/api/chats")).json()["chats"]]


def sent_mail(live: LiveServer, user_id: str = LOCAL_USER) -> list[Any]:
    """What the demo Gmail backend sent for the user (its own record)."""
    return list(live.services.demo.for_user(user_id).namespace("gmail").get("sent", []))
