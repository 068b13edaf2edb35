"""The live backend: Open-Meteo's geocoding and forecast APIs (free, no key).

``GET {geocoding_url}/v1/search?name=…&count=1`` finds the city; ``GET
{base_url}/v1/forecast?latitude=…&longitude=…&daily=…&forecast_days=N`` gives the days.
``ServiceHttp`` brings timeouts, retries on 429/5xx and error texts safe to show.
"""

from __future__ import annotations

from typing import Any

from connectors.api import (
    ChatContext,
    ConnectorSettings,
    ServiceHttp,
    ToolError,
    read_json,
    shared_client,
)

from switchboard_weather.demo import Forecast, describe

SERVICE = "Open-Meteo"
BASE_URL = "https://api.open-meteo.com"
GEOCODING_URL = "https://geocoding-api.open-meteo.com"
DAILY = "weather_code,temperature_2m_max,temperature_2m_min,precipitation_probability_max"


class OpenMeteoBackend:
    def __init__(self, http: ServiceHttp, base_url: str, geocoding_url: str) -> None:
        self._http = http
        self._base = base_url.rstrip("/")
        self._geocoding = geocoding_url.rstrip("/")

    async def _get(self, url: str, params: dict[str, Any]) -> dict[str, Any]:
        response = await self._http.send("GET", url, params=params)
        body = read_json(response, SERVICE)
        if not response.is_success:
            # Open-Meteo explains a bad request as {"error": true, "reason": "..."}.
            reason = body.get("reason") if isinstance(body, dict) else None
            raise self._http.status_error(response, reason)
        return body if isinstance(body, dict) else {}

    async def forecast(self, city: str, days: int) -> Forecast:
        found = await self._get(
            f"{self._geocoding}/v1/search",
            {"name": city, "count": 1, "language": "en", "format": "json"},
        )
        places = found.get("results") or []
        if not places:
            raise ToolError(
                f"Open-Meteo does not know a place called {city!r}; try the "
                'city\'s full name, e.g. "Portland, Oregon"'
            )
        place = places[0]
        data = await self._get(
            f"{self._base}/v1/forecast",
            {
                "latitude": place["latitude"],
                "longitude": place["longitude"],
                "daily": DAILY,
                "timezone": "auto",
                "forecast_days": days,
            },
        )
        daily = data.get("daily") or {}
        columns = [
            daily.get(key) or []
            for key in (
                "time",
                "weather_code",
                "temperature_2m_max",
                "temperature_2m_min",
                "precipitation_probability_max",
            )
        ]
        out = [
            {
                "date": day,
                "summary": describe(int(code)),
                "high_c": high,
                "low_c": low,
                "precipitation_chance": rain,
            }
            for day, code, high, low, rain in zip(*columns, strict=False)
        ]
        where = ", ".join(
            str(part)
            for part in (place.get("name"), place.get("admin1"), place.get("country"))
            if part
        )
        return {
            "place": where,
            "latitude": place["latitude"],
            "longitude": place["longitude"],
            "days": out,
        }


def options(settings: ConnectorSettings) -> dict[str, str]:
    return settings.connector_options.get("weather", {})


def live_backend(context: ChatContext) -> OpenMeteoBackend:
    chosen = options(context.settings)
    http = ServiceHttp.for_settings(shared_client(context.http, SERVICE), SERVICE, context.settings)
    return OpenMeteoBackend(
        http, chosen.get("base_url", BASE_URL), chosen.get("geocoding_url", GEOCODING_URL)
    )
