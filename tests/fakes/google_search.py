"""A fake Google Programmable Search (Custom Search JSON API), real wire format.

``GET /customsearch/v1?cx=…&q=…&num=…&start=…`` with the key in ``X-Goog-Api-Key`` (or the
``key`` parameter, which Google also accepts) → ``{kind, url, queries: {request, nextPage},
searchInformation, items: [{kind, title, htmlTitle, link, displayLink, snippet, …}]}``;
``items`` is absent when nothing matches. Errors are
``{"error": {"code", "message", "errors": [{"message", "domain", "reason"}], "status"}}``:
a bad key is 400 ``keyInvalid``, ``num`` over 10 is 400 ``invalid``, an unknown ``cx`` is
400 ``badRequest``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.fakes.fake_service import Endpoint, FakeService

PAGES = [
    (
        f"asyncio guide part {n}",
        f"https://docs.example.org/asyncio/{n}",
        f"Part {n} of the guide: coroutines, tasks and the event loop.\nTimeouts too.",
    )
    for n in range(1, 16)
] + [
    (
        "Sourdough basics",
        "https://bread.example.com/sourdough",
        "Feed the starter, stretch and fold, proof overnight.",
    ),
]


def google_error(status: int, message: str, reason: str, state: str) -> JSONResponse:
    return JSONResponse(
        {
            "error": {
                "code": status,
                "message": message,
                "errors": [{"message": message, "domain": "global", "reason": reason}],
                "status": state,
            }
        },
        status,
    )


@dataclass
class FakeGoogleSearch(FakeService):
    api_key: str = "fake-google-search-key-0123456789"
    engine_id: str = "fake-engine-cx-123"

    def __post_init__(self) -> None:
        FakeService.__init__(self)

    async def search(self, request: Request) -> Response:
        query = request.query_params
        key = request.headers.get("x-goog-api-key") or query.get("key")
        if key != self.api_key:
            return (
                google_error(
                    400,
                    "API key not valid. Please pass a valid API key.",
                    "badRequest",
                    "INVALID_ARGUMENT",
                )
                if key
                else google_error(
                    403,
                    "Method doesn't allow unregistered callers.",
                    "forbidden",
                    "PERMISSION_DENIED",
                )
            )
        if query.get("cx") != self.engine_id:
            return google_error(
                400, "Request contains an invalid argument.", "badRequest", "INVALID_ARGUMENT"
            )
        num = int(query.get("num", "10"))
        if not 1 <= num <= 10:
            return google_error(
                400, f"Invalid value at 'num' (TYPE_INT32), {num}", "invalid", "INVALID_ARGUMENT"
            )
        start = int(query.get("start", "1"))
        words = query.get("q", "").lower().split()
        hits = [
            page
            for page in PAGES
            if any(word in (page[0] + " " + page[2]).lower() for word in words)
        ]
        chunk = hits[start - 1 : start - 1 + num]
        request_info = {
            "title": f"Google Custom Search - {query.get('q')}",
            "totalResults": str(len(hits)),
            "searchTerms": query.get("q"),
            "count": len(chunk),
            "startIndex": start,
            "inputEncoding": "utf8",
            "outputEncoding": "utf8",
            "safe": "off",
            "cx": self.engine_id,
        }
        body: dict[str, Any] = {
            "kind": "customsearch#search",
            "url": {
                "type": "application/json",
                "template": "https://www.googleapis.com/customsearch/v1?q={searchTerms}",
            },
            "queries": {"request": [request_info]},
            "context": {"title": "Switchboard test engine"},
            "searchInformation": {
                "searchTime": 0.21,
                "formattedSearchTime": "0.21",
                "totalResults": str(len(hits)),
                "formattedTotalResults": f"{len(hits):,}",
            },
        }
        if start - 1 + num < len(hits):
            body["queries"]["nextPage"] = [{**request_info, "startIndex": start + num}]
        if chunk:
            body["items"] = [
                {
                    "kind": "customsearch#result",
                    "title": title,
                    "htmlTitle": title.replace("asyncio", "<b>asyncio</b>"),
                    "link": link,
                    "displayLink": urlparse(link).netloc,
                    "snippet": snippet,
                    "htmlSnippet": snippet,
                    "formattedUrl": link,
                    "htmlFormattedUrl": link,
                }
                for title, link, snippet in chunk
            ]
        return JSONResponse(body)

    def routes(self) -> list[tuple[str, Endpoint, list[str]]]:
        return [("/customsearch/v1", self.search, ["GET"])]
