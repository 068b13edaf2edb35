"""A fake Open-Meteo (geocoding and forecast APIs on one host), real wire format.

- ``GET /v1/search?name=…&count=…`` → ``{"results": [{id, name, latitude, longitude,
  country, admin1, timezone, …}], "generationtime_ms"}``; no ``results`` key when nothing
  matches, as Open-Meteo answers.
- ``GET /v1/forecast?latitude=…&longitude=…&daily=…&forecast_days=N`` →
  ``{latitude, longitude, timezone, daily_units, daily: {time: [...], <variable>: [...]}}``;
  an unknown daily variable is ``400 {"error": true, "reason": …}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.fakes.fake_service import Endpoint, FakeService

PLACES = {
    "portland": {
        "id": 5746545,
        "name": "Portland",
        "latitude": 45.52345,
        "longitude": -122.67621,
        "elevation": 15.0,
        "feature_code": "PPLA2",
        "country_code": "US",
        "timezone": "America/Los_Angeles",
        "population": 652503,
        "country": "United States",
        "admin1": "Oregon",
    }
}
VARIABLES = {
    "weather_code": ("wmo code", [61, 3, 0, 95, 1, 2, 80]),
    "temperature_2m_max": ("°C", [14.2, 16.8, 19.5, 21.0, 18.4, 17.7, 15.1]),
    "temperature_2m_min": ("°C", [7.1, 8.0, 9.4, 12.2, 10.0, 9.9, 8.3]),
    "precipitation_probability_max": ("%", [85, 20, 0, 70, 5, 10, 60]),
}


@dataclass
class FakeOpenMeteo(FakeService):
    def __post_init__(self) -> None:
        FakeService.__init__(self)

    async def search(self, request: Request) -> Response:
        name = request.query_params.get("name", "").split(",")[0].strip().lower()
        body: dict[str, object] = {"generationtime_ms": 0.4}
        if name in PLACES:
            body["results"] = [PLACES[name]]
        return JSONResponse(body)

    async def forecast(self, request: Request) -> Response:
        query = request.query_params
        wanted = query.get("daily", "").split(",")
        unknown = [v for v in wanted if v not in VARIABLES]
        if unknown:
            return JSONResponse(
                {
                    "error": True,
                    "reason": "Cannot initialize "
                    f"WeatherVariable from invalid String value {unknown[0]}.",
                },
                400,
            )
        days = int(query.get("forecast_days", "7"))
        today = datetime.now(UTC).date()
        daily: dict[str, list[object]] = {
            "time": [(today + timedelta(days=n)).isoformat() for n in range(days)]
        }
        for variable in wanted:
            daily[variable] = list(VARIABLES[variable][1][:days])
        return JSONResponse(
            {
                "latitude": float(query["latitude"]),
                "longitude": float(query["longitude"]),
                "generationtime_ms": 0.1,
                "utc_offset_seconds": -25200,
                "timezone": "America/Los_Angeles",
                "timezone_abbreviation": "PDT",
                "elevation": 15.0,
                "daily_units": {"time": "iso8601", **{v: VARIABLES[v][0] for v in wanted}},
                "daily": daily,
            }
        )

    def routes(self) -> list[tuple[str, Endpoint, list[str]]]:
        return [("/v1/search", self.search, ["GET"]), ("/v1/forecast", self.forecast, ["GET"])]
