"""The size cap on a tool's result: measured and cut before anything else reads it. Pure.

A tool (built-in, plug-in, RAP or MCP) may return megabytes. Everything after it —
fencing third-party text for the model (``connectors.untrusted``), validation, storage,
the ``tool_output`` event, the page's DOM — costs time in proportion to the size, most of
it on the event loop. So the result is measured first, with a walk that stops as soon as
the cap is passed (a 20 MB string or a million-item list costs no more than the cap), and
a result over it is cut to its first part and marked ``truncated``: the card says so, and
the model is told (``cut_note``).

Sizes are characters, about as many as the value's compact JSON holds: a string counts
its length, a container its brackets and separators, a number or a literal 4.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_MAX_CHARS", "CutResult", "cut_fields", "cut_note", "cut_text", "size_within"]

# SWITCHBOARD_TOOL_RESULT_MAX_CHARS' default (256 KiB), also where no settings are at hand.
DEFAULT_MAX_CHARS = 262_144

# The fields of a ToolResponse that hold a tool's data, in the order they get their share.
SIZED_FIELDS = ("response", "display_as", "content_chunks", "error_message", "debug_info")
_TEXT_HINTS = ("text", "markdown")
_SCALAR = 4  # a number, true/false/null: counted alike, never cut


def size_within(value: object, limit: int) -> int | None:
    """About how many characters ``value`` takes as JSON, or None when over ``limit``.

    Stops as soon as the count passes ``limit``: every item counts at least one
    character, so no more than ``limit`` items are ever visited.
    """
    total = 0
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + 2 * len(item)  # braces, a colon and a comma per entry
            if total > limit:
                return None
            for key, child in item.items():
                total += len(key) + 2 if isinstance(key, str) else _SCALAR
                if total > limit:
                    return None
                pending.append(child)
        elif isinstance(item, list | tuple):
            total += 2 + len(item)  # brackets, a comma per item
            if total > limit:
                return None
            pending.extend(item)
        else:
            total += _SCALAR
        if total > limit:
            return None
    return total


def _prune(value: Any, budget: int) -> tuple[Any, int]:
    """The first part of ``value`` that fits ``budget`` characters, and its size.

    Strings are cut; lists and objects keep their first items whole, then the first part
    of the next one, and stop there. The shape stays, so a card still reads an object
    where it expects one. Visits at most about twice ``budget`` items.
    """
    if isinstance(value, str):
        kept = value[: max(budget - 2, 0)]
        return kept, len(kept) + 2
    if isinstance(value, dict):
        pruned: dict[Any, Any] = {}
        used = 2
        for key, child in value.items():
            key_size = (len(key) if isinstance(key, str) else _SCALAR) + 4
            left = budget - used - key_size
            if left <= 0:
                break
            size = size_within(child, left)
            if size is None:
                pruned[key], size = _prune(child, left)
                return pruned, used + key_size + size
            pruned[key] = child
            used += key_size + size
        return pruned, used
    if isinstance(value, list | tuple):
        items: list[Any] = []
        used = 2
        for child in value:
            left = budget - used - 1
            if left <= 0:
                break
            size = size_within(child, left)
            if size is None:
                kept_child, size = _prune(child, left)
                return [*items, kept_child], used + size + 1
            items.append(child)
            used += size + 1
        return items, used
    return value, _SCALAR


def cut_text(text: str, max_chars: int) -> str:
    """``text`` itself when within ``max_chars``, else its first ``max_chars`` characters."""
    return text if len(text) <= max_chars else text[:max_chars]


def _cut_hints(hints: list[Any], budget: int) -> tuple[list[Any], int]:
    """The hints that fit whole; a text or markdown hint that does not is cut, others left
    out (half a link or card is no use to a client)."""
    kept: list[Any] = []
    used = 2
    for hint in hints:
        left = budget - used - 1
        if left <= 0:
            break
        size = size_within(hint, left)
        if size is not None:
            kept.append(hint)
            used += size + 1
        elif isinstance(hint, dict) and hint.get("type") in _TEXT_HINTS:
            content = hint.get("content")
            text = content[: max(left - 40, 0)] if isinstance(content, str) else ""
            kept.append({"type": hint["type"], "content": text})
            used += len(text) + 40
    return kept, used


def _cut_items(items: list[Any], budget: int) -> tuple[list[Any], int]:
    """The first items (citations) that fit whole."""
    kept: list[Any] = []
    used = 2
    for item in items:
        size = size_within(item, budget - used - 1)
        if size is None:
            break
        kept.append(item)
        used += size + 1
    return kept, used


def _cut_field(name: str, value: Any, budget: int) -> tuple[Any, int]:
    if name == "display_as" and isinstance(value, list):
        return _cut_hints(value, budget)
    if name == "content_chunks" and isinstance(value, list):
        return _cut_items(value, budget)
    return _prune(value, budget)


@dataclass(frozen=True)
class CutResult:
    """A result that was over the cap: its fields cut, and what the model is told."""

    fields: dict[str, Any]
    note: str


def cut_note(original: int | None, kept: int, max_chars: int) -> str:
    """The line the model reads after a cut result's text."""
    size = f"{original:,} characters" if original is not None else "longer than that"
    return (
        f"[cut: this tool's result was over the {max_chars:,}-character limit ({size}), so "
        f"only its first {kept:,} characters were kept; what you read above is from them. "
        "Say so if it matters, or ask the tool for less.]"
    )


def cut_fields(fields: Mapping[str, Any], max_chars: int) -> CutResult | None:
    """None when a ToolResponse's ``fields`` are within ``max_chars`` together; else the
    fields cut to fit, with ``truncated`` set.

    The budget is shared out smallest first: a field that fits its fair share keeps all
    of it, and what it leaves goes to the larger ones, so a short text beside a huge
    payload is never cut.
    """
    present = [(name, fields[name]) for name in SIZED_FIELDS if fields.get(name) is not None]
    sizes = {name: size_within(value, max_chars) for name, value in present}
    known = [size for size in sizes.values() if size is not None]
    if len(known) == len(sizes) and sum(known) <= max_chars:
        return None
    # Only a string's size is known exactly without walking all of it.
    response = fields.get("response")
    original = (
        len(response)
        if isinstance(response, str) and all(sizes[name] is not None for name, _ in present[1:])
        else None
    )
    if original is not None:
        original += sum(size for name, size in sizes.items() if name != "response" and size)
    order = sorted(present, key=lambda pair: sizes[pair[0]] or max_chars + 1)
    cut = dict(fields)
    left = max_chars
    for index, (name, value) in enumerate(order):
        share = left // (len(order) - index)
        size = sizes[name]
        if size is not None and size <= share:
            left -= size
            continue
        if isinstance(value, str):
            cut[name] = cut_text(value, max(share - 2, 0))
            used = len(cut[name]) + 2
        else:
            cut[name], used = _cut_field(name, value, share)
        left -= used
    cut["truncated"] = True
    return CutResult(cut, cut_note(original, max_chars - left, max_chars))
