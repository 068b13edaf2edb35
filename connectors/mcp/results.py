"""An MCP tool result (``CallToolResult``) → the ToolResult the model and the UI get. Pure.

- ``content`` text → one ``markdown`` display segment (MCP tools write Markdown);
- ``structuredContent`` → the ``response`` payload and a ``json`` segment, shown first
  unless a text says more than that JSON does;
- images → a ``card`` segment with the image as a ``data:`` URL (the UI shows
  ``data:image/…`` only), resource links to web pages → ``link`` segments, embedded text
  resources → ``markdown``; anything else (audio, binary resources) → a line saying what was left out;
- ``isError`` → an error card.

An MCP server is a third party: the model reads its text fenced as data
(``connectors.untrusted.fence``), and an image only as a note that one is shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from connectors.rendering import register_type
from connectors.responses import ErrorResponse, ToolResponse, is_web_url
from connectors.result_size import DEFAULT_MAX_CHARS, cut_fields, cut_note, size_within
from connectors.text import truncate
from connectors.tool_result import ToolResult
from connectors.untrusted import fence

RESPONSE_TYPE = "mcp_result"
SOURCE = "mcp tool"  # what the fence calls the text
ERROR_INTRO = "Error: the MCP tool reported this failure:"
# What the model reads of one result, at most; the card keeps up to the size cap.
MAX_MODEL_CHARS = 20_000
# An image larger than this (base64) is not put in the card: events are stored and sent.
MAX_IMAGE_CHARS = 1_500_000
_SHOWN_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass
class _Parts:
    """A result's content, sorted into what the card shows and what the model reads."""

    texts: list[str] = field(default_factory=list)  # the tool's own text (Markdown)
    links: list[str] = field(default_factory=list)  # resource links, as lines for the model
    segments: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # ours: what the model cannot see
    text_at: int | None = None  # where the markdown segment goes: where the first text was

    def add_text(self, text: str) -> None:
        if self.text_at is None:
            self.text_at = len(self.segments)
        self.texts.append(text)

    def third_party_text(self) -> str:
        return "\n\n".join([*self.texts, *self.links])


def _sort(result: CallToolResult) -> _Parts:
    parts = _Parts()
    for block in result.content:
        if isinstance(block, TextContent):
            parts.add_text(block.text)
        elif isinstance(block, ImageContent):
            _image(parts, block)
        elif isinstance(block, ResourceLink):
            title = block.title or block.name
            # Only a web page is a link to click (a file: or notes:// resource is not, and a
            # javascript: one would run in the page); the model reads them all.
            if is_web_url(block.uri):
                link: dict[str, Any] = {"url": block.uri, "title": title}
                if block.description:
                    link["description"] = block.description
                parts.segments.append({"type": "link", "content": link})
            parts.links.append(f"Resource: {title} <{block.uri}>")
        elif isinstance(block, EmbeddedResource) and isinstance(
            block.resource, TextResourceContents
        ):
            parts.add_text(block.resource.text)
        elif isinstance(block, EmbeddedResource) and isinstance(
            block.resource, BlobResourceContents
        ):
            kind = block.resource.mime_type or "binary"
            parts.notes.append(f"The tool also returned a resource ({kind}), not shown here.")
        elif isinstance(block, AudioContent):
            parts.notes.append(f"The tool also returned audio ({block.mime_type}), not shown here.")
    if parts.text_at is not None:
        markdown = {"type": "markdown", "content": "\n\n".join(parts.texts)}
        parts.segments.insert(parts.text_at, markdown)
    return parts


def _image(parts: _Parts, block: ImageContent) -> None:
    kind = block.mime_type
    if kind not in _SHOWN_IMAGES or len(block.data) > MAX_IMAGE_CHARS:
        why = "too large to show" if kind in _SHOWN_IMAGES else "in a format the chat cannot show"
        parts.notes.append(f"The tool also returned an image ({kind}), {why}.")
        return
    url = f"data:{kind};base64,{block.data}"
    parts.segments.append({"type": "card", "content": {"title": "Image", "image_url": url}})
    parts.notes.append(f"The tool also returned an image ({kind}), shown to the user.")


def _structured(value: Any, text: str) -> dict[str, Any] | list[Any] | None:
    """The structured content as a JSON payload; None when there is none, or when it only
    wraps the text (``{"result": <the text>}``, what Python MCP servers send for a tool
    that returns a string)."""
    if value is None or (isinstance(value, dict) and list(value.values()) == [text]):
        return None
    return value if isinstance(value, dict | list) else {"result": value}


