"""The live Yelp backend: Yelp Fusion API v3 with the server's API key.

``GET /v3/businesses/search`` (term, location or latitude/longitude, price, open_now,
sort_by, limit) and ``GET /v3/businesses/{id}`` + ``/reviews``. "Near me" resolves the
user's saved location (``SWITCHBOARD_YELP_DEFAULT_LOCATION``) or a place they named to
coordinates with the ``region.center`` Yelp returns for a search of that place.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

import httpx

from connectors.context import ChatContext
from connectors.service_http import ServiceHttp, read_json, shared_client
from connectors.tooling import ToolError
from connectors.yelp.demo import MAX_LIMIT, Business, SortBy, price_levels
from connectors.yelp.settings import YelpSettings

SERVICE = "Yelp"
KEY_CODES = frozenset(
    {"TOKEN_INVALID", "TOKEN_MISSING", "UNAUTHORIZED_ACCESS_TOKEN", "AUTHORIZATION_ERROR"}
)


class YelpClient:
    """``YelpBackend`` over Yelp Fusion."""

    def __init__(self, http: ServiceHttp, settings: YelpSettings) -> None:
        self._http = http
        self._base = f"{settings.yelp_base_url}/v3"
        key = settings.yelp_api_key
        self._headers = {
            "Authorization": f"Bearer {key.get_secret_value() if key else ''}",
            "Accept": "application/json",
        }
        self._home = (settings.yelp_default_location or "").strip() or None

    async def _get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await self._http.send(
            "GET", f"{self._base}{path}", params=params, headers=self._headers
        )
        if response.is_success:
            body = read_json(response, SERVICE)
            return body if isinstance(body, dict) else {}
        raise self._error(response, params or {})

    def _error(self, response: httpx.Response, params: dict[str, Any]) -> ToolError:
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        code = str(error.get("code", "")) if isinstance(error, dict) else ""
        description = error.get("description") if isinstance(error, dict) else None
        if code == "LOCATION_NOT_FOUND":
            place = self._http.detail(params.get("location") or "that place")
            return ToolError(
                f"Yelp could not find the location {place!r}; give a city and "
                'state like "Boston, MA" or an address'
            )
        if code == "BUSINESS_NOT_FOUND" or response.status_code == 404:
            return ToolError(
                "Yelp has no business with that id; search Yelp first and use an "
                "id from the results"
            )
        advice = None
        if code in KEY_CODES or response.status_code in (401, 403):
            advice = (
                "the server's Yelp API key was refused; the administrator must check "
                "SWITCHBOARD_YELP_API_KEY"
            )
        return self._http.status_error(response, description or code or None, advice)

    async def user_location(self, hint: str | None) -> dict[str, Any]:
        place = (hint or "").strip() or self._home
        if not place:
            raise ToolError(
                "the user's location is not known (no saved location is "
                "configured); ask the user which city or neighbourhood to search"
            )
        data = await self._get("/businesses/search", {"location": place, "limit": 1})
        center = (data.get("region") or {}).get("center") or {}
        first = (data.get("businesses") or [{}])[0].get("location") or {}
        if not isinstance(center.get("latitude"), int | float):
            raise ToolError(
                f"Yelp could not place {place!r} on the map; ask the user for a city and state"
            )
        return {
            "display": place,
            "city": first.get("city"),
            "state": first.get("state"),
            "country": first.get("country"),
            "latitude": center["latitude"],
            "longitude": center["longitude"],
            "source": "hint" if (hint or "").strip() else "saved location",
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
        params: dict[str, Any] = {
            "term": term.strip() or "restaurants",
            "sort_by": sort_by,
            "limit": max(1, min(limit, MAX_LIMIT)),
        }
        if latitude is not None and longitude is not None:
            params.update(latitude=latitude, longitude=longitude)
        elif location and location.strip():
            params["location"] = location.strip()
        elif self._home:
            params["location"] = self._home
        else:
            raise ToolError(
                'no place to search; give a location like "Boston, MA", or call '
                "resolve_user_location first"
            )
        levels = price_levels(price)
        if levels:
            params["price"] = ",".join(str(level) for level in sorted(levels))
        if open_now:
            params["open_now"] = "true"
        data = await self._get("/businesses/search", params)
        businesses = [
            self._business(b) for b in data.get("businesses") or [] if isinstance(b, dict)
        ]
        return businesses, self._where(params, businesses)

    async def reviews(self, business_id: str) -> tuple[Business, list[dict[str, Any]]]:
        wanted = business_id.strip()
        if not wanted:
            raise ToolError("no business id given; search Yelp first")
        path = f"/businesses/{quote(wanted, safe='')}"
        try:
            async with asyncio.TaskGroup() as group:
                details = group.create_task(self._get(path))
                reviews = group.create_task(
                    self._get(f"{path}/reviews", {"limit": 3, "sort_by": "yelp_sort"})
                )
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
        found = [r for r in reviews.result().get("reviews") or [] if isinstance(r, dict)]
        return self._business(details.result()), found[:3]

    @staticmethod
    def _business(business: dict[str, Any]) -> Business:
        shaped = dict(business)
        if isinstance(shaped.get("distance"), int | float):
            shaped["distance"] = round(float(shaped["distance"]), 1)
        return shaped

    @staticmethod
    def _where(params: dict[str, Any], businesses: list[Business]) -> str:
        if "location" in params:
            return str(params["location"])
        first = businesses[0].get("location") if businesses else None
        if isinstance(first, dict) and first.get("city"):
            return ", ".join(str(part) for part in (first["city"], first.get("state")) if part)
        return f"{params['latitude']:.3f}, {params['longitude']:.3f}"


def live_backend(context: ChatContext) -> YelpClient:
    own = YelpSettings.read(context.settings)
    key = own.yelp_api_key
    http = ServiceHttp.for_settings(
        shared_client(context.http, SERVICE),
        SERVICE,
        context.settings,
        (key.get_secret_value() if key else None,),
    )
    return YelpClient(http, own)
