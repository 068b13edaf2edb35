"""The Yelp backend interface and its demo implementation (five cities of fixture businesses).

The live client (``client.py``) implements ``YelpBackend`` over Yelp Fusion
(``/businesses/search``, ``/businesses/{id}/reviews``); the tools only talk to this interface.
"""

from __future__ import annotations

import math
import re
from datetime import date
from typing import Any, Literal, Protocol

from connectors.tooling import ToolError
from connectors.yelp import demo_businesses as data

Business = dict[str, Any]
SortBy = Literal["best_match", "rating", "review_count", "distance"]
MAX_LIMIT = 20


class YelpBackend(Protocol):
    async def user_location(self, hint: str | None) -> dict[str, Any]: ...

    async def search(
        self,
        term: str,
        location: str | None,
        latitude: float | None,
        longitude: float | None,
        price: str | None,
        open_now: bool,
        sort_by: SortBy,
        limit: int,
    ) -> tuple[list[Business], str]:
        """Matching businesses and a display name of where was searched ("Boston, MA")."""
        ...

    async def reviews(self, business_id: str) -> tuple[Business, list[dict[str, Any]]]: ...


def price_levels(price: str | None) -> set[int] | None:
    """Yelp's price filter: "1,2" or "$$" → {1, 2} / {2}."""
    if price is None or not price.strip():
        return None
    if set(price.strip()) == {"$"}:
        return {len(price.strip())}
    levels = {int(part) for part in re.findall(r"[1-4]", price)}
    if not levels:
        raise ToolError(
            f'price {price!r} is not understood; use levels like "1,2" (1 = $, 4 = $$$$)'
        )
    return levels


def _public(business: Business, distance: float) -> Business:
    result = {key: value for key, value in business.items() if not key.startswith("_")}
    result["distance"] = round(distance, 1)
    return result


class DemoYelpBackend:
    def __init__(self, today: date) -> None:
        self._today = today

    async def user_location(self, hint: str | None) -> dict[str, Any]:
        city = data.find_city(hint)
        source = "hint" if city else "saved location"
        city = city or data.HOME_CITY
        return {
            "display": city.display,
            "city": city.name,
            "state": city.state,
            "country": "US",
            "latitude": city.latitude,
            "longitude": city.longitude,
            "source": source,
        }

    async def search(
        self,
        term: str,
        location: str | None,
        latitude: float | None,
        longitude: float | None,
        price: str | None,
        open_now: bool,
        sort_by: SortBy,
        limit: int,
    ) -> tuple[list[Business], str]:
        if latitude is not None and longitude is not None:
            city = data.nearest_city(latitude, longitude)
            if city is None:
                raise ToolError(
                    f"no demo businesses near {latitude:.3f},{longitude:.3f}; "
                    f"the demo covers {_covered()}"
                )
            center = (latitude, longitude)
        elif location and location.strip():
            city = data.find_city(location)
            if city is None:
                raise ToolError(f"no demo businesses in {location!r}; the demo covers {_covered()}")
            center = (city.latitude, city.longitude)
        else:
            city = data.HOME_CITY  # no location at all: the user's saved one, like "near me"
            center = (city.latitude, city.longitude)
        levels = price_levels(price)
        found = [
            b
            for b in data.all_businesses()
            if b["location"]["city"] == city.name
            and _term_matches(b, term)
            and (levels is None or len(b["price"]) in levels)
            and (not open_now or b["business_hours"][0]["is_open_now"])
        ]
        scored = [
            (
                b,
                data.distance_m(
                    *center, b["coordinates"]["latitude"], b["coordinates"]["longitude"]
                ),
            )
            for b in found
        ]
        scored.sort(key=_sort_key(sort_by))
        return [_public(b, d) for b, d in scored[: max(1, min(limit, MAX_LIMIT))]], city.display

    async def reviews(self, business_id: str) -> tuple[Business, list[dict[str, Any]]]:
        wanted = business_id.strip()
        for business in data.all_businesses():
            if wanted in (business["id"], business["alias"]):
                return _public(business, 0.0), data.reviews(business, self._today)
        raise ToolError(
            f"no business with id {business_id!r}; search Yelp first and use an id from the results"
        )


def _covered() -> str:
    names = [city.display for city in data.CITIES]
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def _term_matches(business: Business, term: str) -> bool:
    cuisine = data.cuisine_for(term)
    if cuisine is not None:
        return bool(business["_cuisine"] == cuisine.alias)
    words = set(re.findall(r"[a-zé]+", term.lower()))
    if not words or words & data.GENERIC_TERMS:
        return True
    haystack = " ".join([business["name"], *(c["title"] for c in business["categories"])])
    return any(word in haystack.lower() for word in words)


def _sort_key(sort_by: SortBy) -> Any:
    if sort_by == "distance":
        return lambda pair: (pair[1], pair[0]["name"])
    if sort_by == "rating":
        return lambda pair: (-pair[0]["rating"], pair[0]["name"])
    if sort_by == "review_count":
        return lambda pair: (-pair[0]["review_count"], pair[0]["name"])
    # best_match: rating weighted by how many people agree.
    return lambda pair: (
        -pair[0]["rating"] * math.log10(pair[0]["review_count"] + 10),
        pair[0]["name"],
    )
