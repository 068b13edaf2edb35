"""Yelp tools: the user's location, business search and reviews. Each returns a ToolResponse."""

from __future__ import annotations

from datetime import UTC, datetime

from agents import RunContextWrapper

from connectors.context import ChatContext
from connectors.responses import ToolResponse
from connectors.tooling import ToolError, connector_tool
from connectors.yelp.client import live_backend
from connectors.yelp.demo import DemoYelpBackend, SortBy, YelpBackend

AGENT_NAME = "Yelp"
CONNECTOR = "yelp"
TIMEOUT = 15.0


def backend(ctx: RunContextWrapper[ChatContext]) -> YelpBackend:
    """Yelp Fusion with the server's key (live) or the demo cities. No per-user account."""
    if ctx.context.settings.connector_mode(CONNECTOR) == "live":
        return live_backend(ctx.context)
    return DemoYelpBackend(datetime.now(UTC).date())


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def resolve_user_location(
    ctx: RunContextWrapper[ChatContext], hint: str | None = None
) -> ToolResponse:
    """Find where the user is, for "near me" requests: city, state and coordinates.

    Args:
        hint: A place the user mentioned, if any (e.g. "downtown Austin").
    """
    location = await backend(ctx).user_location(hint)
    # Hidden from the chat: it only feeds the next search.
    return ToolResponse(
        "user_location", AGENT_NAME, "Finding your location", location, display_response=False
    )


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def search_businesses_at_yelp(
    ctx: RunContextWrapper[ChatContext],
    term: str,
    location: str | None = None,
    latitude: float | None = None,
    longitude: float | None = None,
    price: str | None = None,
    open_now: bool = False,
    sort_by: SortBy = "best_match",
    limit: int = 5,
) -> ToolResponse:
    """Search Yelp for businesses (restaurants, cafés, shops) in a place.

    Args:
        term: What to look for, e.g. "sushi", "coffee", "pizza".
        location: A city or address, e.g. "Boston, MA". Omit when giving coordinates.
        latitude: Latitude, e.g. from resolve_user_location.
        longitude: Longitude, e.g. from resolve_user_location.
        price: Price levels, e.g. "1,2" for $ and $$.
        open_now: Only businesses open right now.
        sort_by: best_match, rating, review_count or distance.
        limit: How many results (1-20).
    """
    if (latitude is None) != (longitude is None):
        raise ToolError("give both latitude and longitude, or a location instead")
    found, where = await backend(ctx).search(
        term, location, latitude, longitude, price, open_now, sort_by, limit
    )
    return ToolResponse(
        "yelp_search_results",
        AGENT_NAME,
        f"Searching Yelp for {term.strip() or 'businesses'} in {where}",
        found,
    )


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def get_business_reviews_at_yelp(
    ctx: RunContextWrapper[ChatContext], business_id: str
) -> ToolResponse:
    """Get up to three recent reviews of one business.

    Args:
        business_id: The business id (or alias) from search results.
    """
    business, reviews = await backend(ctx).reviews(business_id)
    return ToolResponse(
        "yelp_reviews", AGENT_NAME, f"Getting reviews of {business['name']}", reviews[:3]
    )


TOOLS = [resolve_user_location, search_businesses_at_yelp, get_business_reviews_at_yelp]
TOOL_DESCRIPTIONS = {
    "resolve_user_location": "Finding your location",
    "search_businesses_at_yelp": "Searching Yelp",
    "get_business_reviews_at_yelp": "Reading Yelp reviews",
}
RESPONSE_TYPES = ("user_location", "yelp_search_results", "yelp_reviews", "error")
