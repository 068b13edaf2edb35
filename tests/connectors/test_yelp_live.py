"""Live Yelp against the fake Yelp Fusion: search parameters, "near me", reviews, errors."""

from __future__ import annotations

import json

import httpx

from tests.fakes.fake_service import Answer
from tests.fakes.yelp_api import FakeYelp
from tests.support.connectors import invoke, make_context, yelp_settings

SEARCH = "/v3/businesses/search"


async def test_search_sends_fusion_parameters_with_the_server_key(
    yelp_server: FakeYelp, http: httpx.AsyncClient
) -> None:
    context = make_context(yelp_settings(yelp_server), None, http)
    output = await invoke(
        "yelp",
        "search_businesses_at_yelp",
        context,
        term="sushi",
        location="Boston, MA",
        latitude=None,
        longitude=None,
        price="$$$",
        open_now=True,
        sort_by="rating",
        limit=5,
    )
    assert output["response_type"] == "yelp_search_results"
    assert output["friendly_name"] == "Searching Yelp for sushi in Boston, MA"
    (request,) = yelp_server.calls(SEARCH)
    assert request.headers["authorization"] == f"Bearer {yelp_server.api_key}"
    assert {key: request.param(key) for key in request.query} == {
        "term": "sushi",
        "location": "Boston, MA",
        "sort_by": "rating",
        "limit": "5",
        "price": "3",
        "open_now": "true",
    }
    (business,) = output["response"]
    assert business["name"] == "Oishii Sushi" and business["price"] == "$$$"
    assert {
        "id",
        "alias",
        "name",
        "image_url",
        "url",
        "review_count",
        "rating",
        "location",
        "coordinates",
        "categories",
        "phone",
        "distance",
    } <= set(business)
    assert business["distance"] == round(business["distance"], 1)


async def test_near_me_resolves_the_saved_location_then_searches_by_coordinates(
    yelp_server: FakeYelp, http: httpx.AsyncClient
) -> None:
    context = make_context(
        yelp_settings(yelp_server, yelp_default_location="Austin, TX"), None, http
    )
    located = await invoke("yelp", "resolve_user_location", context, hint=None)
    assert located["display_response"] is False  # hidden: it only feeds the search
    spot = located["response"]
    assert spot["display"] == "Austin, TX" and spot["source"] == "saved location"
    assert (spot["latitude"], spot["longitude"]) == (30.2672, -97.7431)
    found = await invoke(
        "yelp",
        "search_businesses_at_yelp",
        context,
        term="bbq",
        location=None,
        latitude=spot["latitude"],
        longitude=spot["longitude"],
        price=None,
        open_now=False,
        sort_by="distance",
        limit=3,
    )
    assert [b["name"] for b in found["response"]] == ["Franklin Barbecue"]
    assert found["friendly_name"] == "Searching Yelp for bbq in Austin, TX"
    last = yelp_server.calls(SEARCH)[-1]
    assert last.param("latitude") == "30.2672" and last.param("location") is None

    hinted = await invoke("yelp", "resolve_user_location", context, hint="Boston, MA")
    assert hinted["response"]["source"] == "hint" and hinted["response"]["city"] == "Boston"


async def test_no_known_location_asks_the_user(
    yelp_server: FakeYelp, http: httpx.AsyncClient
) -> None:
    context = make_context(yelp_settings(yelp_server), None, http)
    located = await invoke("yelp", "resolve_user_location", context, hint=None)
    assert located["error_message"] == (
        "Error: the user's location is not known (no saved "
        "location is configured); ask the user which city or "
        "neighbourhood to search"
    )
    nowhere = await invoke(
        "yelp",
        "search_businesses_at_yelp",
        context,
        term="pizza",
        location="Atlantis",
        latitude=None,
        longitude=None,
        price=None,
        open_now=False,
        sort_by="best_match",
        limit=5,
    )
    assert nowhere["error_message"] == (
        "Error: Yelp could not find the location 'Atlantis'; "
        'give a city and state like "Boston, MA" or an address'
    )
    assert yelp_server.requests and all(r.path == SEARCH for r in yelp_server.requests)


async def test_reviews_fetch_the_business_and_up_to_three_reviews(
    yelp_server: FakeYelp, http: httpx.AsyncClient
) -> None:
    context = make_context(yelp_settings(yelp_server), None, http)
    business = yelp_server.businesses[4]
    output = await invoke(
        "yelp", "get_business_reviews_at_yelp", context, business_id=business["alias"]
    )
    assert output["response_type"] == "yelp_reviews"
    assert output["friendly_name"] == "Getting reviews of Uchi"
    assert [r["rating"] for r in output["response"]] == [5, 4, 3]
    assert {"id", "text", "rating", "time_created", "user"} <= set(output["response"][0])
    (reviews,) = yelp_server.calls(f"/v3/businesses/{business['alias']}/reviews")
    assert reviews.param("limit") == "3"
    unknown = await invoke(
        "yelp", "get_business_reviews_at_yelp", context, business_id="no-such-place"
    )
    assert unknown["error_message"] == (
        "Error: Yelp has no business with that id; search Yelp first and use an id from the results"
    )


async def test_a_refused_key_is_explained_without_showing_it(
    yelp_server: FakeYelp, http: httpx.AsyncClient
) -> None:
    context = make_context(
        yelp_settings(yelp_server, yelp_api_key="wrong-key-abcdef123"), None, http
    )
    output = await invoke(
        "yelp",
        "search_businesses_at_yelp",
        context,
        term="sushi",
        location="Boston, MA",
        latitude=None,
        longitude=None,
        price=None,
        open_now=False,
        sort_by="best_match",
        limit=5,
    )
    assert output["error_message"] == (
        "Error: Yelp refused the request (HTTP 401): Invalid access token or authorization "
        "header.; the server's Yelp API key was refused; the administrator must check "
        "SWITCHBOARD_YELP_API_KEY"
    )
    assert "wrong-key-abcdef123" not in json.dumps(output)


async def test_5xx_is_retried_with_backoff(yelp_server: FakeYelp, http: httpx.AsyncClient) -> None:
    yelp_server.script(
        SEARCH,
        Answer(502, "Bad Gateway"),
        Answer(
            500,
            {
                "error": {
                    "code": "INTERNAL_ERROR",
                    "description": "Something went wrong internally.",
                }
            },
        ),
    )
    context = make_context(yelp_settings(yelp_server), None, http)
    output = await invoke(
        "yelp",
        "search_businesses_at_yelp",
        context,
        term="coffee",
        location="Boston, MA",
        latitude=None,
        longitude=None,
        price=None,
        open_now=False,
        sort_by="best_match",
        limit=5,
    )
    assert [b["name"] for b in output["response"]] == ["Tatte Bakery"]
    assert len(yelp_server.calls(SEARCH)) == 3
