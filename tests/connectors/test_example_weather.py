"""The tutorial's example package (examples/switchboard-weather), imported from source and
registered through an explicit entry point, exactly as an installed plug-in would be."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from agents import RunConfig, Runner

from app.llm.offline import OfflineModelProvider
from app.settings import Settings
from connectors.names import ENTRY_POINT_GROUP
from connectors.orchestrator import build_orchestrator
from connectors.registry import Connector, installed_points, load_connectors
from connectors.testing import ConnectorContract, call_tool
from tests.fakes.fake_service import serve_fake
from tests.fakes.open_meteo import FakeOpenMeteo
from tests.support.connectors import make_context

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "switchboard-weather"
if str(EXAMPLE) not in sys.path:  # what `pip install -e examples/switchboard-weather` does
    sys.path.insert(0, str(EXAMPLE))

POINTS = [
    *installed_points(),
    EntryPoint(name="weather", value="switchboard_weather:connector", group=ENTRY_POINT_GROUP),
    EntryPoint(name="broken", value="switchboard_missing:connector", group=ENTRY_POINT_GROUP),
]
CONNECTORS = load_connectors(Settings(), points=POINTS)
WEATHER = CONNECTORS[-1]


def test_the_plugin_registers_after_the_builtins_and_a_broken_one_is_skipped() -> None:
    assert [c.name for c in CONNECTORS] == ["gmail", "plaid", "yelp", "search", "weather"]
    assert WEATHER.agent_name == "Weather" and WEATHER.needs_account is False


class TestWeatherContract(ConnectorContract):
    connector: ClassVar[Connector] = WEATHER
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {
        "get_weather_forecast": {"city": "Boston", "days": 3}
    }
    live_settings: ClassVar[dict[str, Any] | None] = {
        "connector_options": {"weather": {"base_url": "{base_url}", "geocoding_url": "{base_url}"}}
    }


@pytest.fixture
async def open_meteo() -> AsyncIterator[FakeOpenMeteo]:
    fake = FakeOpenMeteo()
    async with serve_fake(fake):
        yield fake


async def test_live_forecast_from_open_meteo(
    open_meteo: FakeOpenMeteo, http: httpx.AsyncClient
) -> None:
    settings = Settings(
        connector_modes={"weather": "live"},
        connector_options={
            "weather": {"base_url": open_meteo.base_url, "geocoding_url": open_meteo.base_url}
        },
    )
    output = await call_tool(
        WEATHER,
        "get_weather_forecast",
        make_context(settings, None, http),
        {"city": "Portland, Oregon", "days": 4},
    )
    assert output["response_type"] == "weather_forecast"
    forecast = output["response"]
    assert forecast["place"] == "Portland, Oregon, United States"
    assert [d["summary"] for d in forecast["days"]] == [
        "Light rain",
        "Overcast",
        "Clear sky",
        "Thunderstorm",
    ]
    assert forecast["days"][0] | {"date": None} == {
        "date": None,
        "summary": "Light rain",
        "high_c": 14.2,
        "low_c": 7.1,
        "precipitation_chance": 85,
    }
    (lookup,) = open_meteo.calls("/v1/search")
    assert lookup.param("name") == "Portland, Oregon"
    (asked,) = open_meteo.calls("/v1/forecast")
    assert (asked.param("latitude"), asked.param("forecast_days")) == ("45.52345", "4")

    unknown = await call_tool(
        WEATHER,
        "get_weather_forecast",
        make_context(settings, None, http),
        {"city": "Xyzzy", "days": 2},
    )
    assert unknown["error_message"].startswith(
        "Error: Open-Meteo does not know a place called 'Xyzzy'"
    )


async def _offline_turn(prompt: str, provider: OfflineModelProvider) -> tuple[list[Any], str]:
    """The tool outputs and the answer of one turn on the offline model."""
    settings = Settings()
    result = Runner.run_streamed(
        build_orchestrator(settings, CONNECTORS),
        input=prompt,
        context=make_context(settings, None, None),
        run_config=RunConfig(model_provider=provider, tracing_disabled=True),
    )
    outputs = []
    async for event in result.stream_events():
        if event.type == "run_item_stream_event" and event.name == "tool_output":
            outputs.append(event.item.output)
    return outputs, str(result.final_output)


async def test_the_offline_model_hands_off_to_the_plugin() -> None:
    outputs, _ = await _offline_turn(
        "ask Weather for the forecast in Chicago", OfflineModelProvider()
    )
    (forecast,) = outputs
    assert forecast["response_type"] == "weather_forecast"
    assert forecast["response"]["place"].startswith("Chicago")


async def test_with_a_weather_connector_the_weather_is_not_declined() -> None:
    # Without one, web search's hints decline live weather; beside this plug-in they stand
    # aside and the request reaches it.
    outputs, answer = await _offline_turn(
        "what's the weather in Chicago?", OfflineModelProvider(connectors=CONNECTORS)
    )
    (forecast,) = outputs
    assert forecast["response_type"] == "weather_forecast"
    assert "can't check live weather" not in answer
