"""Arguments for a tool, from its JSON schema: one simple, predictable set
(``simple_arguments``) and a few varied ones generated with Hypothesis
(``generated_arguments``), the same on every run so CI is stable.

hypothesis-jsonschema draws the leaves (strings, numbers, enums, formats, patterns);
objects and arrays are composed here: its own object strategy relies on a Hypothesis
internal (``many.more``) that Hypothesis 6.170 removed, and a tool's arguments are always
an object.
"""

from __future__ import annotations

import json
from typing import Any

from agents import FunctionTool
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

__all__ = ["generated_arguments", "sample_arguments", "simple_arguments"]

Schema = dict[str, Any]

_MAX_ITEMS = 3  # list arguments stay short: their content is what gets exercised
_MAX_DEPTH = 8  # a recursive $ref stops here (as an empty object)


def simple_arguments(schema: Schema, text: str = "test") -> dict[str, Any]:
    """Arguments that satisfy ``schema``: defaults, else the simplest value of each type."""
    arguments: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        kinds = spec.get("type")
        if isinstance(kinds, list):
            kinds = next((kind for kind in kinds if kind != "null"), "null")
        if "default" in spec:
            arguments[name] = spec["default"]
        elif "anyOf" in spec:
            arguments[name] = None
        elif "enum" in spec:
            arguments[name] = spec["enum"][0]
        else:
            arguments[name] = {
                "string": text,
                "integer": 1,
                "number": 1.0,
                "boolean": False,
                "array": [],
                "object": {},
            }.get(str(kinds))
    return arguments


def sample_arguments(tool: FunctionTool, text: str = "test") -> dict[str, Any]:
    """``simple_arguments`` for ``tool``'s schema (the kit's first helper, kept by name)."""
    return simple_arguments(tool.params_json_schema, text)


def generated_arguments(schema: Schema, count: int) -> list[dict[str, Any]]:
    """Up to ``count`` distinct argument objects valid for ``schema``, derandomized."""
    if count <= 0:
        return []
    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    strategy = _strategy(schema, schema.get("$defs") or schema.get("definitions") or {}, 0)

    @settings(
        max_examples=count,
        derandomize=True,  # the same examples on every run and machine
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def collect(value: Any) -> None:
        key = json.dumps(value, sort_keys=True, default=str)
        if isinstance(value, dict) and key not in seen:
            seen.add(key)
            found.append(value)

    collect()
    return found


def _strategy(schema: Schema, defs: Schema, depth: int) -> st.SearchStrategy[Any]:
    if depth > _MAX_DEPTH:
        return st.just({})
    reference = schema.get("$ref")
    if isinstance(reference, str):
        name = reference.rsplit("/", 1)[-1]
        if name not in defs:
            raise ValueError(f"the schema refers to {reference!r}, which it does not define")
        return _strategy({**defs[name], **_without(schema, "$ref")}, defs, depth + 1)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return st.one_of([_strategy(option, defs, depth + 1) for option in schema[key]])
    kind = schema.get("type")
    if kind == "object" or (kind is None and "properties" in schema):
        properties: dict[str, Schema] = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        return st.fixed_dictionaries(
            {
                name: _strategy(spec, defs, depth + 1)
                for name, spec in properties.items()
                if name in required
            },
            optional={
                name: _strategy(spec, defs, depth + 1)
                for name, spec in properties.items()
                if name not in required
            },
        )
    if kind == "array" and isinstance(schema.get("items"), dict):
        low = int(schema.get("minItems", 0))
        high = max(low, min(int(schema.get("maxItems", _MAX_ITEMS)), _MAX_ITEMS))
        return st.lists(_strategy(schema["items"], defs, depth + 1), min_size=low, max_size=high)
    return from_schema(_without(schema, "$defs", "definitions", "default", "title"))


def _without(schema: Schema, *keys: str) -> Schema:
    return {key: value for key, value in schema.items() if key not in keys}
