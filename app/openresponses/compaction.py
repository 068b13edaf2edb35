"""``POST /v1/responses/compact``: a conversation as a shorter input window.

The window is one ``compaction`` item whose ``encrypted_content`` holds the conversation
condensed: messages as their text (an image or a file as a note that one was there),
tool calls with their outputs cut to ``MAX_OUTPUT_CHARS`` (outputs are what makes a
conversation long), anything else left out. It is sealed with the server's key
(``SWITCHBOARD_SECRET_KEY``, Fernet) for the user who asked: the client cannot read or
alter it, another user cannot replay it, and only this server opens it again, when the
item comes back as input (``expander``) to start a new chain.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from cryptography.fernet import InvalidToken, MultiFernet

from app.openresponses.errors import invalid
from app.openresponses.request import Expand
from app.openresponses.stream import new_id

VERSION = 1
MAX_OUTPUT_CHARS = 600
_CUT = " […]"
_PART_NOTES = {"input_image": "[an image]", "input_file": "[a file]"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        elif kind in _PART_NOTES:
            texts.append(_PART_NOTES[str(kind)])
    return "\n".join(texts)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT_CHARS else text[: MAX_OUTPUT_CHARS - len(_CUT)] + _CUT


def condense(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Model input items, shortened: what a compaction item holds. Pure."""
    out: list[dict[str, Any]] = []
    calls: set[str] = set()
    for item in items:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") in ("user", "assistant", "system", "developer"):
            text = _text(item.get("content"))
            if text:
                out.append({"type": "message", "role": item["role"], "content": text})
        elif kind == "function_call":
            call_id = str(item.get("call_id"))
            calls.add(call_id)
            out.append(
                {
                    "type": "function_call",
                    "call_id": call_id,
                    "name": str(item.get("name")),
                    "arguments": str(item.get("arguments") or "{}"),
                }
            )
        elif kind == "function_call_output" and str(item.get("call_id")) in calls:
            output = item.get("output")
            text = output if isinstance(output, str) else _text(output)
            out.append(
                {"type": "function_call_output", "call_id": item["call_id"], "output": _clip(text)}
            )
    return out


def seal(fernet: MultiFernet, user_id: str, items: list[dict[str, Any]]) -> str:
    payload = {"v": VERSION, "user": user_id, "items": items}
    return fernet.encrypt(json.dumps(payload, ensure_ascii=False).encode()).decode()


def _valid_item(item: object) -> bool:
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    if kind == "message":
        return item.get("role") in ("user", "assistant", "system", "developer") and isinstance(
            item.get("content"), str
        )
    if kind == "function_call":
        return all(isinstance(item.get(key), str) for key in ("call_id", "name", "arguments"))
    if kind == "function_call_output":
        return isinstance(item.get("call_id"), str) and isinstance(item.get("output"), str)
    return False


def expander(fernet: MultiFernet, user_id: str) -> Expand:
    """Opens the compaction items of ``user_id``; anything else is a 400."""

    def expand(content: str, where: str) -> list[dict[str, Any]]:
        param = f"{where}.encrypted_content"
        try:
            payload = json.loads(fernet.decrypt(content.encode()))
        except (InvalidToken, ValueError, UnicodeError):
            raise invalid(
                "this compaction item was not made by this server (or its key has changed "
                "since): send the conversation itself instead",
                param,
                "invalid_encrypted_content",
            ) from None
        items = payload.get("items") if isinstance(payload, dict) else None
        if (
            not isinstance(payload, dict)
            or payload.get("v") != VERSION
            or payload.get("user") != user_id
            or not isinstance(items, list)
            or not all(_valid_item(item) for item in items)
        ):
            raise invalid(
                "this compaction item belongs to another user or another version of "
                "the server: send the conversation itself instead",
                param,
                "invalid_encrypted_content",
            )
        return [dict(item) for item in items]

    return expand


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)  # the usual rule of thumb, as the offline model counts


def compaction_resource(
    fernet: MultiFernet, user_id: str, items: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The ``response.compaction`` object for a conversation's model items."""
    condensed = condense(items)
    sealed = seal(fernet, user_id, condensed)
    read = _tokens(json.dumps(list(items), default=str))
    written = _tokens(json.dumps(condensed))
    return {
        "id": new_id("resp"),
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": [{"id": new_id("cmp"), "type": "compaction", "encrypted_content": sealed}],
        "usage": {
            "input_tokens": read,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": written,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": read + written,
        },
    }
