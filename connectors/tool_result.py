"""``ToolResult``: what a connector tool returns to the Agents SDK — the ToolResponse dict
for the UI and storage, whose ``str()`` is the plain text the model reads.

This is the one place that relies on how the SDK turns a function tool's return value
into the model's ``function_call_output`` (``agents.items.ItemHelpers
.tool_call_output_item``, agents 0.24): it keeps the value itself as
``ToolCallOutputItem.output`` (where the socket, the Open Responses stream and the
approval pause read the dict), and gives the model a ``str`` as is, one of its structured
output types (``ToolOutputText``…, a dict with a ``"type"`` key that validates as one, or
a list of them) as content parts, and anything else as ``str(value)``. A ToolResponse dict
has no ``"type"`` key, so the model reads ``str(ToolResult)``.

The SDK has no supported way to give the model other text for a value it keeps:
``FunctionTool.custom_data_extractor`` attaches data *beside* the output, so the model
would read the value returned while the dict moved to ``item.custom_data``, away from
every consumer of ``item.output``. So the ``str()`` fallback is relied on, here only;
``tests/connectors/test_tool_result_sdk.py`` runs tools through the real SDK against a
model server and fails if the model stops reading this text.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from connectors.plain_text import to_plain_text
from connectors.responses import ToolResponse
from connectors.result_size import cut_fields, cut_text
from connectors.untrusted import fence

logger = logging.getLogger("switchboard.connectors.tools")


class ToolResult(dict[str, Any]):
    """A validated ToolResponse as its stored dict (``to_dict(include_debug=True)``: the
    socket layer strips ``debug_info``), read by the model as ``model_text`` or, by
    default, as its ``to_plain_text``; then ``note`` (ours, e.g. that the result was cut
    to the size cap), on a line of its own."""

    def __init__(
        self, response: ToolResponse, model_text: str | None = None, note: str | None = None
    ) -> None:
        super().__init__(response.to_dict(include_debug=True))
        # Kept so that code receiving this result need not validate the dict again.
        self.tool_response = response
        self.model_text = model_text
        self.note = note

    def __str__(self) -> str:
        text = self.model_text if self.model_text is not None else render_for_model(self)
        return f"{text}\n{self.note}" if self.note else text


def cap_result(value: object, max_chars: int) -> object:
    """What a tool returned, cut to ``max_chars`` when over it (``connectors.result_size``)
    before anything else reads it: a ToolResult, ToolResponse or ToolResponse dict over the
    cap becomes a ToolResult of its first part, marked ``truncated``, whose text for the
    model ends with a note saying so. Anything else, and a result within the cap, is
    returned as it is. Raises pydantic's ``ValidationError`` for a dict that is no
    ToolResponse.
    """
    if isinstance(value, ToolResult):
        fields, model_text = dict(value), value.model_text
    elif isinstance(value, ToolResponse):
        fields, model_text = value.to_dict(include_debug=True), None
    elif isinstance(value, dict):
        fields, model_text = value, None
    else:
        return value
    cut = cut_fields(fields, max_chars)
    if cut is None:
        return value
    text = cut_text(model_text, max_chars) if model_text is not None else None
    return ToolResult(ToolResponse.from_dict(cut.fields), text, cut.note)


def render_for_model(response: dict[str, Any]) -> str:
    """``to_plain_text`` of a ToolResponse dict; compact JSON if the adapter fails.

    Called by the SDK while it builds the model input, so it must never raise.
    """
    try:
        return to_plain_text(dict(response))
    except Exception:
        logger.exception("to_plain_text failed for %s; sending JSON", response.get("response_type"))
        visible = {key: value for key, value in response.items() if key != "debug_info"}
        # Whatever it holds, it is read as data (connectors.untrusted), never as orders.
        return fence(
            json.dumps(visible, separators=(",", ":"), ensure_ascii=False, default=str),
            "tool result",
        )
