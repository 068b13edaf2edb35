"""How a client asked to see Switchboard's own tool calls: the spec's vendor items, or
the Responses API's ``mcp_call`` items (docs/open-responses.md, "Tool items").

By default a call of one of Switchboard's tools is a ``switchboard:tool_call`` item, as
the Open Responses spec asks of provider items. Some clients read only the item types
OpenAI defines and reject a whole response holding another (``@ai-sdk/openai``'s
``generateText``). Such a client sends ``Switchboard-Tool-Items: mcp`` and gets each call
as an ``mcp_call`` item instead: the Responses API's item for a tool the provider ran on
a remote tool server (here ``server_label`` ``switchboard``), which those clients report
as a tool the provider ran, never as one for them to run.

The choice is a view, not a different response: the turn, its stored object and its
items' ids are the same either way, and only what goes out on the wire is rewritten
(``render_event``, ``render_body``). So an ``item_reference`` to an ``mcp_call`` finds the
stored item it stands for, and an ``mcp_call`` sent back as input reads as the
``switchboard:tool_call`` it is (``app.openresponses.request``). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from app.openresponses.errors import invalid
from app.openresponses.request import MCP_CALL, SERVER_LABEL, TOOL_CALL

HEADER = "Switchboard-Tool-Items"
View = Literal["switchboard", "mcp"]
VIEWS: tuple[View, ...] = ("switchboard", "mcp")


def view_of(headers: Mapping[str, str]) -> View:
    """The view a request asked for (``switchboard`` when it names none); a value that
    names no view is a 400, rather than a silent default the client did not mean."""
    value = headers.get(HEADER.lower(), "").strip().lower()
    if not value:
        return "switchboard"
    for view in VIEWS:
        if value == view:
            return view
    raise invalid(
        f"header {HEADER}: {value[:40]!r} is not a view of tool items; use 'mcp' (mcp_call "
        "items) or 'switchboard' (switchboard:tool_call items, the default)",
        HEADER,
    )


def _mcp_call(item: Mapping[str, Any]) -> dict[str, Any]:
    status = item.get("status")
    return {
        "type": MCP_CALL,
        "id": item["id"],  # the same id: references to either view find the stored item
        # The Responses API's mcp_call statuses include these three.
        "status": status if status in ("in_progress", "completed", "incomplete") else "completed",
        "server_label": SERVER_LABEL,
        "name": item["name"],
        "arguments": item["arguments"],
        "output": item.get("output"),
        # A call cut short has no output: the item says so, as the Responses API does.
        "error": "the call did not finish" if status == "incomplete" else None,
        "approval_request_id": None,
        # Not in the Responses API's item; kept so that the item round-trips exactly.
        "call_id": item["call_id"],
    }


def render_item(item: Any, view: View) -> Any:
    if view == "mcp" and isinstance(item, dict) and item.get("type") == TOOL_CALL:
        return _mcp_call(item)
    return item


def render_body(body: dict[str, Any], view: View) -> dict[str, Any]:
    """A Response object as the view shows it (``body`` itself for the default view)."""
    output = body.get("output")
    if view == "switchboard" or not isinstance(output, list):
        return body
    return {**body, "output": [render_item(item, view) for item in output]}


def render_event(event: dict[str, Any], view: View) -> dict[str, Any]:
    """A streaming event as the view shows it: the item of an item event, or the Response
    object of a lifecycle event."""
    if view == "switchboard":
        return event
    if "item" in event:
        return {**event, "item": render_item(event["item"], view)}
    if isinstance(event.get("response"), dict):
        return {**event, "response": render_body(event["response"], view)}
    return event
