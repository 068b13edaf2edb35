"""The forecast tool. It returns a ToolResponse; any failure becomes an error card."""

from __future__ import annotations

from datetime import UTC, datetime

from agents import RunContextWrapper
from connectors.api import ChatContext, ToolError, ToolResponse, connector_tool

from switchboard_weather.client import live_backend
from switchboard_weather.demo import DemoForecastBackend, ForecastBackend

AGENT_NAME = "Weather"
CONNECTOR = "weather"
TIMEOUT = 15.0
MAX_DAYS = 7


def backend(ctx: RunContextWrapper[ChatContext]) -> ForecastBackend:
    if ctx.context.settings.connector_mode(CONNECTOR) == "live":
        return live_backend(ctx.context)
    return DemoForecastBackend(datetime.now(UTC).date())


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def get_weather_forecast(
    ctx: RunContextWrapper[ChatContext], city: str, days: int = 3
) -> ToolResponse:
    """Daily weather forecast for a city: conditions, high and low, chance of rain.

    Args:
        city: The city, e.g. "Boston" or "Portland, Oregon".
        days: How many days, 1-7, starting today.
    """
    if not city.strip():
        raise ToolError("no city given; ask the user where")
    if not 1 <= days <= MAX_DAYS:
        raise ToolError(f"days must be between 1 and {MAX_DAYS}")
    forecast = await backend(ctx).forecast(city.strip(), days)
    rows = [
        f"| {d['date']} | {d['summary']} | {d['high_c']} °C | {d['low_c']} °C | "
        f"{d['precipitation_chance']}% |"
        for d in forecast["days"]
    ]
    table = "\n".join(
        [
            f"**{forecast['place']}**",
            "",
            "| Day | Weather | High | Low | Rain |",
            "|---|---|---:|---:|---:|",
            *rows,
        ]
    )
    lines = [
        f"{d['date']}: {d['summary']}, {d['low_c']}–{d['high_c']} °C, "
        f"{d['precipitation_chance']}% rain"
        for d in forecast["days"]
    ]
    return ToolResponse(
        "weather_forecast",
        AGENT_NAME,
        f"Forecast for {forecast['place']}",
        forecast,
        display_as=[
            {"type": "markdown", "content": table},
            {"type": "text", "content": "\n".join([forecast["place"], *lines])},
        ],
    )


TOOLS = [get_weather_forecast]
TOOL_DESCRIPTIONS = {"get_weather_forecast": "Checking the forecast"}
RESPONSE_TYPES = ("weather_forecast", "error")
