"""The web search tool. Results carry ``content_chunks`` so answers can cite [n]."""

from __future__ import annotations

from agents import RunContextWrapper

from connectors.context import ChatContext
from connectors.responses import ToolResponse
from connectors.search.client import live_backend
from connectors.search.demo import DemoSearchBackend, SearchBackend
from connectors.tooling import ToolError, connector_tool

AGENT_NAME = "Search"
CONNECTOR = "search"
TIMEOUT = 15.0
MAX_RESULTS = 10


def backend(ctx: RunContextWrapper[ChatContext]) -> SearchBackend:
    """Google Programmable Search or SearxNG (live, server keys) or canned results (demo)."""
    if ctx.context.settings.connector_mode(CONNECTOR) == "live":
        return live_backend(ctx.context)
    return DemoSearchBackend()


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def search_google(
    ctx: RunContextWrapper[ChatContext], query: str, num_results: int = 5
) -> ToolResponse:
    """Search the web. Cite results in the answer as [1], [2], … in the order returned.

    Args:
        query: The search query.
        num_results: How many results (1-10).
    """
    if not query.strip():
        raise ToolError("the search query is empty")
    results = await backend(ctx).search(query.strip(), max(1, min(num_results, MAX_RESULTS)))
    chunks = [
        {
            "id": str(number),
            "title": result["title"],
            "url": result["url"],
            "snippet": result["snippet"],
        }
        for number, result in enumerate(results, 1)
    ]
    return ToolResponse(
        "google_search_results",
        AGENT_NAME,
        f"Searching the web for {query}",
        results,
        content_chunks=chunks,
    )


TOOLS = [search_google]
TOOL_DESCRIPTIONS = {"search_google": "Searching the web"}
RESPONSE_TYPES = ("google_search_results", "error")
