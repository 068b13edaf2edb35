"""Text helpers for what the model reads: values as one line, amounts, sizes, plurals, and
cutting text or JSON to a budget with a note saying what was left out. Pure: no I/O.

None of these raise on odd values: the renderers that use them read payloads written by
tools and third parties.
"""

from __future__ import annotations

import json
import re

#: Room kept for a ``[truncated: …]`` note when text is cut.
NOTE_RESERVE = 80
#: The usual length of a snippet (an email's, a search result's).
SNIPPET_CHARS = 240

_WS = re.compile(r"\s+")


def dumps(value: object) -> str:
    """Compact JSON; ``repr`` for what JSON cannot hold (non-str keys, cycles)."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def one_line(value: object, limit: int | None = None) -> str:
    """A value as one line of text: whitespace collapsed, optionally shortened with '…'."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list | tuple):
        text = ", ".join(one_line(item) for item in value if item not in (None, ""))
    elif isinstance(value, dict):
        if "email" in value or "name" in value:  # {"name": ..., "email": ...}
            name, email = one_line(value.get("name")), one_line(value.get("email"))
            text = f"{name} <{email}>" if name and email else (name or email)
        else:
            text = dumps(value)
    else:
        text = str(value)
    text = _WS.sub(" ", text).strip()
    if limit is not None and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def money(amount: object, currency: object) -> str:
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        return one_line(amount) or "?"
    text = f"{amount:,.2f}"
    return f"{text} {currency}" if isinstance(currency, str) and currency else text


def size(num: object) -> str:
    """A byte count for people ("3.2 MB"); "" for what is not one."""
    if isinstance(num, bool) or not isinstance(num, int | float) or num < 0:
        return ""
    if num < 1024:
        return f"{int(num)} bytes"
    for unit in ("KB", "MB", "GB"):
        num /= 1024
        if num < 1024 or unit == "GB":
            return f"{num:.1f} {unit}"
    return ""  # pragma: no cover


def plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word}{'es' if word.endswith(('s', 'x', 'ch', 'sh')) else 's'}"


def cut_json(value: object, budget: int | None) -> tuple[str, str]:
    """Compact JSON in ``budget`` characters: over it, the whole leading items (or keys)
    that fit, and the note saying what is left out ("" if nothing is)."""
    text = dumps(value)
    if budget is None or len(text) <= budget:
        return text, ""
    room = max(budget - NOTE_RESERVE, 0)
    if isinstance(value, list | dict) and value:
        entries = (
            [dumps(item) for item in value]
            if isinstance(value, list)
            else [f"{dumps(key)}:{dumps(item)}" for key, item in value.items()]
        )
        kept: list[str] = []
        used = 2
        for entry in entries:
            if used + len(entry) + 1 > room:
                break
            kept.append(entry)
            used += len(entry) + 1
        if kept:
            open_, close = ("[", "]") if isinstance(value, list) else ("{", "}")
            unit = "items" if isinstance(value, list) else "keys"
            return (
                f"{open_}{','.join(kept)}{close}",
                f"[truncated: showing {len(kept)} of {len(entries)} {unit}]",
            )
    return f"{text[:room]}…", f"[truncated: showing {room} of {len(text)} characters]"


def truncate(text: str, budget: int | None) -> str:
    """Cut ``text`` to ``budget`` chars, at a line break when one is near, with a note."""
    head, note = cut_text(text, budget)
    return f"{head}\n{note}"[:budget] if note else head


def cut_text(text: str, budget: int | None) -> tuple[str, str]:
    """``truncate`` as the kept text and the note saying what is left out ("" if none)."""
    if budget is None or len(text) <= budget:
        return text, ""
    if budget <= NOTE_RESERVE:
        return text[:budget], ""
    room = budget - NOTE_RESERVE
    cut = text.rfind("\n", 0, room + 1)
    at_line = cut >= room // 2
    if not at_line:
        cut = room
    omitted = text[cut:].strip("\n") if at_line else text[cut:]
    if at_line:
        lines = omitted.count("\n") + 1
        note = f"[truncated: {plural(lines, 'more line')}, {len(omitted)} characters not shown]"
    else:
        note = f"[truncated: {len(omitted)} more characters not shown]"
    head = text[:cut].rstrip() if at_line else text[:cut] + "…"
    return head, note


def within(head: str, note: str, budget: int) -> tuple[str, str]:
    """``head`` and ``note`` shortened so that ``head + "\n" + note`` fits ``budget``."""
    head = head[:budget]
    return head, note[: max(0, budget - len(head) - 1)] if note else ""
