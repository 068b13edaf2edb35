"""A fake Yelp Fusion API v3 (``Authorization: Bearer API_KEY``), real wire format.

- ``GET /v3/businesses/search``: ``term``, ``location`` or ``latitude``/``longitude``,
  ``price`` ("1,2"), ``open_now``, ``sort_by``, ``limit`` (≤ 50), ``offset`` →
  ``{businesses, total, region: {center}}``; an unknown place is
  ``400 {"error": {"code": "LOCATION_NOT_FOUND", "description": …}}``.
- ``GET /v3/businesses/{id}`` and ``GET /v3/businesses/{id}/reviews`` (``limit`` ≤ 3 on the
  free tier) → ``{reviews, total, possible_languages}``; unknown ids are
  ``404 BUSINESS_NOT_FOUND``. A bad key is ``401 TOKEN_INVALID``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.fakes.fake_service import Endpoint, FakeService

CITIES = {
    "boston, ma": ("Boston", "MA", "02116", 42.3601, -71.0589),
    "austin, tx": ("Austin", "TX", "78701", 30.2672, -97.7431),
}
PLACES = (
    ("boston, ma", "Oishii Sushi", "sushi", "Sushi Bars", "$$$", 4.6, 812, True),
    ("boston, ma", "O Ya", "sushi", "Sushi Bars", "$$$$", 4.5, 1204, False),
    ("boston, ma", "Fuji at Kendall", "sushi", "Sushi Bars", "$$", 4.0, 640, True),
    ("boston, ma", "Tatte Bakery", "coffee", "Coffee & Tea", "$$", 4.3, 2301, True),
    ("austin, tx", "Uchi", "sushi", "Sushi Bars", "$$$$", 4.7, 3320, True),
    ("austin, tx", "Franklin Barbecue", "bbq", "Barbeque", "$$", 4.5, 6900, False),
)


def _error(status: int, code: str, description: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "description": description}}, status)


def _distance(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    a = (
        math.sin((phi2 - phi1) / 2) ** 2
        + math.cos(phi1) * math.cos(phi2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    )
    return 6_371_000 * 2 * math.asin(math.sqrt(a))


@dataclass
class FakeYelp(FakeService):
    api_key: str = "fake-yelp-api-key-0123456789"
    businesses: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        FakeService.__init__(self)
        for index, (city_key, name, alias, title, price, rating, reviews, open_now) in enumerate(
            PLACES
        ):
            city, state, zip_code, lat, lon = CITIES[city_key]
            slug = f"{name.lower().replace(' ', '-')}-{city.lower()}"
            self.businesses.append(
                {
                    "id": f"bizid{index:04d}xyz",
                    "alias": slug,
                    "name": name,
                    "image_url": f"https://s3-media1.fl.yelpcdn.com/bphoto/{index}/o.jpg",
                    "is_closed": False,
                    "url": f"https://www.yelp.com/biz/{slug}",
                    "review_count": reviews,
                    "categories": [{"alias": alias, "title": title}],
                    "rating": rating,
                    "coordinates": {
                        "latitude": lat + index * 0.001,
                        "longitude": lon - index * 0.001,
                    },
                    "transactions": ["pickup"],
                    "price": price,
                    "location": {
                        "address1": f"{100 + index} Main St",
                        "address2": "",
                        "address3": "",
                        "city": city,
                        "zip_code": zip_code,
                        "country": "US",
                        "state": state,
                        "display_address": [
                            f"{100 + index} Main St",
                            f"{city}, {state} {zip_code}",
                        ],
                    },
                    "phone": f"+1617555{index:04d}",
                    "display_phone": f"(617) 555-{index:04d}",
                    "business_hours": [
                        {"open": [], "hour_type": "REGULAR", "is_open_now": open_now}
                    ],
                }
            )

    def _authorised(self, request: Request) -> Response | None:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "TOKEN_INVALID", "Invalid access token or authorization header.")
        return None

    async def search(self, request: Request) -> Response:
        refused = self._authorised(request)
        if refused:
            return refused
        query = request.query_params
        limit = int(query.get("limit", "20"))
        if not 0 < limit <= 50:
            return _error(400, "VALIDATION_ERROR", f"{limit} is greater than the maximum of 50")
        if "latitude" in query and "longitude" in query:
            lat, lon = float(query["latitude"]), float(query["longitude"])
        elif query.get("location", "").lower() in CITIES:
            _c, _s, _z, lat, lon = CITIES[query["location"].lower()]
        elif query.get("location"):
            return _error(
                400,
                "LOCATION_NOT_FOUND",
                "Could not execute search, try specifying a more exact location.",
            )
        else:
            return _error(
                400, "VALIDATION_ERROR", "Please specify a location or a latitude and longitude"
            )
        term = query.get("term", "").lower()
        prices = {int(p) for p in query.get("price", "").split(",") if p.strip()}
        found = []
        for business in self.businesses:
            coords = business["coordinates"]
            distance = _distance(lat, lon, coords["latitude"], coords["longitude"])
            if distance > 40_000:
                continue
            if (
                term
                and term not in business["name"].lower()
                and not any(term in c["alias"] for c in business["categories"])
            ):
                continue
            if prices and len(business["price"]) not in prices:
                continue
            if query.get("open_now") == "true" and not business["business_hours"][0]["is_open_now"]:
                continue
            found.append(
                {k: v for k, v in business.items() if k != "business_hours"}
                | {"distance": distance}
            )
        sort_by = query.get("sort_by", "best_match")
        if sort_by == "rating":
            found.sort(key=lambda b: -b["rating"])
        elif sort_by == "distance":
            found.sort(key=lambda b: b["distance"])
        elif sort_by == "review_count":
            found.sort(key=lambda b: -b["review_count"])
        offset = int(query.get("offset", "0"))
        return JSONResponse(
            {
                "businesses": found[offset : offset + limit],
                "total": len(found),
                "region": {"center": {"longitude": lon, "latitude": lat}},
            }
        )

    def _find(self, business_id: str) -> dict[str, Any] | None:
        return next((b for b in self.businesses if business_id in (b["id"], b["alias"])), None)

    async def details(self, request: Request) -> Response:
        refused = self._authorised(request)
        if refused:
            return refused
        business = self._find(request.path_params["id"])
        if business is None:
            return _error(404, "BUSINESS_NOT_FOUND", "The requested business could not be found.")
        return JSONResponse(
            {
                **business,
                "photos": [business["image_url"]],
                "hours": [
                    {
                        "open": [],
                        "hour_type": "REGULAR",
                        "is_open_now": business["business_hours"][0]["is_open_now"],
                    }
                ],
            }
        )

    async def reviews(self, request: Request) -> Response:
        refused = self._authorised(request)
        if refused:
            return refused
        business = self._find(request.path_params["id"])
        if business is None:
            return _error(404, "BUSINESS_NOT_FOUND", "The requested business could not be found.")
        limit = int(request.query_params.get("limit", "3"))
        reviews = [
            {
                "id": f"rev{business['id']}{n}",
                "url": f"{business['url']}?hrid=rev{n}",
                "text": f"Review {n + 1} of {business['name']}: lovely, would come back...",
                "rating": 5 - n,
                "time_created": f"2024-0{n + 1}-12 19:0{n}:11",
                "user": {
                    "id": f"user{n}",
                    "profile_url": f"https://www.yelp.com/user_details?userid=user{n}",
                    "image_url": None,
                    "name": f"Reviewer {n + 1}.",
                },
            }
            for n in range(5)
        ]
        return JSONResponse(
            {
                "reviews": reviews[: min(limit, 3)],
                "total": len(reviews),
                "possible_languages": ["en"],
            }
        )

    def routes(self) -> list[tuple[str, Endpoint, list[str]]]:
        return [
            ("/v3/businesses/search", self.search, ["GET"]),
            ("/v3/businesses/{id}/reviews", self.reviews, ["GET"]),
            ("/v3/businesses/{id}", self.details, ["GET"]),
        ]
