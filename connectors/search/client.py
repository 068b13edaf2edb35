"""The live web-search backends, chosen by ``SWITCHBOARD_SEARCH_PROVIDER``.

- ``google``: the Programmable Search (Custom Search) JSON API,
  ``GET /customsearch/v1?cx=…&q=…&num=…``; the API key travels in the ``X-Goog-Api-Key``
  header, so it never appears in a URL (URLs end up in logs).
- ``searxng``: a self-hosted SearxNG, ``GET /search?q=…&format=json&pageno=N``; the JSON
  format must be enabled in the instance's ``settings.yml`` (``search.formats``).

Both answer ``{title, url, snippet, display_link}`` results, best first.
"""

from __future__ import annotations

from urllib.parse import urlparse

import httpx

from connectors.context import ChatContext
from connectors.search.demo import Result, SearchBackend
from connectors.search.settings import SearchSettings
from connectors.service_http import ServiceHttp, one_line, read_json, shared_client

GOOGLE_PAGE = 10  # the API's maximum ``num``
SEARXNG_MAX_PAGES = 3


def _result(title: object, url: object, snippet: object, display: object = None) -> Result | None:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    return {
        "title": one_line(title or url, 300),
        "url": url,
        "snippet": one_line(snippet or "", 600),
        "display_link": str(display or urlparse(url).netloc),
    }


def _error_detail(response: httpx.Response) -> tuple[str | None, str]:
    """Google's ``{"error": {"message", "status", "errors": [{"reason"}]}}``."""
    try:
        body = response.json()
    except ValueError:
        return None, ""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None, ""
    reasons = [str(e.get("reason", "")) for e in error.get("errors") or [] if isinstance(e, dict)]
    return error.get("message"), " ".join([str(error.get("status", "")), *reasons]).lower()


class GoogleSearchClient:
    """``SearchBackend`` over Google Programmable Search."""

    service = "Google Search"

    def __init__(self, http: ServiceHttp, settings: SearchSettings) -> None:
        self._http = http
        self._url = f"{settings.google_search_base_url}/customsearch/v1"
        key = settings.google_search_api_key
        self._headers = {
            "X-Goog-Api-Key": key.get_secret_value() if key else "",
            "Accept": "application/json",
        }
        self._engine = settings.google_search_engine_id or ""

    async def search(self, query: str, num_results: int) -> list[Result]:
        params = {"cx": self._engine, "q": query, "num": max(1, min(num_results, GOOGLE_PAGE))}
        response = await self._http.send("GET", self._url, params=params, headers=self._headers)
        if not response.is_success:
            message, reason = _error_detail(response)
            advice = None
            refused = response.status_code in (401, 403) and "limit" not in reason
            if refused or "keyinvalid" in reason or "api key not valid" in (message or "").lower():
                advice = (
                    "the server's search key or engine id was refused; the "
                    "administrator must check SWITCHBOARD_GOOGLE_SEARCH_API_KEY and "
                    "SWITCHBOARD_GOOGLE_SEARCH_ENGINE_ID"
                )
            elif response.status_code != 429 and (
                "dailylimitexceeded" in reason or "quota" in (message or "").lower()
            ):
                advice = "the daily search quota is used up; try again tomorrow"
            raise self._http.status_error(response, message, advice)
        body = read_json(response, self.service)
        items = body.get("items") if isinstance(body, dict) else None
        results = [
            _result(
                item.get("title"), item.get("link"), item.get("snippet"), item.get("displayLink")
            )
            for item in items or []
            if isinstance(item, dict)
        ]
        return [result for result in results if result][:num_results]


class SearxngClient:
    """``SearchBackend`` over a SearxNG instance's JSON API, reading pages as needed."""

    service = "SearxNG"

    def __init__(self, http: ServiceHttp, settings: SearchSettings) -> None:
        self._http = http
        self._url = f"{settings.searxng_base_url}/search"

    async def search(self, query: str, num_results: int) -> list[Result]:
        found: list[Result] = []
        seen: set[str] = set()
        for page in range(1, SEARXNG_MAX_PAGES + 1):
            response = await self._http.send(
                "GET",
                self._url,
                params={"q": query, "format": "json", "pageno": page},
                headers={"Accept": "application/json"},
            )
            if response.status_code == 403:
                raise self._http.status_error(
                    response,
                    None,
                    "the SearxNG instance does not serve JSON; enable "
                    '"json" under search.formats in its settings.yml',
                )
            if not response.is_success:
                raise self._http.status_error(response)
            body = read_json(response, self.service)
            new = 0
            for item in (body.get("results") if isinstance(body, dict) else None) or []:
                if not isinstance(item, dict):
                    continue
                result = _result(item.get("title"), item.get("url"), item.get("content"))
                if result and result["url"] not in seen:
                    seen.add(result["url"])
                    found.append(result)
                    new += 1
            if len(found) >= num_results or new == 0:
                break
        return found[:num_results]


def live_backend(context: ChatContext) -> SearchBackend:
    settings = context.settings
    own = SearchSettings.read(settings)
    client = shared_client(context.http, "web search")
    if own.search_provider == "searxng":
        return SearxngClient(ServiceHttp.for_settings(client, SearxngClient.service, settings), own)
    key = own.google_search_api_key
    http = ServiceHttp.for_settings(
        client, GoogleSearchClient.service, settings, (key.get_secret_value() if key else None,)
    )
    return GoogleSearchClient(http, own)
