"""Web search connector."""

from __future__ import annotations

from connectors.registry import Connector
from connectors.search.agent import build_agent
from connectors.search.offline import HINTS as OFFLINE_HINTS
from connectors.search.settings import SearchSettings
from connectors.search.tools import AGENT_NAME, CONNECTOR, RESPONSE_TYPES, TOOL_DESCRIPTIONS

connector = Connector(
    name=CONNECTOR,
    agent_name=AGENT_NAME,
    display_name="Web search",
    build_agent=build_agent,
    tool_descriptions=TOOL_DESCRIPTIONS,
    response_types=RESPONSE_TYPES,
    offline=OFFLINE_HINTS,
    options=SearchSettings,
    order=40,
    icon="search",
)

__all__ = ["connector"]
