"""Canned web search results for a handful of topics, and a deterministic generic fallback."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote_plus, urlparse

# (keywords, [(title, url, snippet)])
_Result = tuple[str, str, str]
TOPICS: tuple[tuple[frozenset[str], tuple[_Result, ...]], ...] = (
    (
        frozenset({"asyncio", "coroutine", "coroutines", "await", "taskgroup"}),
        (
            (
                "asyncio — Asynchronous I/O — Python documentation",
                "https://docs.python.org/3/library/asyncio.html",
                "asyncio is a library to write concurrent code using the async/await syntax. It is "
                "used as a foundation for multiple Python asynchronous frameworks.",
            ),
            (
                "Coroutines and Tasks — Python documentation",
                "https://docs.python.org/3/library/asyncio-task.html",
                "Coroutines declared with async/await are the preferred way of writing asyncio "
                "applications. TaskGroup offers structured concurrency; asyncio.timeout() bounds work.",
            ),
            (
                "Async IO in Python: A Complete Walkthrough",
                "https://realpython.com/async-io-python/",
                "A hands-on walkthrough of the async/await syntax, the event loop, and when "
                "concurrency helps I/O-bound programs.",
            ),
            (
                "Developing with asyncio — Python documentation",
                "https://docs.python.org/3/library/asyncio-dev.html",
                "Debug mode, logging, and the most common pitfalls, such as blocking calls that "
                "stall the event loop.",
            ),
            (
                "PEP 492 – Coroutines with async and await syntax",
                "https://peps.python.org/pep-0492/",
                "The proposal that introduced native coroutines and the async/await keywords in "
                "Python 3.5.",
            ),
        ),
    ),
    (
        frozenset({"agents", "agent", "openai"}),
        (
            (
                "OpenAI Agents SDK",
                "https://openai.github.io/openai-agents-python/",
                "A lightweight framework for multi-agent workflows: agents with instructions and "
                "tools, handoffs between agents, guardrails and tracing.",
            ),
            (
                "Handoffs — OpenAI Agents SDK",
                "https://openai.github.io/openai-agents-python/handoffs/",
                "Handoffs let an agent delegate to another agent; they are exposed to the model as "
                "tools named transfer_to_<agent_name>.",
            ),
            (
                "Streaming — OpenAI Agents SDK",
                "https://openai.github.io/openai-agents-python/streaming/",
                "Runner.run_streamed yields raw response events, run item events and agent updated "
                "events as the run progresses.",
            ),
            (
                "openai/openai-agents-python on GitHub",
                "https://github.com/openai/openai-agents-python",
                "Source code, examples and issue tracker for the Python Agents SDK.",
            ),
        ),
    ),
    (
        frozenset({"websocket", "websockets", "rfc6455"}),
        (
            (
                "The WebSocket API — MDN Web Docs",
                "https://developer.mozilla.org/en-US/docs/Web/API/WebSockets_API",
                "The WebSocket API makes it possible to open a two-way interactive session between "
                "the browser and a server.",
            ),
            (
                "RFC 6455 — The WebSocket Protocol",
                "https://datatracker.ietf.org/doc/html/rfc6455",
                "The protocol's opening handshake, framing, close codes and security model.",
            ),
            (
                "websockets — Python library documentation",
                "https://websockets.readthedocs.io/",
                "A library for building WebSocket servers and clients in Python with asyncio.",
            ),
        ),
    ),
    (
        frozenset({"budget", "budgeting", "saving", "savings", "50/30/20"}),
        (
            (
                "The 50/30/20 budget rule explained",
                "https://www.consumerfinance.example.org/budgeting/50-30-20",
                "Spend 50% of take-home pay on needs, 30% on wants and put 20% towards savings and "
                "debt repayment.",
            ),
            (
                "How to build an emergency fund",
                "https://www.consumerfinance.example.org/savings/emergency-fund",
                "Aim for three to six months of essential expenses in an easy-to-reach savings "
                "account.",
            ),
            (
                "Tracking your spending by category",
                "https://www.moneyguide.example.com/track-spending",
                "Reviewing transactions by category each month is the simplest way to find "
                "spending you can cut.",
            ),
        ),
    ),
    (
        frozenset({"sourdough", "bread", "starter"}),
        (
            (
                "Beginner's sourdough bread",
                "https://www.kingarthurbaking.example.com/sourdough",
                "A step-by-step recipe: feed your starter, mix, stretch and fold, shape, proof "
                "overnight and bake in a Dutch oven.",
            ),
            (
                "How to make a sourdough starter",
                "https://www.seriouseats.example.com/starter",
                "Flour, water and about a week of daily feedings are all it takes to grow a lively "
                "starter.",
            ),
            (
                "Troubleshooting dense sourdough",
                "https://www.theperfectloaf.example.com/dense",
                "Under-proofing and a sluggish starter are the usual culprits behind a tight crumb.",
            ),
        ),
    ),
    (
        frozenset({"boston", "freedom trail", "fenway"}),
        (
            (
                "Things to do in Boston — official guide",
                "https://www.meetboston.example.com/",
                "Walk the Freedom Trail, catch a game at Fenway Park, and explore the North End's "
                "Italian bakeries.",
            ),
            (
                "The Freedom Trail",
                "https://www.thefreedomtrail.example.org/",
                "A 2.5-mile path through downtown Boston that passes 16 historically significant "
                "sites.",
            ),
            (
                "Boston — Wikipedia",
                "https://en.wikipedia.org/wiki/Boston",
                "Boston is the capital and most populous city of Massachusetts, and one of the "
                "oldest cities in the United States.",
            ),
        ),
    ),
)

_STOP = frozenset(
    {
        "the",
        "a",
        "an",
        "of",
        "for",
        "to",
        "in",
        "on",
        "and",
        "is",
        "what",
        "how",
        "about",
        "me",
        "my",
        "web",
        "search",
        "google",
        "find",
        "look",
        "up",
    }
)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9/]+", text.lower())


def search(query: str, num_results: int) -> list[dict[str, Any]]:
    """Up to ``num_results`` results ``{title, url, snippet, display_link}`` for ``query``."""
    words = set(_words(query))
    lowered = query.lower()
    best: tuple[int, tuple[_Result, ...]] = (0, ())
    for keywords, results in TOPICS:
        phrases = sum(1 for k in keywords if (" " in k or "/" in k) and k in lowered)
        score = phrases + len(words & keywords)
        if score > best[0]:
            best = (score, results)
    results = best[1] or _generic(query)
    return [
        {"title": title, "url": url, "snippet": snippet, "display_link": urlparse(url).netloc}
        for title, url, snippet in results[:num_results]
    ]


def _generic(query: str) -> tuple[_Result, ...]:
    # Deterministic and honest: reference-style pages named after the query.
    topic = " ".join(word for word in _words(query) if word not in _STOP) or query.strip()
    title = topic.title()
    slug = quote_plus(topic)
    return (
        (
            f"{title} — Wikipedia",
            f"https://en.wikipedia.org/wiki/{title.replace(' ', '_')}",
            f"An encyclopedia overview of {topic}: background, history and related topics.",
        ),
        (
            f"{title}: a beginner's guide",
            f"https://www.howto.example.com/guides/{slug}",
            f"Everything you need to know to get started with {topic}, explained step by step.",
        ),
        (
            f"Latest news about {title}",
            f"https://news.example.com/search?q={slug}",
            f"Recent articles and analysis mentioning {topic}.",
        ),
        (
            f"{title} — questions and answers",
            f"https://stackexchange.com/search?q={slug}",
            f"Community questions and answers about {topic}.",
        ),
        (
            f"{title} discussion",
            f"https://www.reddit.com/search/?q={slug}",
            f"What people are saying about {topic}.",
        ),
    )
