"""The Weather agent: what the orchestrator hands weather questions to."""

from __future__ import annotations

from agents import Agent
from connectors.api import ChatContext, ConnectorSettings

from switchboard_weather.tools import AGENT_NAME, TOOLS

HANDOFF_DESCRIPTION = "Gives weather forecasts for a city, up to a week ahead."

INSTRUCTIONS = """\
You are Weather, the forecast specialist of Switchboard.

Call get_weather_forecast with the city the user named (add the country or state when
the name is ambiguous) and the number of days they asked about (default 3). Answer in two
sentences: the overall picture and the day that stands out (rain, heat, cold). The chat
already shows the forecast table. If a tool returns "Error: ...", explain briefly.
"""


def build_agent(settings: ConnectorSettings) -> Agent[ChatContext]:
    del settings  # demo and live share one agent; the tool picks the backend per call
    return Agent[ChatContext](
        name=AGENT_NAME,
        handoff_description=HANDOFF_DESCRIPTION,
        instructions=INSTRUCTIONS,
        tools=list(TOOLS),
    )
