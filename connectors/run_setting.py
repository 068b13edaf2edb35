"""A setting of the running turn, read from the context a tool is called with.

No imports of its own: the tool wrapper, the argument check and the approval rule all
read their limits through it, and the settings module imports the approval rules.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["run_setting"]

Number = TypeVar("Number", int, float)


def run_setting(context: object, name: str, default: Number) -> Number:
    """The setting ``name`` of the turn whose ``ChatContext`` this is, else ``default``
    (a tool called without a run context: tests, scripts)."""
    value = getattr(getattr(context, "settings", None), name, None)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return type(default)(value)
    return default
