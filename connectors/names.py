"""The one namespace every connector name lives in: built-ins, plug-ins, RAP and MCP servers.

A connector name is a REST path segment and a settings key (``SWITCHBOARD_CONNECTOR_MODES``),
so it has one shape everywhere. Which names the built-ins hold is not listed here: they are
whatever this distribution registers through its own entry points (``pyproject.toml``).
"""

from __future__ import annotations

import re

# Where connectors register (a plug-in's pyproject.toml: [project.entry-points."…"]).
ENTRY_POINT_GROUP = "switchboard.connectors"
# The distribution whose ``switchboard.connectors`` entry points are the built-ins.
DISTRIBUTION = "switchboard-server"
# The agent every prompt goes to first; no connector agent may take its name.
ORCHESTRATOR = "Switchboard"

CONNECTOR_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
# Names that would be confusing or collide with the server's own packages and routes.
RESERVED = frozenset(
    {"switchboard", "connectors", "app", "storage", "websocket", "wire", "tests", "mcp", "rap"}
)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a connector name, or None when it can."""
    if not CONNECTOR_NAME.fullmatch(name):
        return (
            f"{name!r} is not a valid connector name: use 1-32 lowercase letters, digits "
            "and underscores, starting with a letter (e.g. weather)"
        )
    if name in RESERVED:
        return f"{name!r} is reserved; pick another connector name"
    return None
