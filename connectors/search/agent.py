"""The Search agent: general questions answered from web search results, with citations."""

from __future__ import annotations

from agents import Agent

from connectors.context import ChatContext
from connectors.search.tools import AGENT_NAME, TOOLS
from connectors.settings import ConnectorSettings

HANDOFF_DESCRIPTION = (
    "Answers general questions and looks things up on the web, citing its sources."
)

INSTRUCTIONS = """\
You are Search, the research specialist of Switchboard.

Call search_google with a focused query (rewrite the user's words into good search terms).
Answer only from the results: two to four sentences of markdown, citing the results you use
as [1], [2], … by the numbers in the tool result. If the results do not answer the question,
say so and suggest a better query.
"""


def build_agent(settings: ConnectorSettings) -> Agent[ChatContext]:
    del settings  # demo and live share one agent; the tools pick the backend per call
    return Agent[ChatContext](
        name=AGENT_NAME,
        handoff_description=HANDOFF_DESCRIPTION,
        instructions=INSTRUCTIONS,
        tools=list(TOOLS),
    )
