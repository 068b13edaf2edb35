"""What the offline demo model knows about web search (``connectors.offline_hints``). Pure."""

from __future__ import annotations

import re

from connectors.offline_hints import Clause, OfflineHints, PastCall, Step, ToolHints

# How-to questions ("how do I make cold brew coffee?") are for the web even when they name
# food; "recipes" is left out, so a recipes connector keeps its own word.
KEYWORDS = re.compile(
    r"\b(search the web|web|google|internet|online|look up|wikipedia|news|how to|"
    r"how (?:do|can|should) (?:i|you|we) (?:make|cook|bake|brew|build|fix|install|learn|grow)|"
    r"what time is it|history of|meaning of|definition of)\b",
    re.I,
)
_PREFIX = re.compile(
    r"^(?:please\s+)?(?:(?:can you|could you)\s+)?(?:search(?: the web| online| google)?"
    r"(?: for)?|google|look up|find(?: out)?(?: about)?|tell me about|what(?:'s| is| are)|"
    r"who(?:'s| is| are))\s+",
    re.I,
)


def search_query(clause: str) -> str:
    query = _PREFIX.sub("", clause.strip()).strip(" ?.!")
    return query or clause.strip(" ?.!")


def steps(clause: Clause) -> list[Step]:
    query = search_query(clause.text)
    return [Step("search_google", lambda turn: {"query": query, "num_results": 5})]


def summary(call: PastCall) -> str | None:
    if call.name != "search_google" or call.not_run:
        return None
    query = str(call.arguments.get("query", ""))
    sources = re.findall(r"^\[(\d+)\] (.+?)(?: — \S+)?\n\s+(.+)$", call.output or "", re.M)
    if not sources:
        return f"I searched the web for “{query}” but found nothing useful."
    number, _title, snippet = sources[0]
    first = re.split(r"(?<=[.!?])\s", snippet.strip())[0].rstrip(".")
    more = [f"{title} [{n}]" for n, title, _ in sources[1:3]]
    text = f"Here's what I found on {query}: {first} [{number}]."
    if more:
        text += f" For more, see {' and '.join(more)}."
    return text


HINTS = OfflineHints(
    examples=(
        "Search the web for python asyncio",
        "Who wrote Moby Dick?",
        "Look up the latest news on the Mars rover",
    ),
    tools={"search_google": ToolHints(examples=("Search the web for python asyncio",))},
    keywords=KEYWORDS,
    catch_all=True,
    capability="search the web",
    planner=steps,
    summary=summary,
    follow_up="Want me to dig deeper into any of these sources?",
    result_title=lambda call: f"Search results for {call.arguments.get('query', 'your question')}",
    suggestions={
        "google_search_results": (
            "Tell me more about the first result",
            "Email these links to bob@example.com",
        ),
    },
)
