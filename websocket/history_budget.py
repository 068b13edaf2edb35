"""How much of a chat's history fits the model: token estimates, indivisible item groups,
and where to cut. Pure functions, no I/O (``websocket.memory`` does the reading, the
summarising and the storing; docs/memory.md explains the whole).

Tokens are **estimated**, not counted with the model's tokenizer: every provider (OpenAI,
Chat Completions servers, local Open Responses servers) tokenises differently, and the
estimate must work offline without a tokenizer download. One token per
``CHARS_PER_TOKEN`` characters of an item's compact JSON (non-ASCII text escaped, so a CJK
character counts two tokens), plus ``ITEM_OVERHEAD_TOKENS`` per item for the message
framing. OpenAI's tokenizers average about four characters of English per token, so
three is deliberately pessimistic: the estimate errs on the side of fitting.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

CHARS_PER_TOKEN = 3
ITEM_OVERHEAD_TOKENS = 4

# Shares of the input budget (the context less the answer's reserve):
# - the turn's own steps (its tool calls and outputs, the answers between them) are not
#   known when it starts, so the history leaves this much room for them;
TURN_SHARE = 0.25
# - the summary of the folded turns never takes more than this;
SUMMARY_SHARE = 0.10
# - after a compaction the kept items take at most this share of the history's room, so
#   the next several turns fit without another summary call (not one call per turn).
KEEP_SHARE = 0.5

# Where an item's type says it answers a call (``function_call_output``,
# ``computer_call_output``, ``shell_call_output``, ``custom_tool_call_output`` ...).
OUTPUT_SUFFIX = "_output"


def estimate_tokens(value: object) -> int:
    """Estimated tokens of a text, or of any JSON value as the model would be sent it."""
    if value is None:
        return 0
    if isinstance(value, str):
        return -(-len(value) // CHARS_PER_TOKEN)
    try:
        # Its UTF-8 bytes: the stdlib's ``\uXXXX`` escapes were as pessimistic for other
        # scripts, at several times the CPU (every item, every model call).
        size = len(orjson.dumps(value, default=str))
    except TypeError:  # what orjson refuses (integers past 64 bits, non-string keys)
        size = len(json.dumps(value, separators=(",", ":"), default=str))
    return -(-size // CHARS_PER_TOKEN)


# An inline image is not read as text: providers count it by its size in tiles (OpenAI's
# high detail costs at most about 1,500 tokens), never by the length of its base64.
IMAGE_TOKENS = 1_600


def item_tokens(item: Mapping[str, Any]) -> int:
    images, text_only = _images_apart(item)
    return estimate_tokens(text_only) + images * IMAGE_TOKENS + ITEM_OVERHEAD_TOKENS


def _images_apart(item: Mapping[str, Any]) -> tuple[int, Mapping[str, Any]]:
    """How many inline images a message item holds, and the item without their data."""
    content = item.get("content")
    if not isinstance(content, list):
        return 0, item
    images = 0
    parts: list[Any] = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "input_image":
            images += 1
            part = {**part, "image_url": ""}
        parts.append(part)
    return (images, {**item, "content": parts}) if images else (0, item)


@dataclass(frozen=True)
class Budget:
    """A model's token budget: its whole context, and how much of it the answer may use."""

    context_tokens: int
    answer_tokens: int

    def __post_init__(self) -> None:
        if self.context_tokens <= 0:
            raise ValueError(f"context_tokens must be positive, not {self.context_tokens}")
        if not 0 <= self.answer_tokens < self.context_tokens:
            raise ValueError(
                f"answer_tokens ({self.answer_tokens}) must be at least 0 and less than "
                f"the context ({self.context_tokens})"
            )

    @property
    def input_tokens(self) -> int:
        """What one request's input may take: instructions, tools, history and prompt."""
        return self.context_tokens - self.answer_tokens

    @property
    def summary_tokens(self) -> int:
        return max(1, int(self.input_tokens * SUMMARY_SHARE))

    def history_tokens(self, fixed: int) -> int:
        """The room of the history (summary included) when a turn starts, after ``fixed``
        (instructions, tools and the prompt) and the turn's own steps."""
        return max(0, self.input_tokens - fixed - int(self.input_tokens * TURN_SHARE))


def group_spans(items: Sequence[Mapping[str, Any]]) -> list[range]:
    """``items`` cut into the groups that must reach the model whole, in order.

    Together in one group: a tool call and its output (``call_id``; parallel calls and
    everything between a call and its output too, as the model APIs refuse a call whose
    output is missing or an output whose call is), an MCP approval request and its response
    (``approval_request_id``), and a reasoning item with the item after it (models that
    reason refuse a reasoning item cut from what it led to). A handoff is a call and its
    output, so it stays whole too.
    """
    count = len(items)
    reach = list(range(count))  # reach[i]: the last index that must stay with item i
    calls: dict[str, int] = {}
    ids: dict[str, int] = {}
    for index, item in enumerate(items):
        kind = str(item.get("type") or "message")
        call_id = item.get("call_id")
        if isinstance(call_id, str):
            if kind.endswith(OUTPUT_SUFFIX):
                start = calls.get(call_id)
                if start is not None:
                    reach[start] = max(reach[start], index)
            else:
                calls.setdefault(call_id, index)
        request = item.get("approval_request_id")
        if isinstance(request, str) and request in ids:
            start = ids[request]
            reach[start] = max(reach[start], index)
        item_id = item.get("id")
        if isinstance(item_id, str):
            ids.setdefault(item_id, index)
        if kind == "reasoning" and index + 1 < count:
            reach[index] = max(reach[index], index + 1)
    spans: list[range] = []
    start, end = 0, -1
    for index in range(count):
        if index > end and index > start:
            spans.append(range(start, end + 1))
            start = index
        end = max(end, reach[index])
    if count:
        spans.append(range(start, end + 1))
    return spans


def is_turn_start(item: Mapping[str, Any]) -> bool:
    """A user's message: where a turn of the chat begins."""
    return item.get("role") == "user" and item.get("type", "message") == "message"


def fold_cut(
    items: Sequence[Mapping[str, Any]], tokens: Sequence[int], spans: Sequence[range], limit: int
) -> int:
    """How many leading items to fold into the summary so the rest takes at most
    ``limit`` tokens: always at a group's boundary, at a turn's start when one fits (the
    kept history then starts with a user's message), all of them when nothing else fits."""
    remaining = sum(tokens)
    fallback: int | None = None
    for span in spans:
        if remaining <= limit:
            if is_turn_start(items[span.start]):
                return span.start
            if fallback is None:
                fallback = span.start
        remaining -= sum(tokens[i] for i in span)
    return fallback if fallback is not None else len(items)


def drop_to_fit(
    tokens: Sequence[int], spans: Sequence[range], keep_before: int, keep_from: int, limit: int
) -> list[int]:
    """The indexes kept when the oldest whole groups are left out until the total is at
    most ``limit``. Groups reaching before ``keep_before`` (the summary) or from
    ``keep_from`` on (the running turn) are always kept, so the total may stay above."""
    total = sum(tokens)
    dropped: set[int] = set()
    for span in spans:
        if total <= limit:
            break
        if span.start < keep_before or span[-1] >= keep_from:
            continue
        dropped.update(span)
        total -= sum(tokens[i] for i in span)
    return [i for i in range(len(tokens)) if i not in dropped]
