"""Live web search against the fake Google Programmable Search and the fake SearxNG."""

from __future__ import annotations

import json

import httpx

from tests.fakes.fake_service import Answer
from tests.fakes.google_search import FakeGoogleSearch
from tests.fakes.searxng import FakeSearxng
from tests.support.connectors import google_search_settings, invoke, make_context, searxng_settings


async def test_google_results_become_citations(
    google_search: FakeGoogleSearch, http: httpx.AsyncClient
) -> None:
    context = make_context(google_search_settings(google_search), None, http)
    output = await invoke("search", "search_google", context, query="asyncio guide", num_results=3)
    assert output["response_type"] == "google_search_results"
    (request,) = google_search.requests
    assert request.headers["x-goog-api-key"] == google_search.api_key
    assert "key" not in request.query  # the key never travels in the URL
    assert (request.param("cx"), request.param("q"), request.param("num")) == (
        google_search.engine_id,
        "asyncio guide",
        "3",
    )
    results = output["response"]
    assert [r["url"] for r in results] == [
        f"https://docs.example.org/asyncio/{n}" for n in (1, 2, 3)
    ]
    assert results[0]["snippet"] == (
        "Part 1 of the guide: coroutines, tasks and the event loop. Timeouts too."
    )
    assert results[0]["display_link"] == "docs.example.org"
    assert output["content_chunks"][1] == {
        "id": "2",
        "title": results[1]["title"],
        "url": results[1]["url"],
        "snippet": results[1]["snippet"],
    }
    nothing = await invoke("search", "search_google", context, query="zzzz", num_results=3)
    assert nothing["response"] == [] and nothing["response_type"] == "google_search_results"


async def test_google_errors_are_explained(
    google_search: FakeGoogleSearch, http: httpx.AsyncClient
) -> None:
    wrong = make_context(
        google_search_settings(google_search, google_search_api_key="bad-key-987654321"), None, http
    )
    refused = await invoke("search", "search_google", wrong, query="asyncio", num_results=3)
    assert refused["error_message"] == (
        "Error: Google Search rejected the request (HTTP 400): API key not valid. Please pass "
        "a valid API key.; the server's search key or engine id was refused; the "
        "administrator must check SWITCHBOARD_GOOGLE_SEARCH_API_KEY and "
        "SWITCHBOARD_GOOGLE_SEARCH_ENGINE_ID"
    )
    assert "bad-key-987654321" not in json.dumps(refused)

    google_search.script(
        "/customsearch/v1",
        Answer(
            429,
            {
                "error": {
                    "code": 429,
                    "message": "Quota exceeded for quota metric 'Queries per day'",
                    "errors": [{"reason": "rateLimitExceeded"}],
                    "status": "RESOURCE_EXHAUSTED",
                }
            },
            {"Retry-After": "3600"},
        ),
    )
    context = make_context(google_search_settings(google_search), None, http)
    limited = await invoke("search", "search_google", context, query="asyncio", num_results=3)
    assert limited["error_message"].startswith("Error: Google Search is rate limiting requests")
    assert limited["error_message"].endswith("try again in 3600 seconds")


async def test_searxng_reads_pages_until_enough_without_duplicates(
    searxng: FakeSearxng, http: httpx.AsyncClient
) -> None:
    context = make_context(searxng_settings(searxng), None, http)
    output = await invoke(
        "search", "search_google", context, query="sourdough starter", num_results=8
    )
    urls = [r["url"] for r in output["response"]]
    assert urls == [f"https://bread.example.com/tips/{n}" for n in range(1, 9)]
    assert [r.param("pageno") for r in searxng.requests] == ["1", "2"]
    assert all(r.param("format") == "json" for r in searxng.requests)
    assert output["response"][0]["snippet"] == "Tip 1: a lively starter and a long, cool proof."
    assert [c["id"] for c in output["content_chunks"]] == [str(n) for n in range(1, 9)]


async def test_searxng_without_json_says_how_to_enable_it(
    searxng: FakeSearxng, http: httpx.AsyncClient
) -> None:
    searxng.json_enabled = False
    context = make_context(searxng_settings(searxng), None, http)
    output = await invoke("search", "search_google", context, query="sourdough", num_results=3)
    assert output["error_message"] == (
        "Error: SearxNG refused the request (HTTP 403); the SearxNG instance does not serve "
        'JSON; enable "json" under search.formats in its settings.yml'
    )


async def test_an_html_answer_is_not_taken_for_results(
    searxng: FakeSearxng, http: httpx.AsyncClient
) -> None:
    searxng.script("/search", Answer(200, "<html>captcha</html>"))
    context = make_context(searxng_settings(searxng), None, http)
    output = await invoke("search", "search_google", context, query="sourdough", num_results=3)
    assert output["error_message"] == (
        "Error: SearxNG sent a reply that is not JSON (HTTP 200); try again later"
    )
