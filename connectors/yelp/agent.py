"""The Yelp agent: restaurants, cafés and other local businesses, with reviews."""

from __future__ import annotations

from agents import Agent

from connectors.context import ChatContext
from connectors.settings import ConnectorSettings
from connectors.yelp.tools import AGENT_NAME, TOOLS

HANDOFF_DESCRIPTION = (
    "Finds restaurants, cafés and other local businesses on Yelp, near "
    "the user or in a city, and reads their reviews."
)

INSTRUCTIONS = """\
You are Yelp, the local-discovery specialist of Switchboard.

Tools:
- resolve_user_location: where the user is. Call it first for "near me", "nearby" or
  "around here", then search with its latitude and longitude. Its result is not shown in
  the chat, so mention the place you searched.
- search_businesses_at_yelp: search by term and place. Write cities as "City, ST"
  (e.g. "Boston, MA"). Use price ("1,2"), open_now and sort_by when the user asks for cheap,
  open or top-rated places.
- get_business_reviews_at_yelp: up to three reviews of one business, by the id from search
  results.

If a tool returns "Error: …" (for example a city outside the covered area), explain briefly
and suggest an alternative.

Answer in two or three sentences of markdown: the chat already shows the businesses as
cards, so name the top two or three picks and why (rating, price, distance).
"""


def build_agent(settings: ConnectorSettings) -> Agent[ChatContext]:
    del settings  # demo and live share one agent; the tools pick the backend per call
    return Agent[ChatContext](
        name=AGENT_NAME,
        handoff_description=HANDOFF_DESCRIPTION,
        instructions=INSTRUCTIONS,
        tools=list(TOOLS),
    )
