"""Which connector tool a stack of frames is running: the watchdog's answer to "what is
holding the event loop?" (app/watchdog.py).

``connector_tool`` registers each async tool's function (its code object) with the agent
it belongs to; ``tool_in(frame)`` walks a stack from its innermost frame outwards and names
the first tool it finds, however deep in the tool's helpers the loop is stuck. Only code
objects are compared: nothing of a frame's locals is read. A ``blocking=True`` tool runs in
a worker thread, never on the loop, and is not registered.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, FrameType

__all__ = ["ToolOnStack", "register_tool", "tool_in"]


@dataclass(frozen=True)
class ToolOnStack:
    agent: str  # the connector's agent, as connector_tool(agent_name=...) says
    tool: str  # the tool's name, as the model calls it


# Weak keys: a tool built for one test or one agent goes with its function.
_TOOLS: weakref.WeakKeyDictionary[CodeType, ToolOnStack] = weakref.WeakKeyDictionary()


def register_tool(function: Callable[..., object], agent: str, tool: str) -> None:
    """Name ``function`` (and what it wraps, if it is a decorated function) as ``tool``."""
    named = ToolOnStack(agent, tool)
    for candidate in (function, inspect.unwrap(function)):
        code = getattr(candidate, "__code__", None)
        if isinstance(code, CodeType):
            _TOOLS[code] = named


def tool_in(frame: FrameType | None) -> ToolOnStack | None:
    """The innermost registered tool on the stack that ends at ``frame``; None if none is.

    Called from another thread (the watchdog's) while the frames' own thread is stuck:
    it only follows ``f_back`` and looks at each frame's code.
    """
    while frame is not None:
        found = _TOOLS.get(frame.f_code)
        if found is not None:
            return found
        frame = frame.f_back
    return None
