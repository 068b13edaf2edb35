"""The Weather connector: Switchboard's contract kit, and the demo forecasts."""

from __future__ import annotations

from typing import Any, ClassVar

from connectors.api import Connector, ConnectorSettings
from connectors.testing import ConnectorContract, call_tool, harness

from switchboard_weather import connector


class TestWeatherContract(ConnectorContract):
    connector: ClassVar[Connector] = connector
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {
        "get_weather_forecast": {"city": "Boston", "days": 3}
    }
    live_settings: ClassVar[dict[str, Any] | None] = {
        "connector_options": {"weather": {"base_url": "{base_url}", "geocoding_url": "{base_url}"}}
    }


async def test_demo_forecasts_are_repeatable() -> None:
    async with harness(ConnectorSettings()) as kit:
        first = await call_tool(
            connector, "get_weather_forecast", kit.context(), {"city": "Austin", "days": 5}
        )
        again = await call_tool(
            connector, "get_weather_forecast", kit.context(), {"city": "austin", "days": 5}
        )
    assert first["response"] == again["response"]
    assert len(first["response"]["days"]) == 5
    assert first["display_as"][0]["content"].startswith("**Austin, Texas")


async def test_bad_requests_are_explained() -> None:
    async with harness(ConnectorSettings()) as kit:
        nowhere = await call_tool(
            connector, "get_weather_forecast", kit.context(), {"city": "Atlantis", "days": 3}
        )
        too_long = await call_tool(
            connector, "get_weather_forecast", kit.context(), {"city": "Boston", "days": 30}
        )
    assert nowhere["error_message"].startswith("Error: no demo forecast for 'Atlantis'")
    assert too_long["error_message"] == "Error: days must be between 1 and 7"
