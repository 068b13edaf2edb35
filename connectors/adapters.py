"""Tool outputs for their readers: the model, the OpenAI input items, the clients. Pure.

The entry points the socket and the Open Responses layers use, whatever a tool returned:

- ``to_plain_text``: what the *model* reads (``connectors.plain_text``; renderers per
  ``response_type`` in ``connectors.rendering``), for a ToolResponse, its dict, or any
  other output (coerced first).
- ``to_function_call_output``: the OpenAI Responses ``function_call_output`` input item.
- ``pick_display_segment``: which ``display_as`` hint a client renders (docs/rap.md).
- ``coerce_tool_output``: any tool output as a valid ToolResponse dict
  (``connectors.coerce``), so a stream translator never fails a turn on an odd output.
- ``source_of``: what the untrusted-text fence calls a response type's text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from connectors import plain_text
from connectors.coerce import SDK_TOOL_ERROR_PREFIX, coerce_tool_output, coerce_tool_response
from connectors.generic_renderers import ACCOUNT_NEEDED_TYPES
from connectors.plain_text import MAX_TEXT_CHARS
from connectors.rendering import own_types, source_of
from connectors.responses import ToolResponse

__all__ = [
    "ACCOUNT_NEEDED_TYPES",
    "MAX_TEXT_CHARS",
    "SDK_TOOL_ERROR_PREFIX",
    "coerce_tool_output",
    "coerce_tool_response",
    "pick_display_segment",
    "source_of",
    "to_function_call_output",
    "to_plain_text",
]


def __getattr__(name: str) -> Any:
    # OWN_TYPES (the types whose text is never fenced) is read from the renderer registry when asked for, not at import: reading
    # it imports the built-in connectors' renderers (connectors.rendering).
    if name == "OWN_TYPES":
        return own_types()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_plain_text(response: object, *, max_chars: int | None = MAX_TEXT_CHARS) -> str:
    """What the model sees for a tool result (``connectors.plain_text.to_plain_text``);
    an output that is neither a ToolResponse nor a dict is coerced first."""
    if not isinstance(response, ToolResponse | dict):
        response = coerce_tool_output(response, "Tool")
    return plain_text.to_plain_text(response, max_chars=max_chars)


def to_function_call_output(
    call_id: str, response: ToolResponse | dict[str, Any]
) -> dict[str, Any]:
    """The OpenAI Responses input item for a tool result (``FunctionCallOutput``)."""
    if not isinstance(call_id, str):
        raise TypeError(f"call_id must be a string, got {type(call_id).__name__}")
    if not call_id:
        raise ValueError("call_id must not be empty")
    return {"type": "function_call_output", "call_id": call_id, "output": to_plain_text(response)}


def pick_display_segment(
    segments: list[dict[str, Any]] | None, supported: Iterable[str]
) -> dict[str, Any] | None:
    """The first segment whose type is supported, else the first ``text`` one, else None.

    Segments that are not dicts or have no string ``type`` are skipped (docs/rap.md).
    """
    if not segments or not isinstance(segments, list | tuple):
        return None
    wanted = {kind for kind in supported if isinstance(kind, str)}
    valid = [seg for seg in segments if isinstance(seg, dict) and isinstance(seg.get("type"), str)]
    for segment in valid:
        if segment["type"] in wanted:
            return segment
    return next((segment for segment in valid if segment["type"] == "text"), None)
