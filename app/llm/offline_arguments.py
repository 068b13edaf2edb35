"""Arguments for any tool, read from the request by the tool's JSON schema, and values
read back from earlier tool outputs (a hidden lookup's result). Pure functions.

Per property: an enum value the request names; a number next to the property's name
("3 days"); an email address; a date ("tomorrow", "2025-03-01"); quoted text; a phrase
introduced by the property's own words ("titled …", "project Apollo", "about …"); else
the schema's default, null when allowed, and the request itself only for a free-text
property when nothing better is there. What cannot be found is reported as missing, so
the caller can look it up with another tool first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from connectors.offline_hints import Clause
from connectors.offline_reading import EMAIL_RE, parse_json, unfenced

_NUMBER = re.compile(r"(?<![\w.-])(-?\d+(?:\.\d+)?)(?![\w-])")
_ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|(?<![\w])'([^']+)'(?![\w])")
_ID_TOKEN = re.compile(r"(?<![\w-])#?([A-Za-z]*[-_]?\d[\w-]*)(?![\w-])")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# Words that introduce a property's value, by the words of the property's name.
_INTRODUCERS: dict[str, tuple[str, ...]] = {
    "title": ("titled", "called", "named", "title"),
    "name": ("named", "called", "name"),
    "subject": ("subject", "titled", "about"),
    "summary": ("titled", "about", "summary"),
    "body": ("saying", "says", "that says", "to say", "body"),
    "text": ("saying", "says", "text"),
    "message": ("saying", "says", "message"),
    "comment": ("saying", "comment"),
    "description": ("describing", "because", "saying", "description"),
    "query": ("about", "for", "with", "on"),
    "term": ("for", "about"),
    "topic": ("about", "on"),
    "city": ("in", "for", "at"),
    "location": ("in", "near", "at", "around"),
    "place": ("in", "near", "at"),
    "address": ("at", "to"),
}
# Free text: when nothing introduces it, such a property may take the request itself.
_FREE_TEXT = frozenset({"query", "term", "topic", "text", "question", "prompt", "q", "search"})
# Where a phrase stops: the next clause-like word.
_PHRASE_END = (
    r"(?=\s+(?:in|for|about|to|with|titled|called|named|saying|from|on|at|by|and|then|"
    r"that|which|who|under|over|before|after|within)\b"
    r"|[,.;!?]|$)"
)


@dataclass(frozen=True)
class Property:
    name: str
    types: frozenset[str]
    description: str
    enum: tuple[Any, ...]
    default: Any
    has_default: bool
    required: bool
    format: str

    @property
    def nullable(self) -> bool:
        return "null" in self.types

    @property
    def words(self) -> list[str]:
        return [word for word in re.split(r"[_\W]+", self.name.lower()) if word]

    @property
    def is_id(self) -> bool:
        return bool(self.words) and self.words[-1] in {"id", "ids", "key", "uuid"}


def properties(schema: Mapping[str, Any]) -> list[Property]:
    required = set(schema.get("required") or ())
    found = []
    for name, spec in (schema.get("properties") or {}).items():
        if not isinstance(spec, Mapping):
            continue
        variants = [spec, *(v for v in spec.get("anyOf") or () if isinstance(v, Mapping))]
        types: set[str] = set()
        enum: list[Any] = []
        fmt = ""
        for variant in variants:
            kind = variant.get("type")
            types.update([kind] if isinstance(kind, str) else kind or ())
            enum.extend(variant.get("enum") or ())
            if "const" in variant:
                enum.append(variant["const"])
            fmt = fmt or str(variant.get("format") or "")
        found.append(
            Property(
                name=name,
                types=frozenset(types),
                description=str(spec.get("description") or ""),
                enum=tuple(enum),
                default=spec.get("default"),
                has_default="default" in spec,
                required=name in required,
                format=fmt,
            )
        )
    return found


@dataclass
class Extraction:
    arguments: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # required, not in the request


def extract(
    schema: Mapping[str, Any], clause: Clause, given: Mapping[str, Any] | None = None
) -> Extraction:
    """The arguments ``clause`` gives for a tool with ``schema``; ``given`` (a connector's
    own extraction) wins. Required properties nobody could fill are listed as missing."""
    result = Extraction()
    reader = _Reader(clause)
    props = properties(schema)
    for prop in props:
        if given and prop.name in given:
            result.arguments[prop.name] = given[prop.name]
            continue
        value = reader.read(prop)
        if value is not None:
            result.arguments[prop.name] = value
        elif prop.has_default:
            result.arguments[prop.name] = prop.default
        elif prop.required and not prop.nullable:
            result.missing.append(prop.name)
        else:
            result.arguments[prop.name] = None
    return result


def last_resort(prop_name: str, schema: Mapping[str, Any], clause: Clause) -> Any:
    """A value for a required property nothing supplied (the tool will say if it is wrong)."""
    prop = next((p for p in properties(schema) if p.name == prop_name), None)
    if prop is None:
        return None
    if prop.enum:
        return prop.enum[0]
    if prop.types & {"integer", "number"}:
        return 1
    if "boolean" in prop.types:
        return False
    if "array" in prop.types:
        return []
    if "object" in prop.types:
        return {}
    return _Reader(clause).rest()


class _Reader:
    """Reads values out of one clause, each span used once."""

    def __init__(self, clause: Clause) -> None:
        self.clause = clause
        self.text = clause.text
        self.used: set[str] = set()

    def read(self, prop: Property) -> Any:
        if prop.enum:
            return self._enum(prop)
        if "boolean" in prop.types and not prop.types & {"string", "integer", "number"}:
            return self._flag(prop)
        if prop.types & {"integer", "number"} and "string" not in prop.types:
            return self._number(prop)
        if "array" in prop.types:
            return self._list(prop)
        if "string" in prop.types or not prop.types:
            return self._string(prop)
        return None

    # ------------------------------------------------------------------ kinds

    def _enum(self, prop: Property) -> Any:
        lowered = self.text.lower()
        for value in prop.enum:
            spoken = str(value).lower().replace("_", " ")
            if spoken and re.search(rf"(?<![\w-]){re.escape(spoken)}(?![\w-])", lowered):
                return value
        return None

    def _flag(self, prop: Property) -> bool | None:
        spoken = " ".join(prop.words)
        if spoken and re.search(rf"\b{re.escape(spoken)}\b", self.text, re.I):
            return True
        return None

    def _number(self, prop: Property) -> int | float | None:
        for word in prop.words:
            near = re.search(
                rf"(-?\d+(?:\.\d+)?)\s+{re.escape(word)}|\b{re.escape(word)}\s*(?:of|:|=|#)?\s*"
                rf"(-?\d+(?:\.\d+)?)(?![\w-])",
                self.text,
                re.I,
            )
            if near:
                return self._as_number(prop, near.group(1) or near.group(2))
        free = [m.group(1) for m in _NUMBER.finditer(self.text) if m.group(1) not in self.used]
        if len(free) == 1 and not _ISO_DATE.search(self.text):
            return self._as_number(prop, free[0])
        return None

    def _as_number(self, prop: Property, raw: str) -> int | float:
        self.used.add(raw)
        number = float(raw)
        return int(number) if "integer" in prop.types and number.is_integer() else number

    def _list(self, prop: Property) -> list[str] | None:
        if self._wants_email(prop):
            found = [a for a in EMAIL_RE.findall(self.text) if a not in self.used]
            self.used.update(found)
            return found or None
        single = self._string(prop)
        return [single] if single else None

    def _string(self, prop: Property) -> str | None:
        if self._wants_email(prop):
            address = next((a for a in EMAIL_RE.findall(self.text) if a not in self.used), None)
            if address:
                self.used.add(address)
            return address
        if self._wants_date(prop):
            return self._date()
        if prop.is_id:
            return self._id(prop)
        phrase = self._introduced(prop)
        if phrase:
            return phrase
        quoted = self._quoted()
        if quoted and self._is_text(prop):
            return quoted
        if prop.required and not prop.nullable and self._is_free_text(prop):
            return self.rest()
        return None

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _wants_email(prop: Property) -> bool:
        return (
            prop.format == "email"
            or bool(
                {"email", "emails", "to", "recipient", "recipients", "cc", "bcc"} & set(prop.words)
            )
            or "email address" in prop.description.lower()
        )

    @staticmethod
    def _wants_date(prop: Property) -> bool:
        return prop.format in {"date", "date-time"} or bool(
            {"date", "day", "due", "deadline", "when"} & set(prop.words)
        )

    def _date(self) -> str | None:
        iso = _ISO_DATE.search(self.text)
        if iso:
            return iso.group(1)
        lowered = self.text.lower()
        today = self.clause.today
        relative = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}
        for word, shift in relative.items():
            if re.search(rf"\b{word}\b", lowered):
                return (today + timedelta(days=shift)).isoformat()
        if re.search(r"\bnext week\b", lowered):
            return (today + timedelta(days=7)).isoformat()
        for index, name in enumerate(_WEEKDAYS):
            if re.search(rf"\b{name}\b", lowered):
                ahead = (index - today.weekday()) % 7 or 7
                return (today + timedelta(days=ahead)).isoformat()
        return None

    def _id(self, prop: Property) -> str | None:
        owner = [word for word in prop.words[:-1]]
        for word in owner:
            near = re.search(rf"\b{re.escape(word)}\s+#?([A-Za-z]*[-_]?\d[\w-]*)", self.text, re.I)
            if near:
                return near.group(1)
        for match in _ID_TOKEN.finditer(self.text):
            token = match.group(1)
            if token not in self.used and not _ISO_DATE.fullmatch(token) and not token.isdigit():
                self.used.add(token)
                return token
        return None

    def _introduced(self, prop: Property) -> str | None:
        introducers: list[str] = []
        for word in prop.words:
            introducers += _INTRODUCERS.get(word, (word,))
        for word in dict.fromkeys(introducers):
            value = self._after(word, capitalised=word in {"in", "at", "near", "around", "to"})
            if value:
                return value
        for word in prop.words:
            # "the Apollo project": the name before the property's own word.
            named = re.search(rf"((?:[A-Z][\w'.-]*\s+)+){re.escape(word)}\b", self.text)
            if named and (value := self._take(named.group(1).strip())):
                return value
        return None

    def _after(self, word: str, *, capitalised: bool) -> str | None:
        quoted = re.search(
            rf"\b{re.escape(word)}\s*:?\s*(?:\"([^\"]+)\"|“([^”]+)”|'([^']+)')", self.text, re.I
        )
        if quoted:
            return self._take(next(g for g in quoted.groups() if g))
        if capitalised:
            # "in Boston", "at Acme Corp": a name, not "in the morning".
            named = re.search(
                rf"\b{re.escape(word)}\s+((?:[A-Z][\w'.-]*)(?:[ ,]+[A-Z][\w'.-]*)*)", self.text
            )
            return self._take(named.group(1).strip(" ,")) if named else None
        phrase = re.search(rf"\b{re.escape(word)}\s+(?:the\s+)?(.+?){_PHRASE_END}", self.text, re.I)
        if phrase and phrase.group(1).lower() not in _FILLER:
            return self._take(phrase.group(1).strip())
        return None

    def _take(self, value: str) -> str | None:
        if not value or value in self.used:
            return None
        self.used.add(value)
        return value

    def _quoted(self) -> str | None:
        for match in _QUOTED.finditer(self.text):
            value = next(g for g in match.groups() if g)
            if value not in self.used:
                self.used.add(value)
                return value
        return None

    @staticmethod
    def _is_text(prop: Property) -> bool:
        return bool(set(prop.words) & (set(_INTRODUCERS) | _FREE_TEXT))

    @staticmethod
    def _is_free_text(prop: Property) -> bool:
        return bool(set(prop.words) & (_FREE_TEXT | {"description", "body", "message"}))

    def rest(self) -> str:
        """The clause without the words that only ask (the part a search would use)."""
        text = re.sub(
            r"^(?:please\s+)?(?:ask\s+\w+\s+(?:to\s+|for\s+|about\s+|when\s+)?)?"
            r"(?:(?:can|could|would) you\s+)?(?:search(?: for)?|look up|find|show me|tell me"
            r"(?: about)?)?\s*",
            "",
            self.text.strip(),
            flags=re.I,
        )
        return (text or self.text).strip(" ?.!")


_FILLER = frozenset({"me", "it", "them", "that", "this", "us", "you"})


# ----------------------------------------------------------------------------- outputs


def value_from_output(output: str, name: str, types: Iterable[str] = ("string",)) -> Any:
    """The value an earlier tool output gives for the argument ``name``: a JSON key of that
    name (or ``id`` for ``x_id``), else a ``name: value`` / ``id=value`` line."""
    keys = [name]
    words = [word for word in re.split(r"[_\W]+", name.lower()) if word]
    if words and words[-1] == "id":
        keys.append("id")
    value = _from_json(parse_json(output), keys)
    if value is None:
        text = unfenced(output)
        for key in keys:
            match = re.search(rf"(?<![\w-]){re.escape(key)}\s*[:=]\s*\"?([^\s\",;)]+)", text, re.I)
            if match:
                value = match.group(1)
                break
    return _coerce(value, set(types)) if value is not None else None


def _from_json(data: Any, keys: list[str]) -> Any:
    if isinstance(data, dict) and isinstance(data.get("response"), dict | list):
        data = data["response"]
    if isinstance(data, list):
        data = data[0] if data else None
    if isinstance(data, dict):
        for key in keys:
            if key in data and isinstance(data[key], str | int | float):
                return data[key]
    return None


def _coerce(value: Any, types: set[str]) -> Any:
    if "integer" in types and not isinstance(value, int):
        try:
            return int(str(value).lstrip("#"))
        except ValueError:
            return value
    if "number" in types and not isinstance(value, int | float):
        try:
            return float(value)
        except ValueError:
            return value
    return value if not ("string" in types and not isinstance(value, str)) else str(value)
