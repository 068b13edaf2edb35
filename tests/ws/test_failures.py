"""Failures end turns cleanly: tool errors go on, model errors fail the turn, nothing leaks.

The model here is the Agents SDK's own ``ScriptedModel`` (a stand-in for the outside
model service), plugged in through the app's public lifespan hooks; everything else is
the real server.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agents import Agent, RunConfig
from agents.models.interface import Model, ModelProvider
from agents.testing import ScriptedModel, assistant_message, function_call

from connectors.responses import ToolResponse
from connectors.tooling import connector_tool
from tests.support.clients import open_client
from tests.support.servers import serve

SECRET = "sk-live-0123456789abcdef"


class _Provider(ModelProvider):
    def __init__(self, model: Model) -> None:
        self.model = model

    def get_model(self, model_name: str | None) -> Model:
        return self.model


@connector_tool(agent_name="Flaky")
async def flaky_lookup(city: str) -> dict[str, Any]:
    """Look up a city (always fails, like a service that is down)."""
    raise ConnectionError(f"https://api.example.com/?key={SECRET} unreachable")


@connector_tool(agent_name="Flaky")
async def fine_lookup(city: str) -> dict[str, Any]:
    """Look up a city."""
    return ToolResponse("text", "Flaky", "Weather", f"Sunny in {city}").to_dict()


def scripted(model: ScriptedModel) -> Any:
    @asynccontextmanager
    async def hook(services: Any) -> AsyncIterator[None]:
        engine = services.turns.engine
        engine.orchestrator = Agent(
            name="Switchboard", instructions="test", tools=[flaky_lookup, fine_lookup]
        )
        engine.run_config = RunConfig(model_provider=_Provider(model), tracing_disabled=True)
        yield

    return hook


async def test_a_failing_tool_is_reported_and_the_turn_goes_on(make_settings: Any) -> None:
    model = ScriptedModel(
        [
            [function_call("flaky_lookup", {"city": "Oslo"}, call_id="c1")],
            [function_call("fine_lookup", {"city": "Oslo"}, call_id="c2")],
            [assistant_message("The first lookup failed, the second says sunny.")],
        ]
    )
    async with serve(make_settings(), hooks=(scripted(model),)) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("weather in Oslo?")
    types = [e["type"] for e in events]
    assert types[:5] == ["user_prompt", "tool_call", "tool_output", "error", "tool_call"]
    assert events[2]["output"]["response_type"] == "error"
    assert events[3]["code"] == "tool_error" and events[3]["retryable"] is False
    assert events[-2]["status"] == "completed"
    assert "sunny" in next(e for e in events if e["type"] == "llm_response")["text"]
    # The model was told, as a plain "Error: …" tool result, and went on.
    second_call_input = str(model.calls[1].input)
    assert "Error:" in second_call_input
    assert SECRET not in str(events) and SECRET not in second_call_input
    assert "Traceback" not in str(events)


async def test_a_failing_model_fails_the_turn_and_the_server_goes_on(make_settings: Any) -> None:
    model = ScriptedModel(
        [
            RuntimeError(f"upstream said 500 with api_key={SECRET}"),
            [assistant_message("Back to normal.")],
        ]
    )
    async with serve(make_settings(), hooks=(scripted(model),)) as live:
        chat_id = uuid.uuid4().hex
        async with open_client(live.ws_url(chat_id)) as client:
            failed = await client.turn("hello?")
            assert [e["type"] for e in failed] == ["user_prompt", "error", "end_of_stream"]
            assert failed[1]["code"] == "model_error" and failed[1]["seq"] is not None
            assert failed[2]["status"] == "failed"
            # The same chat takes the next prompt, and the server answers it.
            again = await client.turn("hello again?")
        async with live.client() as http:
            detail = (await http.get(f"/api/chats/{chat_id}")).json()
    assert again[-2]["status"] == "completed"
    assert [t["status"] for t in detail["turns"]] == ["failed", "completed"]
    assert SECRET not in str(failed) and "Traceback" not in str(failed)


async def test_text_is_checkpointed_while_it_streams(make_settings: Any) -> None:
    async with serve(make_settings(offline_delta_delay=0.03)) as live:
        chat_id = uuid.uuid4().hex
        async with open_client(live.ws_url(chat_id)) as client:
            await client.send({"type": "prompt", "text": "search the web for python asyncio"})
            prompt = (await client.until("user_prompt"))[-1]
            await client.until("llm_response_delta")
            streamed = ""
            for _ in range(25):  # at 30 ms a word, well over 250 ms of streaming
                event = await client.recv()
                if event["type"] == "llm_response_delta":
                    streamed += event["delta"]
            turn = await live.services.store.get_turn(prompt["turn_id"])
            assert turn is not None and turn.status == "running"
            assert turn.partial_text, "no checkpoint after 250 ms of streaming"
            rest = await client.until("end_of_stream")
    final = next(e for e in rest if e["type"] == "llm_response")["text"]
    assert final.startswith(turn.partial_text)


async def test_the_next_turn_has_the_previous_turns_context(make_settings: Any) -> None:
    model = ScriptedModel(
        [
            [function_call("fine_lookup", {"city": "Lisbon"}, call_id="c1")],
            [assistant_message("It is sunny in Lisbon.")],
            [assistant_message("Yes, still Lisbon.")],
        ]
    )
    async with serve(make_settings(), hooks=(scripted(model),)) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            await client.turn("weather in Lisbon?")
            await client.turn("and tomorrow?")
    history = str(model.calls[2].input)
    for earlier in (
        "weather in Lisbon?",
        "Sunny in Lisbon",
        "It is sunny in Lisbon.",
        "and tomorrow?",
    ):
        assert earlier in history, f"{earlier!r} missing from the second turn's input"
