"""How the offline demo model reads requests and tool results. Pure: no I/O.

Tool results arrive as the model reads them: the plain text of
``connectors.adapters.to_plain_text`` (numbered lines, third-party text fenced) or JSON.
Shared by the generic offline path (``app.llm.offline_*``) and the connectors' own hints
(``connectors/<name>/offline.py``).
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from typing import Any

# ----------------------------------------------------------------------------- requests

EMAIL_RE = re.compile(r"[A-Za-z0-9._%+'-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")


_COUNTS = {
    "a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3,
}  # fmt: skip
_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_SPAN = re.compile(
    r"\b(?:last|past|previous)\s+(\d{1,2}|couple of|few|[a-z]+)\s+(days?|weeks?|months?)\b"
)
_MONTH_NAMED = re.compile(
    r"\b(?:in|for|during|of|since)\s+(" + "|".join(_MONTHS) + r"|sept|oct|nov|dec|jan|feb|"
    r"mar|apr|jun|jul|aug)\b"
)


# The same phrases in French, Spanish and German ("le mois dernier", "este mes", "gestern").
_YESTERDAY = re.compile(r"\b(?:yesterday|hier|ayer|gestern)\b")
_TODAY = re.compile(r"\b(?:today|aujourd'hui|hoy|heute)\b")
_WEEK = re.compile(
    r"\b(?:(?:last|past|this)\s+week|la semaine (?:derni[èe]re|pass[ée]e)|cette semaine|"
    r"la semana pasada|esta semana|(?:letzte|letzten|vergangene|diese|dieser|diesen) woche)\b"
)
_THIS_MONTH = re.compile(r"\b(?:this month|ce mois(?:-ci)?|este mes|diese[nmr]? monat)\b")
_LAST_MONTH = re.compile(
    r"\b(?:(?:last|past|previous) month|le mois (?:dernier|pass[ée])|el mes pasado|"
    r"(?:letzten|vorigen|vergangenen) monat)\b"
)


def date_range(text: str, today: date) -> tuple[str | None, str | None, int]:
    """(start, end, days) for phrases like "last week", "this month", "last 10 days",
    "past two weeks", "in October" (its latest, up to this month), and the commonest of
    them in French, Spanish and German."""
    lowered = text.lower()
    span = _SPAN.search(lowered)
    count = None
    if span:
        raw = span.group(1)
        count = int(raw) if raw.isdigit() else _COUNTS.get(raw)
    if span and count:
        unit = span.group(2).rstrip("s")
        days = max(1, min(count * {"day": 1, "week": 7, "month": 30}[unit], 90))
        return (today - timedelta(days=days - 1)).isoformat(), today.isoformat(), days
    named = _MONTH_NAMED.search(lowered)
    if named:
        month = next(i for i, name in enumerate(_MONTHS, 1) if name.startswith(named.group(1)))
        year = today.year if month <= today.month else today.year - 1
        first = date(year, month, 1)
        following = date(year + month // 12, month % 12 + 1, 1)
        last = min(following - timedelta(days=1), today)
        return first.isoformat(), last.isoformat(), min(90, (today - first).days + 1)
    if _YESTERDAY.search(lowered):
        day = (today - timedelta(days=1)).isoformat()
        return day, day, 2
    if _TODAY.search(lowered):
        return today.isoformat(), today.isoformat(), 1
    if _WEEK.search(lowered):
        return (today - timedelta(days=7)).isoformat(), today.isoformat(), 7
    if _THIS_MONTH.search(lowered):
        return today.replace(day=1).isoformat(), today.isoformat(), today.day
    if _LAST_MONTH.search(lowered):
        end = today.replace(day=1) - timedelta(days=1)
        return end.replace(day=1).isoformat(), end.isoformat(), 30
    if re.search(r"\b(quarter|three months|3 months|90 days)\b", lowered):
        return (today - timedelta(days=89)).isoformat(), today.isoformat(), 90
    return None, None, 30


def asking(verbs: str, objects: str, alone: str = "", within: int = 40) -> re.Pattern[str]:
    """A request to do one of ``verbs`` to one of ``objects`` ("delete … newsletters": the
    object within ``within`` characters of the same sentence), or one of ``alone``."""
    either = rf"|\b(?:{alone})\b" if alone else ""
    return re.compile(rf"\b(?:{verbs})\b[^.?!]{{0,{within}}}?\b(?:{objects})\b{either}", re.I)


# ----------------------------------------------------------------------------- results

# The fence lines third-party text arrives in (connectors.untrusted): not part of the data.
_FENCE_LINE = re.compile(r'^(?:<external source="[^"]*">|</external>)$', re.M)

# How connectors.adapters.to_plain_text opens an account card, which is what the model reads.
NOT_CONNECTED = "The user has not connected"


def unfenced(text: str) -> str:
    return _FENCE_LINE.sub("", text).strip()


def parse_json(text: str) -> Any:
    stripped = unfenced(text)
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped.split("\n[truncated")[0])
    except json.JSONDecodeError:
        return None


_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•]|\[\d+\])\s+(.*\S)")


def items_of(output: str) -> list[str]:
    """The listed items of a tool result: numbered/bulleted lines, or JSON list entries."""
    data = parse_json(output)
    if isinstance(data, dict) and isinstance(data.get("response"), list):
        data = data["response"]
    if isinstance(data, list):
        return [_describe_json(entry) for entry in data]
    return [match.group(1) for line in output.splitlines() if (match := _ITEM.match(line))]


def _describe_json(entry: Any) -> str:
    if not isinstance(entry, dict):
        return str(entry)
    name = entry.get("name") or entry.get("title") or entry.get("subject") or ""
    extra = [str(entry[key]) for key in ("rating", "price") if entry.get(key)]
    location = entry.get("location")
    if isinstance(location, dict) and location.get("display_address"):
        extra.append(", ".join(location["display_address"]))
    return " — ".join([str(name), *extra]) if extra else str(name)


def strip_item(line: str) -> str:
    """An item line without ids, markdown emphasis or long snippets."""
    line = re.sub(r"\s*\bid=\S+", "", line)
    line = re.sub(r"[*_`]+", "", line)
    return line.split(": ", 1)[0] if line.startswith("From ") else line.strip()


def name_of(line: str) -> str:
    return re.split(r" — | – | \| ", strip_item(line))[0].strip()


def first_id(output: str, pattern: str) -> str | None:
    """The first listed entry's id: a JSON list's ``id``, else ``pattern``'s group 1."""
    data = parse_json(output)
    if isinstance(data, list) and data and isinstance(data[0], dict) and data[0].get("id"):
        return str(data[0]["id"])
    match = re.search(pattern, output)
    return match.group(1) if match else None


