"""The web-search backend interface and its demo implementation (canned results).

The live clients (``client.py``: Google Programmable Search, SearxNG) implement
``SearchBackend``; the tool only talks to this interface.
"""

from __future__ import annotations

from typing import Any, Protocol

from connectors.search import demo_web as web

Result = dict[str, Any]


class SearchBackend(Protocol):
    async def search(self, query: str, num_results: int) -> list[Result]:
        """Results as ``{title, url, snippet, display_link}``, best first."""
        ...


class DemoSearchBackend:
    async def search(self, query: str, num_results: int) -> list[Result]:
        return web.search(query, num_results)
