"""A RAP callback message → the ToolResult the model and the UI get. Pure: no I/O.

docs/rap.md: the model receives the tool's *full* ``text`` (never a summary; cut only
when over the size cap on every tool's result, ``connectors.result_size``), while ``display_as`` only drives the card (the UI renders the first segment
type it supports, then falls back to the text). A ``text`` starting with ``Error`` is the
protocol's only error convention: it becomes an error card, the model reads it whole.

A remote tool is a third party, so the model reads its text fenced as data
(``connectors.untrusted.fence``): instructions in it are never followed. The card keeps the
text exactly as sent (within the size cap).
"""

from __future__ import annotations

import re
from typing import Any

from connectors.rap.config import OAuthMessage, ToolResultMessage
from connectors.rendering import register_type
from connectors.responses import ErrorResponse, OpenWindowResponse, ToolResponse
from connectors.result_size import DEFAULT_MAX_CHARS, cut_fields
from connectors.tooling import TIMEOUT_CODE, ToolResult, error_result
from connectors.untrusted import fence

RESPONSE_TYPE = "rap_result"
_ERROR_TEXT = re.compile(r"\s*Error\b")
SOURCE = "remote tool"  # what the fence calls the text
ERROR_INTRO = "Error: the remote tool reported this failure:"
OAUTH_TEXT = (
    "The tool needs the user's authorization before it can do this. A link to "
    "authorize it is shown to the user in the chat: ask them to open it and "
    "finish there, then try again."
)


class RapToolResult(ToolResult):
    """A ToolResult whose ``str()`` (what the SDK sends the model) is set verbatim, then
    ``note`` (that the result was cut to the size cap)."""

    def __init__(self, response: ToolResponse, model_text: str, note: str | None = None) -> None:
        super().__init__(response, model_text, note)


def is_error_text(text: str) -> bool:
    return bool(_ERROR_TEXT.match(text))


def model_text(text: str) -> str:
    """What the model reads for a remote tool's ``text``: all of it, fenced; a failure
    still starts with "Error:", which is how every agent recognises one."""
    fenced = fence(text, SOURCE)
    return f"{ERROR_INTRO}\n{fenced}" if is_error_text(text) else fenced


def result_from_message(
    message: ToolResultMessage | OAuthMessage,
    *,
    agent_name: str,
    friendly_name: str,
    debug_info: dict[str, Any],
    max_chars: int = DEFAULT_MAX_CHARS,
) -> RapToolResult:
    """The result of ``message``; a text and display_as longer than ``max_chars``
    (``SWITCHBOARD_TOOL_RESULT_MAX_CHARS``) are cut first, before they are fenced for the
    model (which takes time in proportion to their length): the card is marked
    ``truncated`` and the model reads that the result was cut."""
    if isinstance(message, OAuthMessage):
        card = OpenWindowResponse(
            agent_name, message.auth_url, friendly_name=f"Authorize {agent_name}"
        )
        card.debug_info = dict(debug_info)
        return RapToolResult(card, OAUTH_TEXT)
    text, display_as = message.text, message.display_as or None
    cut = cut_fields({"response": text, "display_as": display_as}, max_chars)
    if cut is not None:
        text, display_as = cut.fields["response"], cut.fields["display_as"]
    if is_error_text(text):
        response: ToolResponse = ErrorResponse(
            agent_name, text.strip(), friendly_name=friendly_name, debug_info=dict(debug_info)
        )
    else:
        response = ToolResponse(
            RESPONSE_TYPE,
            agent_name,
            friendly_name,
            text,
            display_as=display_as,
            debug_info=dict(debug_info),
        )
    if cut is None:
        return RapToolResult(response, model_text(text))
    response.truncated = True
    return RapToolResult(response, model_text(text), cut.note)


def timeout_result(
    *, agent_name: str, operation: str, seconds: float, debug_info: dict[str, Any]
) -> ToolResult:
    """No result in time: an error the model can act on, reported as ``tool_timeout``."""
    return error_result(
        agent_name,
        f"{operation} did not send its result within {seconds:g} seconds, so it was given "
        "up; it may still finish on its side. Tell the user, or try again later.",
        {**debug_info, "error_code": TIMEOUT_CODE, "timeout_seconds": seconds},
    )


# A remote tool's text is third-party text (connectors.rendering).
register_type(RESPONSE_TYPE, source=SOURCE)
