"""What the offline demo model reads: the conversation since the latest prompt, and what
the calling agent was offered (tools and hand-offs). Also the decision types it answers with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.attachments.describe import ATTACHMENT_LINE_START, described_in
from connectors.offline_hints import PastCall

# ----------------------------------------------------------------------------- the input


@dataclass(frozen=True)
class Transcript:
    prompt: str  # the latest user message
    calls: tuple[PastCall, ...]  # function calls made since that message, in order
    size: int  # number of input items (makes ids unique within a run)
    # The messages before the latest user message, oldest first: (role, text).
    earlier: tuple[tuple[str, str], ...] = ()
    attached: bool = False  # the latest user message holds an image or a file
    # What the latest user message's attachments are, as the model is told
    # (app.attachments.describe: "photo.png (PNG image, 1,234 bytes, 640×480)").
    attachments: tuple[str, ...] = ()


def _as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else {}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(_as_dict(part).get("text", "")) for part in content).strip()
    return ""


def _output_text(output: Any) -> str:
    return output if isinstance(output, str) else _text_of(output)


def _is_attachment_text(part: Any) -> bool:
    text = _as_dict(part).get("text")
    return isinstance(text, str) and text.startswith(ATTACHMENT_LINE_START)


def _prompt_of(content: Any) -> tuple[str, tuple[str, ...]]:
    """A user message's own words, and the summaries of its attachments."""
    if not isinstance(content, list):
        return _text_of(content), ()
    own = [part for part in content if not _is_attachment_text(part)]
    told = described_in(
        str(_as_dict(part).get("text")) for part in content if _is_attachment_text(part)
    )
    return _text_of(own), tuple(told)


def _attached(content: Any) -> bool:
    parts = content if isinstance(content, list) else []
    return any(_as_dict(part).get("type") in ("input_image", "input_file") for part in parts)


def read_transcript(model_input: str | Sequence[Any]) -> Transcript:
    if isinstance(model_input, str):
        return Transcript(model_input, (), 1)
    items = [_as_dict(item) for item in model_input]
    start = 0
    prompt = ""
    attached = False
    attachments: tuple[str, ...] = ()
    for index, item in enumerate(items):
        if item.get("role") == "user" and item.get("type", "message") == "message":
            start = index + 1
            prompt, attachments = _prompt_of(item.get("content"))
            attached = _attached(item.get("content")) or bool(attachments)
    earlier = tuple(
        (str(item.get("role")), _text_of(item.get("content")))
        for item in items[: max(0, start - 1)]
        if item.get("type", "message") == "message" and item.get("role") in ("user", "assistant")
    )
    outputs = {
        item.get("call_id"): _output_text(item.get("output"))
        for item in items[start:]
        if item.get("type") == "function_call_output"
    }
    calls = []
    for item in items[start:]:
        if item.get("type") != "function_call":
            continue
        try:
            arguments = json.loads(item.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = {}
        calls.append(
            PastCall(
                str(item.get("call_id")),
                str(item.get("name")),
                arguments if isinstance(arguments, dict) else {},
                outputs.get(item.get("call_id")),
            )
        )
    return Transcript(prompt.strip(), tuple(calls), len(items), earlier, attached, attachments)


# ----------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class CallTool:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Say:
    text: str


Decision = CallTool | Say


@dataclass(frozen=True)
class OfferedTool:
    name: str
    description: str
    schema: dict[str, Any]
    needs_approval: bool = False  # what the SDK will pause for (a write, by its declaration)
    caller: bool = False  # one of the API caller's own tools (connectors.caller_tools)


@dataclass(frozen=True)
class OfferedHandoff:
    agent: str
    tool: str  # transfer_to_<agent>
    description: str  # the agent's handoff_description, as the SDK describes the tool


# The SDK's own words in front of every hand-off tool's description: the same for all.
_HANDOFF_PREAMBLE = re.compile(r"^Handoff to the .+? agent to handle the request\.\s*")


def handoff_description(tool_description: str) -> str:
    return _HANDOFF_PREAMBLE.sub("", tool_description).strip()


@dataclass(frozen=True)
class Offer:
    """What the calling agent was given: its tools and its hand-offs, in order."""

    tools: dict[str, OfferedTool]
    handoffs: dict[str, OfferedHandoff]  # by agent name

    def handoff_for(self, agent: str) -> str | None:
        for name, handoff in self.handoffs.items():
            if name.lower() == agent.lower():
                return handoff.tool
        return None
