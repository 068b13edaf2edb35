"""A fake model server per test, and settings that point the real app at it.

``provider`` is parametrized over the three wire paths: ``responses`` (an Open Responses
server at a base URL), ``chat`` (a Chat Completions server) and ``openai`` (the
``openai:MODEL`` form, pointed at the fake with ``OPENAI_BASE_URL``, the OpenAI client's
own convention).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from app.settings import Settings
from tests.fakes.model_server import FakeModelServer, running_model_server
from tests.support.models import API_KEY, model_spec

PROVIDERS = ["responses", "chat", "openai"]


@pytest.fixture
async def fake_model() -> AsyncIterator[FakeModelServer]:
    async with running_model_server(FakeModelServer(api_key=API_KEY)) as server:
        yield server


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def model_settings(
    make_settings: Callable[..., Settings],
    fake_model: FakeModelServer,
    provider: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., Settings]:
    """``make_settings`` with every model pointed at ``fake_model`` over ``provider``."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if provider == "openai":
        monkeypatch.setenv("OPENAI_BASE_URL", fake_model.base_url())

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "model": model_spec(provider, fake_model),
            "model_api_key": API_KEY,
            "model_timeout": 5,
            "model_call_timeout": 20,
            "suggest_timeout": 5,
        }
        values.update(overrides)
        return make_settings(**values)

    return make
