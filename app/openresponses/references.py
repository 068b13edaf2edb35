"""``item_reference`` input items: an output item of an earlier response, named by its id.

A client that keeps the conversation itself but lets the server store responses may send
its earlier output back as references instead of the items (``@ai-sdk/openai`` does, with
``store`` on, its default). Each reference is replaced by the item exactly as the response
that made it returned it, before the request is read, so the rest of the request path sees
ordinary items. An item is found among the caller's ``RECENT`` most recent stored
responses, and on a WebSocket among the responses it made (stored or not); an id found
nowhere is a 400 naming the reference, as any bad value in the body is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from app.openresponses.errors import invalid
from storage.engine import Database
from storage.open_responses import ResponseRepository, StoredResponse

REFERENCE = "item_reference"
# Far more than a conversation's steps; a bound on what one request reads.
RECENT = 200
MAX_ID = 200


def _wanted(items: list[Any]) -> dict[str, int]:
    """The ids referenced, each with the index of its first reference."""
    wanted: dict[str, int] = {}
    for index, item in enumerate(items):
        if not (isinstance(item, dict) and item.get("type") == REFERENCE):
            continue
        ident = item.get("id")
        if not isinstance(ident, str) or not 0 < len(ident) <= MAX_ID:
            raise invalid(
                f"an {REFERENCE} item needs the id (a string of at most {MAX_ID} characters) "
                "of an output item of an earlier response",
                f"input[{index}].id",
            )
        wanted.setdefault(ident, index)
    return wanted


def _collect(bodies: Iterable[dict[str, Any] | None], wanted: Mapping[str, int]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for body in bodies:
        for item in (body or {}).get("output") or ():
            ident = item.get("id") if isinstance(item, dict) else None
            if isinstance(ident, str) and ident in wanted and ident not in found:
                found[ident] = item
    return found


async def resolve_references(
    body: object,
    db: Database,
    user_id: str,
    remembered: Mapping[str, StoredResponse] | None = None,
) -> object:
    """``body`` with each ``item_reference`` in its ``input`` list replaced by the item it
    names (``body`` itself when it has none); ``OpenResponsesError`` for one not found."""
    if not isinstance(body, dict) or not isinstance(body.get("input"), list):
        return body
    items: list[Any] = body["input"]
    wanted = _wanted(items)
    if not wanted:
        return body
    found = _collect((record.body for record in (remembered or {}).values()), wanted)
    if len(found) < len(wanted):
        recent = await ResponseRepository(db, user_id).recent_bodies(RECENT)
        found.update(_collect(recent, {k: v for k, v in wanted.items() if k not in found}))
    for ident, index in wanted.items():
        if ident not in found:
            raise invalid(
                f"no output item {ident!r} in your {RECENT} most recent stored responses "
                "(or this connection's): send the item itself instead of a reference",
                f"input[{index}].id",
                code="item_not_found",
            )
    resolved = [
        found[item["id"]] if isinstance(item, dict) and item.get("type") == REFERENCE else item
        for item in items
    ]
    return {**body, "input": resolved}
