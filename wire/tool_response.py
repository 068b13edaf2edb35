"""The ToolResponse schema: what every connector tool returns and a ``tool_output`` carries
(docs/protocol.md §3, docs/connectors.md). The one definition; ``connectors.responses``
builds its response classes on it.

Lax, unlike the event models: a connector's response was checked strictly when it was
built, and JSON arrives here from Python (tuples are lists) or from storage.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator
from pydantic_core.core_schema import SerializerFunctionWrapHandler

# Hints whose content a client shows as text, so it must be a string.
TEXT_HINT_TYPES = frozenset({"text", "markdown"})
# Keys present in the wire form only when set; ``debug_info`` is also persisted-only.
OPTIONAL_KEYS = ("display_as", "content_chunks", "error_message", "debug_info")


class DisplayHint(BaseModel):
    """A render hint: ``text``, ``markdown``, ``json``, ``diff``, ``link``, ``card`` are
    the known types; a client renders the first it supports and falls back to ``text``,
    so a connector may add its own."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str = Field(min_length=1)
    content: Any

    @model_validator(mode="after")
    def _text_is_a_string(self) -> DisplayHint:
        if self.type in TEXT_HINT_TYPES and not isinstance(self.content, str):
            raise ValueError(f"content must be a string for a {self.type!r} hint")
        return self


class Citation(BaseModel):
    """One of ``content_chunks``: a source the response drew on."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str | int
    title: str
    url: str | None
    snippet: str


class ToolResponseData(BaseModel):
    """A ToolResponse as it is stored and sent. Optional keys that are unset are left out
    of the wire form, exactly as a connector's ``to_dict()`` leaves them out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    response_type: str = Field(min_length=1)
    agent_name: str = Field(min_length=1)
    friendly_name: str = Field(min_length=1)
    response: dict[str, Any] | list[Any] | str
    display_response: bool
    display_as: list[DisplayHint] | None = None
    content_chunks: list[Citation] | None = None
    error_message: str | None = None
    # Persisted for the chat's owner; stripped before sending (storage.records).
    debug_info: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in OPTIONAL_KEYS:
            if data.get(key, 0) is None:
                del data[key]
        return data