# ----------------------------------------------------------------------------- writing


def clip(text: str, limit: int, ellipsis: str = "…") -> str:
    """``text`` if it fits in ``limit`` characters, else cut after the last whole word that
    fits, then ``ellipsis`` (the whole at most ``limit`` characters)."""
    if len(text) <= limit:
        return text
    head = text[: max(1, limit - len(ellipsis))]
    if not text[len(head)].isspace():
        head = re.sub(r"\S+$", "", head).rstrip() or head  # one long word is cut inside
    return head.rstrip(" \t\n,.;:") + ellipsis


def money(value: float) -> str:
    return f"${value:,.2f}"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def names_of(items: list[str], limit: int = 3) -> str:
    """ "**A**, **B** and **C**": the names of the first ``limit`` items, in bold."""
    names = [f"**{name_of(item)}**" for item in items[:limit] if name_of(item)]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + f" and {names[-1]}"


# What a prompt injection in third-party text usually says (connectors.instructions asks
# every agent to tell the user about such text rather than follow it).
_INJECTION = re.compile(
    r"ignore (?:all |any )?(?:previous|prior|earlier) instructions|"
    r"(?:note|message) to (?:the |any )?(?:ai|assistant)",
    re.I,
)


def injection_warning(items: list[str]) -> str:
    """A sentence warning about the first item that talks to an AI assistant, or ""."""
    flagged = [item for item in items if _INJECTION.search(item)]
    if not flagged:
        return ""
    subject = re.search(r"Subject (.+?)(?: — |$)", flagged[0])
    which = f"**{subject.group(1)}**" if subject else "one of them"
    return (
        f" Careful: {which} contains instructions aimed at an AI assistant; I did not follow them."
    )
