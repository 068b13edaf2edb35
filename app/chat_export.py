"""A chat as a Markdown transcript a person can read, save or paste elsewhere.

Built from the persisted events (what the socket sent): prompts and final answers in
full; tool cards summarised by their plain text; approvals with their decision; errors.
Streaming deltas, suggestions and usage are left out: they are not the conversation. The
person's rating of an answer (thumbs up or down, and its comment) closes its turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from storage.feedback import FeedbackRecord
from storage.records import ChatRecord, EventRecord

TOOL_TEXT_CHARS = 500
FILENAME_CHARS = 60


def export_filename(chat: ChatRecord, extension: str) -> str:
    """An ASCII file name from the title (``chat-<id>`` without one)."""
    stem = re.sub(r"[^A-Za-z0-9]+", "-", chat.title or "").strip("-")[:FILENAME_CHARS]
    stem = stem.strip("-") or f"chat-{re.sub(r'[^A-Za-z0-9_-]+', '', chat.id)[:FILENAME_CHARS]}"
    return f"{stem}.{extension}"


RATING_WORDS = {"up": "👍 helpful", "down": "👎 not helpful"}
# How a turn replaced by a regenerate or an edit is marked (docs/protocol.md,
# "Regenerate, edit and continue"): it stays in the transcript, labelled.
REPLACED = "replaced by a newer answer"


def markdown_transcript(
    chat: ChatRecord,
    events: Iterable[EventRecord],
    ratings: Mapping[str, FeedbackRecord] | None = None,
) -> str:
    events = list(events)
    replaced = {e.turn_id for e in events if e.type == "turn_superseded"}
    lines = [f"# {_one_line(chat.title) or 'Untitled chat'}", ""]
    for event in events:
        lines += _event_lines(event.type, event.payload, event.ts, event.turn_id in replaced)
        rating = (ratings or {}).get(event.turn_id or "")
        if event.type == "end_of_stream" and rating is not None:
            lines += _rating_lines(rating)
    return "\n".join(lines).rstrip() + "\n"


def _rating_lines(rating: FeedbackRecord) -> list[str]:
    comment = f" — {_one_line(rating.comment)}" if rating.comment else ""
    return [f"> **Your rating**: {RATING_WORDS[rating.rating]}{comment}", ""]


def _event_lines(
    kind: str, payload: Mapping[str, Any], ts: str, replaced: bool = False
) -> list[str]:
    mark = f" ({REPLACED})" if replaced else ""
    if kind == "user_prompt":
        if payload.get("action") == "continue":
            return [f"## You · {ts} · asked to continue{mark}", ""]
        text = str(payload.get("text", ""))
        return [f"## You · {ts}{mark}", "", text, "", *_attachment_lines(payload)]
    if kind == "llm_response":
        return [f"## Assistant{mark}", "", str(payload.get("text", "")), ""]
    if kind == "turn_superseded":
        how = "edited prompt" if payload.get("action") == "edit" else "regenerated answer"
        return [f"> *The turn above was {REPLACED} ({how} below).*", ""]
    if kind == "tool_output":
        output = payload.get("output")
        output = output if isinstance(output, Mapping) else {}
        name = _one_line(output.get("friendly_name") or output.get("response_type") or "Tool")
        text = _tool_text(output)
        return [f"> **{name}**" + (f": {text}" if text else ""), ""]
    if kind == "approval_required":
        what = _one_line(payload.get("description") or payload.get("name"))
        return [f"> **Approval asked**: {what}", ""]
    if kind == "approval_resolved":
        reason = payload.get("reason")
        because = f" ({_one_line(reason)})" if reason else ""
        return [f"> **Approval {payload.get('decision', '')}**{because}", ""]
    if kind == "error":
        return [f"> **Error**: {_one_line(payload.get('message'))}", ""]
    return []


def _attachment_lines(payload: Mapping[str, Any]) -> list[str]:
    """The prompt's attachments by name, type and size (their bytes stay on the server)."""
    found = payload.get("attachments")
    if not isinstance(found, list) or not found:
        return []
    names = []
    for item in found:
        if isinstance(item, Mapping):
            size = item.get("size")
            shown = f"{size:,} bytes" if isinstance(size, int) else "?"
            names.append(f"{_one_line(item.get('name'))} ({item.get('content_type')}, {shown})")
    return [f"> **Attached**: {'; '.join(names)}", ""]


def _tool_text(output: Mapping[str, Any]) -> str:
    """The card's plain text: its ``text`` render hint, its error, or a string response."""
    for hint in output.get("display_as") or []:
        if isinstance(hint, Mapping) and hint.get("type") == "text":
            return _clip(hint.get("content"))
    if output.get("error_message"):
        return _clip(output["error_message"])
    response = output.get("response")
    return _clip(response) if isinstance(response, str) else ""


def _clip(value: object) -> str:
    text = _one_line(value)
    return text if len(text) <= TOOL_TEXT_CHARS else text[: TOOL_TEXT_CHARS - 1] + "…"


def _one_line(value: object) -> str:
    return " ".join(str(value).split()) if value is not None else ""
