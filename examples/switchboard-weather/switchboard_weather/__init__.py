"""The Weather connector for Switchboard: daily forecasts from Open-Meteo."""

from __future__ import annotations

from connectors.api import Connector

from switchboard_weather.agent import build_agent
from switchboard_weather.tools import AGENT_NAME, CONNECTOR, RESPONSE_TYPES, TOOL_DESCRIPTIONS

connector = Connector(
    name=CONNECTOR,
    agent_name=AGENT_NAME,
    display_name="Weather",
    build_agent=build_agent,
    tool_descriptions=TOOL_DESCRIPTIONS,
    response_types=RESPONSE_TYPES,
)

__all__ = ["connector"]
