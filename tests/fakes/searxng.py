"""A fake SearxNG instance, real wire format of its JSON API.

``GET /search?q=…&format=json&pageno=N`` → ``{query, number_of_results, results: [{url,
title, content, engine, engines, positions, score, category, parsed_url, template, …}],
answers, corrections, infoboxes, suggestions, unresponsive_engines}``, ``per_page`` results
per page (the same URL may come back on a later page, as with real engines). A format the
instance does not enable (``json_enabled=False``, or any format but json/html) is a 403,
as SearxNG answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.fakes.fake_service import Endpoint, FakeService

INDEX = [
    (
        f"Sourdough tip {n}",
        f"https://bread.example.com/tips/{n}",
        f"Tip {n}: a lively starter and a long, cool proof.",
    )
    for n in range(1, 13)
]


@dataclass
class FakeSearxng(FakeService):
    per_page: int = 5
    json_enabled: bool = True

    def __post_init__(self) -> None:
        FakeService.__init__(self)

    async def search(self, request: Request) -> Response:
        query = request.query_params
        if query.get("format") != "json" or not self.json_enabled:
            return Response("<html><body>403 Forbidden</body></html>", 403, media_type="text/html")
        page = int(query.get("pageno", "1"))
        words = query.get("q", "").lower().split()
        hits = [
            entry
            for entry in INDEX
            if any(word in (entry[0] + " " + entry[2]).lower() for word in words)
        ]
        start = (page - 1) * self.per_page
        chunk = hits[start : start + self.per_page]
        if page > 1 and chunk:
            chunk = [hits[start - 1], *chunk]  # an engine repeating the previous page's last
        results = [
            {
                "url": url,
                "title": title,
                "content": content,
                "engine": "duckduckgo",
                "parsed_url": list(urlparse(url)),
                "template": "default.html",
                "engines": ["duckduckgo", "brave"],
                "positions": [n + 1],
                "score": 1.5,
                "category": "general",
                "publishedDate": None,
                "thumbnail": "",
                "priority": "",
            }
            for n, (title, url, content) in enumerate(chunk)
        ]
        return JSONResponse(
            {
                "query": query.get("q"),
                "number_of_results": 0,
                "results": results,
                "answers": [],
                "corrections": [],
                "infoboxes": [],
                "suggestions": [],
                "unresponsive_engines": [],
            }
        )

    def routes(self) -> list[tuple[str, Endpoint, list[str]]]:
        return [("/search", self.search, ["GET"])]
