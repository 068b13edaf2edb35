"""Yelp connector."""

from __future__ import annotations

from connectors.registry import Connector
from connectors.yelp.agent import build_agent
from connectors.yelp.offline import HINTS as OFFLINE_HINTS
from connectors.yelp.settings import YelpSettings
from connectors.yelp.tools import AGENT_NAME, CONNECTOR, RESPONSE_TYPES, TOOL_DESCRIPTIONS

connector = Connector(
    name=CONNECTOR,
    agent_name=AGENT_NAME,
    display_name="Yelp",
    build_agent=build_agent,
    tool_descriptions=TOOL_DESCRIPTIONS,
    response_types=RESPONSE_TYPES,
    offline=OFFLINE_HINTS,
    options=YelpSettings,
    order=30,
    icon="store",
)

__all__ = ["connector"]
