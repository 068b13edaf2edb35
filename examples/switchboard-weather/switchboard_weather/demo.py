"""The forecast backend interface and its demo implementation: fixed cities, no network.

A given city and day always get the same forecast, so demos and tests are repeatable.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Protocol

from connectors.api import ToolError

Forecast = dict[str, Any]

# WMO weather interpretation codes (what Open-Meteo's weather_code means).
WEATHER_CODES = {
    0: "Clear sky",
    1: "Mainly clear",
    2: "Partly cloudy",
    3: "Overcast",
    45: "Fog",
    48: "Freezing fog",
    51: "Light drizzle",
    53: "Drizzle",
    55: "Heavy drizzle",
    61: "Light rain",
    63: "Rain",
    65: "Heavy rain",
    71: "Light snow",
    73: "Snow",
    75: "Heavy snow",
    80: "Rain showers",
    81: "Heavy rain showers",
    82: "Violent rain showers",
    95: "Thunderstorm",
    96: "Thunderstorm with hail",
    99: "Thunderstorm with heavy hail",
}


def describe(code: int) -> str:
    return WEATHER_CODES.get(code, f"Weather code {code}")


class ForecastBackend(Protocol):
    async def forecast(self, city: str, days: int) -> Forecast:
        """``{place, latitude, longitude, days: [{date, summary, high_c, low_c,
        precipitation_chance}]}``."""
        ...


@dataclass(frozen=True)
class City:
    name: str
    region: str
    latitude: float
    longitude: float
    mean_c: float  # a typical daily high


CITIES = (
    City("Boston", "Massachusetts, United States", 42.3601, -71.0589, 16.0),
    City("San Francisco", "California, United States", 37.7749, -122.4194, 18.0),
    City("Austin", "Texas, United States", 30.2672, -97.7431, 27.0),
    City("Chicago", "Illinois, United States", 41.8781, -87.6298, 14.0),
    City("London", "England, United Kingdom", 51.5072, -0.1276, 15.0),
)
_CODES = (0, 1, 2, 3, 3, 45, 61, 63, 80, 95)


def find_city(text: str) -> City | None:
    lowered = f" {text.lower()} "
    return next(
        (
            city
            for city in CITIES
            if f" {city.name.lower()}" in lowered or lowered.strip().startswith(city.name.lower())
        ),
        None,
    )


class DemoForecastBackend:
    def __init__(self, today: date) -> None:
        self._today = today

    async def forecast(self, city: str, days: int) -> Forecast:
        found = find_city(city)
        if found is None:
            covered = ", ".join(c.name for c in CITIES)
            raise ToolError(f"no demo forecast for {city!r}; the demo covers {covered}")
        out = []
        for offset in range(days):
            day = self._today + timedelta(days=offset)
            rng = random.Random(f"{found.name}|{day.isoformat()}")
            code = rng.choice(_CODES)
            high = round(found.mean_c + rng.uniform(-4, 4), 1)
            out.append(
                {
                    "date": day.isoformat(),
                    "summary": describe(code),
                    "high_c": high,
                    "low_c": round(high - rng.uniform(5, 10), 1),
                    "precipitation_chance": 80 if code >= 61 else rng.choice([0, 5, 10, 20]),
                }
            )
        return {
            "place": f"{found.name}, {found.region}",
            "latitude": found.latitude,
            "longitude": found.longitude,
            "days": out,
        }