def _only_json_of(texts: list[str], structured: object) -> bool:
    """True when the text is just the structured content serialised (what the MCP spec
    asks servers to add for older clients): the JSON then says everything."""
    try:
        return [json.loads(text) for text in texts] == [structured]
    except ValueError:
        return False


def model_text(body: str, notes: list[str]) -> str:
    """What the model reads: the tool's text fenced as data, then our notes."""
    fenced = fence(truncate(body, MAX_MODEL_CHARS), SOURCE) if body else ""
    return "\n".join(part for part in (fenced, *notes) if part) or "The tool returned nothing."


def _text_of(block: object) -> str | None:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
        return block.resource.text
    return None


def _with_text(block: TextContent | EmbeddedResource, text: str) -> Any:
    if isinstance(block, TextContent):
        return block.model_copy(update={"text": text})
    return block.model_copy(update={"resource": block.resource.model_copy(update={"text": text})})


def _shares(text_chars: int, structured: object, max_chars: int) -> tuple[int, int] | None:
    """How many characters the texts and the structured content may keep, or None when
    both fit together. One that fits half keeps all of it, the other gets the rest."""
    half = max_chars // 2
    size = size_within(structured, max_chars) if structured is not None else 0
    if size is not None and text_chars + size <= max_chars:
        return None
    if size is not None and size <= half:
        return max_chars - size, size
    if text_chars <= half:
        return text_chars, max_chars - text_chars
    return half, half


def capped(result: CallToolResult, max_chars: int) -> tuple[CallToolResult, str | None]:
    """``result`` with its texts and structured content cut to ``max_chars`` together (by
    length checks and a walk that stops at the cap), and the note for the model; the
    note is None when nothing was over. Images are bounded on their own
    (``MAX_IMAGE_CHARS``)."""
    total = sum(len(_text_of(block) or "") for block in result.content)
    structured = result.structured_content
    shares = _shares(total, structured, max_chars)
    if shares is None:
        return result, None
    left, structured_share = shares
    content = []
    for block in result.content:
        text = _text_of(block)
        if text is not None and len(text) > left:
            text = text[: max(left, 0)]
            block = _with_text(cast(TextContent | EmbeddedResource, block), text)
        left -= len(text or "")
        content.append(block)
    update: dict[str, Any] = {"content": content}
    shrunk = cut_fields({"response": structured}, structured_share) if structured else None
    if shrunk is not None:
        update["structured_content"] = shrunk.fields["response"]
    known = total if structured is None else None
    kept = sum(len(_text_of(block) or "") for block in content)
    return result.model_copy(update=update), cut_note(known, kept, max_chars)


def result_from_call(
    result: CallToolResult,
    *,
    agent_name: str,
    friendly_name: str,
    debug_info: dict[str, Any],
    max_chars: int = DEFAULT_MAX_CHARS,
) -> ToolResult:
    """The result of ``result``; its texts and structured content over ``max_chars``
    (``SWITCHBOARD_TOOL_RESULT_MAX_CHARS``) are cut first, before anything else reads
    them: the card is marked ``truncated`` and the model reads that it was cut."""
    result, cut = capped(result, max_chars)
    answer = _result(
        result, agent_name=agent_name, friendly_name=friendly_name, debug_info=debug_info
    )
    if cut is None:
        return answer
    answer.tool_response.truncated = True
    return ToolResult(answer.tool_response, answer.model_text, cut)


def _result(
    result: CallToolResult,
    *,
    agent_name: str,
    friendly_name: str,
    debug_info: dict[str, Any],
) -> ToolResult:
    parts = _sort(result)
    text = parts.third_party_text()
    if result.is_error:
        message = text.strip() or "the tool failed without saying why"
        error = ErrorResponse(
            agent_name,
            message if message.startswith("Error") else f"Error: {message}",
            friendly_name=friendly_name,
            debug_info=dict(debug_info),
        )
        return ToolResult(error, f"{ERROR_INTRO}\n{model_text(message, parts.notes)}")
    structured = _structured(result.structured_content, text)
    segments = parts.segments
    body = text
    if structured is not None:
        data = {"type": "json", "content": structured}
        only_json = not parts.texts or _only_json_of(parts.texts, structured)
        segments = [data, *segments] if only_json else [*segments, data]
        if not text:
            body = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    payload: dict[str, Any] | list[Any] | str = (
        structured if structured is not None else text or "\n".join(parts.notes)
    )
    response = ToolResponse(
        RESPONSE_TYPE,
        agent_name,
        friendly_name,
        payload,
        display_as=segments or None,
        debug_info=dict(debug_info),
    )
    return ToolResult(response, model_text(body, parts.notes))


# An MCP tool's text is third-party text (connectors.rendering).
register_type(RESPONSE_TYPE, source=SOURCE)
