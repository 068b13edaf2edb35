"""A chat's exports: a Markdown transcript a person can read, save or paste elsewhere,
and the parts of the JSON document (its model: ``app.api_models.ChatExportDocument``).

The transcript is built from the persisted events (what the socket sent): prompts and
answers in full; tool cards summarised by their plain text; approvals with their decision;
errors. Streaming deltas, suggestions and usage are left out: they are not the
conversation. Every answer shows as the UI shows it, marked as the UI marks it: cut off
(at a limit), declined, replaced by a newer answer; a turn that was stopped or did not
finish ends with a line saying so, after the text it had got to (kept with the turn, not
as an event). The person's rating of an answer (thumbs up or down, and its comment)
closes its turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from storage.feedback import FeedbackRecord
from storage.records import ChatRecord, EventRecord, TurnRecord

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


# An answer cut off at a limit (``llm_response``'s ``incomplete_reason``), in the UI's words.
CUT_OFF = {
    "max_output_tokens": "cut off at the model's length limit",
    "content_filter": "cut off by the model's content filter",
}
CUT_OFF_OTHER = "cut off before the model finished"
DECLINED = "declined to answer"
UNFINISHED = "unfinished"
# The line that closes a turn that did not complete (the UI's footer).
ENDINGS = {"cancelled": "Stopped", "failed": "Did not finish"}


def cut_off_reasons(events: Iterable[EventRecord]) -> dict[str, str]:
    """The turns whose answer was cut off, and why."""
    return {
        e.turn_id: str(e.payload["incomplete_reason"])
        for e in events
        if e.type == "llm_response" and e.turn_id and e.payload.get("incomplete_reason")
    }


def markdown_transcript(
    chat: ChatRecord,
    events: Iterable[EventRecord],
    turns: Iterable[TurnRecord] = (),
    ratings: Mapping[str, FeedbackRecord] | None = None,
) -> str:
    events = list(events)
    replaced = {e.turn_id for e in events if e.type == "turn_superseded"}
    by_id = {turn.id: turn for turn in turns}
    answered: dict[str, str] = {}  # each turn's last whole answer
    closing_errors: dict[str, int] = {}  # where a turn's run of errors before its end began
    lines = [f"# {_one_line(chat.title) or 'Untitled chat'}", ""]
    for event in events:
        turn_id = event.turn_id or ""
        if event.type == "error":
            closing_errors.setdefault(turn_id, len(lines))
        elif event.type != "end_of_stream":
            closing_errors.pop(turn_id, None)
        if event.type == "llm_response":
            answered[turn_id] = str(event.payload.get("text", ""))
        if event.type == "end_of_stream":
            # The text it had got to goes before the errors that stopped it.
            at = closing_errors.pop(turn_id, len(lines))
            status = str(event.payload.get("status"))
            unfinished = _unfinished(status, by_id.get(turn_id), answered.get(turn_id))
            if unfinished:
                marks = [UNFINISHED, REPLACED] if turn_id in replaced else [UNFINISHED]
                lines[at:at] = [_assistant_heading(marks), "", unfinished, ""]
            if status in ENDINGS:
                lines += [f"> **{ENDINGS[status]}**", ""]
        lines += _event_lines(event.type, event.payload, event.ts, turn_id in replaced)
        rating = (ratings or {}).get(turn_id)
        if event.type == "end_of_stream" and rating is not None:
            lines += _rating_lines(rating)
    return "\n".join(lines).rstrip() + "\n"


def _unfinished(status: str, turn: TurnRecord | None, answered: str | None) -> str:
    """The text a turn that did not complete had got to: kept with the turn, not as an
    event (unless it was a whole message, shown already)."""
    if status not in ENDINGS or turn is None or turn.final_text == answered:
        return ""
    return turn.final_text or ""


def _assistant_heading(marks: list[str]) -> str:
    shown = ", ".join(mark for mark in marks if mark)
    return f"## Assistant ({shown})" if shown else "## Assistant"


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
        heading = _assistant_heading([_answer_mark(payload), REPLACED if replaced else ""])
        return [heading, "", str(payload.get("text", "")), ""]
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


def _answer_mark(payload: Mapping[str, Any]) -> str:
    reason = payload.get("incomplete_reason")
    if reason:
        return CUT_OFF.get(str(reason), CUT_OFF_OTHER)
    return DECLINED if payload.get("refusal") is True else ""


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
