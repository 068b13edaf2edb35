"""Another Open Responses server as the model (``responses:MODEL@BASE_URL``): what of its
stream Switchboard shows, retries and keeps.

- **Vendor extensions.** The spec lets a server add items and events of its own, their
  ``type`` prefixed with its name (``acme:telemetry_chunk``). Switchboard cannot know
  what they mean, so it drops them where they come in: their events from the stream and
  their items from the response's output (a debug line each, nothing else). They are
  never shown, never kept in the chat's history and so never sent to any model again,
  the server that made them included. Sending them back only to their own server was
  considered and rejected: a turn that pauses for approval stores its run, which the
  Agents SDK cannot restore with an item it does not know, and "the same server" is not
  a stable identity (a base URL moves, a model changes behind it). A model's input is
  filtered as well (``drop_vendor_items``), for histories stored before this and for any
  other way such an item could get there.
- **A failure before the first token.** A ``response.failed`` or ``error`` event that
  comes before any content (after ``response.created``, ``response.in_progress`` and the
  announcements of an item or part, which are held back until content comes) is not
  passed on, so the SDK's retry sees a call that produced nothing and may retry it
  (``app.llm.providers.transient_retry_policy`` decides which codes are worth it).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from agents import OpenAIResponsesModel
from agents.items import ModelResponse, TResponseInputItem
from agents.run_config import CallModelData, ModelInputData

logger = logging.getLogger("switchboard.llm")

_BEFORE_FIRST_TOKEN = frozenset({"response.created", "response.in_progress"})
# Announcements of an item or part that has no content yet: held back until the first
# token, so a failure right after them still leaves a call that produced nothing.
_ANNOUNCEMENTS = frozenset({"response.output_item.added", "response.content_part.added"})
_FAILURES = frozenset({"response.failed", "error", "response.error"})


def is_vendor_type(kind: object) -> bool:
    """A vendor extension's type: ``name:thing`` (the spec's own types have no colon)."""
    return isinstance(kind, str) and ":" in kind


def _type_of(obj: Any) -> Any:
    return obj.get("type") if isinstance(obj, Mapping) else getattr(obj, "type", None)


def _drop_vendor_output(output: list[Any]) -> None:
    """Remove vendor items from a response's ``output``, in place (the SDK reads it)."""
    kept = [item for item in output if not is_vendor_type(_type_of(item))]
    if len(kept) != len(output):
        logger.debug(
            "ignored vendor items of the model server", extra={"ignored": len(output) - len(kept)}
        )
        output[:] = kept


class UpstreamResponsesModel(OpenAIResponsesModel):
    """The SDK's Responses model, for a server that may speak extensions."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        response = await super().get_response(*args, **kwargs)
        _drop_vendor_output(response.output)
        return response

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        started = False
        held: list[Any] = []
        async for event in super().stream_response(*args, **kwargs):
            kind = getattr(event, "type", None)
            if is_vendor_type(kind) or is_vendor_type(_type_of(getattr(event, "item", None))):
                # A vendor event, or the announcement of a vendor item.
                logger.debug("ignored a vendor event of the model server", extra={"event": kind})
                continue
            if not started:
                if kind in _FAILURES:
                    # Not passed on: the SDK raises right after it, and an event passed
                    # on would count as output and forbid a retry.
                    continue
                if kind in _ANNOUNCEMENTS:
                    held.append(event)
                    continue
                if kind not in _BEFORE_FIRST_TOKEN:
                    started = True
                    for announced in held:
                        yield announced
                    held.clear()
            response = getattr(event, "response", None)
            if kind in ("response.completed", "response.incomplete") and response is not None:
                _drop_vendor_output(response.output)
            yield event


def drop_vendor_items(data: CallModelData[Any]) -> ModelInputData:
    """``RunConfig.call_model_input_filter``: no model is ever sent a vendor item."""
    items: list[TResponseInputItem] = data.model_data.input
    kept = [item for item in items if not is_vendor_type(_type_of(item))]
    if len(kept) != len(items):
        logger.debug(
            "vendor items not sent to the model", extra={"dropped": len(items) - len(kept)}
        )
    return ModelInputData(input=kept, instructions=data.model_data.instructions)
