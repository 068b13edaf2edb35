"""The model side of tests: the fake model server's key and the model setting that points
the app at it, and a lifespan hook that runs turns with a scripted SDK model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agents import Agent, RunConfig
from agents.models.interface import Model, ModelProvider

from tests.fakes.model_server import FakeModelServer

API_KEY = "sk-test-7f3c9e1b5d2a4f6e8c0b"  # what the fake model server of tests/llm/ expects


def model_spec(provider: str, server: FakeModelServer, name: str = "fake-large") -> str:
    """The ``model`` setting for ``server`` over ``provider`` (``responses``, ``chat`` or
    ``openai``; the last needs ``OPENAI_BASE_URL`` pointed at the server)."""
    if provider == "openai":
        return f"openai:{name}"
    return f"{provider}:{name}@{server.base_url()}"


class _Provider(ModelProvider):
    def __init__(self, model: Model) -> None:
        self.model = model

    def get_model(self, model_name: str | None) -> Model:
        return self.model


def scripted(model: Model, tools: list[Any]) -> Any:
    """A lifespan hook that runs turns with ``model`` (the SDK's ``ScriptedModel``, standing
    in for the outside model service) and ``tools``; everything else is the real server."""

    @asynccontextmanager
    async def hook(services: Any) -> AsyncIterator[None]:
        engine = services.turns.engine
        engine.orchestrator = Agent(name="Switchboard", instructions="test", tools=tools)
        engine.run_config = RunConfig(model_provider=_Provider(model), tracing_disabled=True)
        yield

    return hook
