"""What the model reads for the web search connector's results (connectors.rendering).

The results are numbered ``[n]`` so the model can cite them; their text is written by the
pages' authors, fenced as data. Pure.
"""

from __future__ import annotations

from typing import Any

from connectors.rendering import Part, Rendering, citations, items, register_type
from connectors.text import one_line

SOURCE = "web results"


def _cite_heading(data: dict[str, Any]) -> tuple[str, str]:
    # The content_chunks are the results themselves: headed by the search, not "Sources".
    return one_line(data.get("friendly_name")) or "Search results", SOURCE


def render_search(data: dict[str, Any]) -> Rendering:
    chunks = data.get("content_chunks")
    if isinstance(chunks, list) and chunks:
        return []  # the numbered content_chunks are the body (added by to_plain_text)
    results = items(data)
    if not results:
        return "No search results."
    listed = [
        {
            "title": item.get("title"),
            "url": item.get("url") or item.get("link"),
            "snippet": item.get("snippet") or item.get("description"),
        }
        if isinstance(item, dict)
        else item
        for item in results
    ]
    name = one_line(data.get("friendly_name")) or "Search results"
    return [Part(f"{name} (cite as [n]):"), Part("\n".join(citations(listed)), SOURCE)]


register_type("google_search_results", render=render_search, source=SOURCE, cite=_cite_heading)
