"""``to_plain_text``: what the *model* reads for a ToolResponse. Pure: no I/O.

Short readable lines per ``response_type`` (``connectors.rendering``; never a dump of
everything, never ``debug_info``), citations numbered ``[n]`` from ``content_chunks``,
capped at ``max_chars``. Text written by third parties is fenced as data
(``connectors.untrusted``); our own headings, counts and notes stay outside the fence.
The ToolResponse dicts themselves (what the UI shows) are never changed.
"""

from __future__ import annotations

from typing import Any

from connectors.generic_renderers import error_text
from connectors.rendering import PLAIN, Part, Unreadable, citations, type_info
from connectors.responses import ToolResponse
from connectors.text import NOTE_RESERVE, cut_json, cut_text, dumps, truncate, within
from connectors.untrusted import FENCE_CLOSE, defuse_markers, fence, fence_open, strip_invisible

#: Default cap on ``to_plain_text`` output (characters).
MAX_TEXT_CHARS = 8000
MIN_MAX_CHARS = 200


def to_plain_text(
    response: ToolResponse | dict[str, Any], *, max_chars: int | None = MAX_TEXT_CHARS
) -> str:
    """What the model sees for a tool result. Never includes ``debug_info``.

    Never raises on an odd payload (only on a ``max_chars`` below 200).

    Known ``response_type``s get short numbered lines (ids included so the model can act
    on them); ``content_chunks`` are always listed as ``[n]`` citations; other payloads
    become compact JSON. The result is at most ``max_chars`` long (None: no cap), cut at
    whole lines/items with a ``[truncated: …]`` note.

    Third-party text is fenced (``<external source="emails">`` … ``</external>``; a type
    registered with ``source=None`` is not), one fence per block rather than per field,
    and a cut never drops a closing marker. All text is cleaned of invisible characters,
    and nothing outside a fence can read as a marker.
    """
    if max_chars is not None and max_chars < MIN_MAX_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_MAX_CHARS}")
    data = _as_dict(response)
    response_type = str(data.get("response_type"))
    info = type_info(response_type)

    sources: list[Part] = []
    chunks = data.get("content_chunks")
    if isinstance(chunks, list) and chunks:
        title, label = info.cite(data)
        sources = _merged(
            [Part(f"{title} (cite as [n]):"), Part("\n".join(citations(chunks)), label)]
        )

    body = _merged(_render(data, response_type))

    extra = data.get("error_message")
    note = ""
    if response_type != "error" and isinstance(extra, str) and extra.strip():
        note = defuse_markers(strip_invisible(error_text({"error_message": extra})))

    if max_chars is None:
        head = "\n".join(part for part in (_fit(body, None), note) if part)
        return "\n\n".join(part for part in (head, _fit(sources, None)) if part)
    note = truncate(note, max_chars // 4)
    room = max_chars - (len(note) + 1 if note else 0)
    cited = ""
    if sources:
        wanted, needed = len(_fit(body, None)), len(_fit(sources, None))
        cited = _fit(
            sources,
            needed
            if wanted + needed + 2 <= room
            else min(needed, max(room // 2, room - wanted - 2)),
        )
    text = _fit(body, room - (len(cited) + 2 if cited else 0))
    head = "\n".join(part for part in (text, note) if part)
    return "\n\n".join(part for part in (head, cited) if part)


def _as_dict(response: ToolResponse | dict[str, Any]) -> dict[str, Any]:
    if isinstance(response, ToolResponse):
        return response.to_dict()
    if ToolResponse.is_tool_response(response):
        return response
    if isinstance(response, dict):  # not ToolResponse-shaped: its data, without debug_info
        return {
            "response_type": "json",
            "response": {key: value for key, value in response.items() if key != "debug_info"},
        }
    raise TypeError(f"expected a ToolResponse or its dict, got {type(response).__name__}")


def _render(data: dict[str, Any], response_type: str) -> list[Part]:
    """The typed rendering of ``data``, or compact JSON (fenced unless it is our own)."""
    info = type_info(response_type)
    if info.render is not None:
        try:
            rendered = info.render(data)
        except Exception:  # any odd payload: show it as compact JSON, never fail the turn
            pass
        else:
            return [Part(rendered)] if isinstance(rendered, str) else rendered
    payload = data.get("response")
    if isinstance(payload, str):
        return [Part(payload, info.source)]
    return [Part(dumps(payload), info.source, payload)]


# --------------------------------------------------------------------------- fitting


def _clean(value: object, depth: int = 0, active: frozenset[int] = frozenset()) -> object:
    """A JSON value with invisible characters taken out of every string, keys included.

    Raises ``Unreadable`` on a cycle or absurd nesting, which JSON cannot show anyway.
    """
    if isinstance(value, str):
        return strip_invisible(value)
    if not isinstance(value, list | tuple | dict):
        return value
    if id(value) in active or depth > 200:
        raise Unreadable
    inner = active | {id(value)}
    if isinstance(value, dict):
        return {
            strip_invisible(key) if isinstance(key, str) else key: _clean(item, depth + 1, inner)
            for key, item in value.items()
        }
    return [_clean(item, depth + 1, inner) for item in value]


def _merged(parts: list[Part]) -> list[Part]:
    """Empty parts dropped, neighbouring own plain-text parts joined into one, and every
    text cleaned of invisible characters (before it is measured against a budget)."""
    merged: list[Part] = []
    for part in parts:
        if not part.text:
            continue
        plain = part.value is PLAIN
        if plain:
            part = Part(strip_invisible(part.text), part.source)
        else:
            try:
                value = _clean(part.value)
            except Unreadable:  # shown as its repr, cleaned as text
                part = Part(strip_invisible(part.text), part.source)
            else:
                part = Part(dumps(value), part.source, value)
        last = merged[-1] if merged else None
        if last and plain and last.value is PLAIN and last.source is None and part.source is None:
            merged[-1] = Part(f"{last.text}\n{part.text}")
        else:
            merged.append(part)
    return merged


def _cut(part: Part, budget: int) -> tuple[str, str]:
    if part.value is PLAIN:
        return within(*cut_text(part.text, budget), budget)
    return within(*cut_json(part.value, budget), budget)


def _show(part: Part, budget: int | None) -> str:
    """One part in at most ``budget`` characters. Third-party text is fenced, and a cut
    keeps the fence whole: the note saying what was left out follows the closing marker."""
    if part.source is None:
        if budget is None or len(part.text) <= budget:
            return defuse_markers(part.text)
        head, note = _cut(part, budget)
        return defuse_markers(f"{head}\n{note}" if note else head)
    whole = fence(part.text, part.source)
    if budget is None or len(whole) <= budget:
        return whole
    room = budget - len(fence_open(part.source)) - len(FENCE_CLOSE) - 2
    if room <= NOTE_RESERVE // 4:  # no room for any of it: only say so
        return truncate(f"[truncated: {len(part.text)} characters not shown]", budget)
    head, note = _cut(part, room)
    return fence(head, part.source) + (f"\n{note}" if note else "")


def _fit(parts: list[Part], budget: int | None) -> str:
    """The parts one per line, in at most ``budget`` characters (later parts cut first)."""
    shown: list[str] = []
    left = budget
    for part in parts:
        if left is not None:
            left -= 1 if shown else 0  # the line break before this part
            if left <= 0:
                break
        text = _show(part, left)
        if text:
            shown.append(text)
            left = None if left is None else left - len(text)
    return "\n".join(shown)
