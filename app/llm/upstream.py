"""Another Open Responses server as the model (``responses:MODEL@BASE_URL``): what of its
stream Switchboard shows, retries and sends back.

- **Vendor extensions.** The spec lets a server add items and events of its own, their
  ``type`` prefixed with its name (``acme:telemetry_chunk``). Switchboard does not know
  what they mean, so their events are dropped from the stream (a debug line, nothing
  else) and their items are never shown. Items can carry the server's own state, so
  they are kept in the chat's history, marked with the base URL of the server that made
  them (``ORIGIN_KEY``), and sent back only to that server, without the mark; every
  other model (another server, another protocol, the offline model) never sees them.
- **A failure before the first token.** A ``response.failed`` or ``error`` event that
  comes before any content (after ``response.created``, ``response.in_progress`` and the
  announcements of an item or part, which are held back until content comes) is not
  passed on, so the SDK's retry sees a call that produced nothing and may retry it
  (``app.llm.providers.transient_retry_policy`` decides which codes are worth it).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, cast

from agents import OpenAIResponsesModel
from agents.items import ModelResponse, TResponseInputItem
from agents.models.interface import Model
from agents.run_config import CallModelData, ModelInputData
from openai import AsyncOpenAI

logger = logging.getLogger("switchboard.llm")

# The mark on a stored vendor item: the base URL of the server that made it.
ORIGIN_KEY = "x_switchboard_origin"
_BEFORE_FIRST_TOKEN = frozenset({"response.created", "response.in_progress"})
# Announcements of an item or part that has no content yet: held back until the first
# token, so a failure right after them still leaves a call that produced nothing.
_ANNOUNCEMENTS = frozenset({"response.output_item.added", "response.content_part.added"})
_FAILURES = frozenset({"response.failed", "error", "response.error"})


def is_vendor_type(kind: object) -> bool:
    """A vendor extension's type: ``name:thing`` (the spec's own types have no colon)."""
    return isinstance(kind, str) and ":" in kind


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


class UpstreamResponsesModel(OpenAIResponsesModel):
    """The SDK's Responses model, for a server at ``origin`` that may speak extensions."""

    def __init__(self, model: str, openai_client: AsyncOpenAI, origin: str) -> None:
        super().__init__(model=model, openai_client=openai_client)
        self.origin = origin

    def _mark(self, output: list[Any]) -> None:
        for item in output:
            if is_vendor_type(_field(item, "type")):
                if isinstance(item, dict):
                    item[ORIGIN_KEY] = self.origin
                else:  # the client's models keep unknown fields, and dump them back
                    setattr(item, ORIGIN_KEY, self.origin)

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        response = await super().get_response(*args, **kwargs)
        self._mark(response.output)
        return response

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        started = False
        held: list[Any] = []
        async for event in super().stream_response(*args, **kwargs):
            kind = getattr(event, "type", None)
            if is_vendor_type(kind):
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
                self._mark(list(response.output or []))
            yield event


ModelOf = Callable[[Any], Model]


def origin_of(model: Model) -> str | None:
    """The server whose vendor items ``model`` may be sent (None: no server's)."""
    origin = getattr(model, "origin", None)
    return origin if isinstance(origin, str) else None


def keep_for(items: list[TResponseInputItem], origin: str | None) -> list[TResponseInputItem]:
    """``items`` as a model at ``origin`` may read them: vendor items of that server
    without their mark, no vendor item of any other."""
    kept: list[TResponseInputItem] = []
    dropped = 0
    for item in items:
        if not is_vendor_type(_field(item, "type")):
            kept.append(item)
        elif isinstance(item, Mapping) and origin is not None and item.get(ORIGIN_KEY) == origin:
            unmarked = {k: v for k, v in item.items() if k != ORIGIN_KEY}
            kept.append(cast("TResponseInputItem", unmarked))
        else:
            dropped += 1
    if dropped:
        logger.debug("vendor items not sent to another model", extra={"dropped": dropped})
    return kept


class VendorItemFilter:
    """``RunConfig.call_model_input_filter``: each model call gets the vendor items of its
    own server only. ``model_of`` resolves an agent's ``model`` (a name or None) the way
    the run's model provider does."""

    def __init__(self, model_of: ModelOf) -> None:
        self._model_of = model_of

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        chosen = data.agent.model
        model = chosen if isinstance(chosen, Model) else self._model_of(chosen)
        return ModelInputData(
            input=keep_for(data.model_data.input, origin_of(model)),
            instructions=data.model_data.instructions,
        )
