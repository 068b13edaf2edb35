"""Token usage per model in ``/metrics``, counted as each model call ends."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from app.settings import Settings
from tests.support.clients import open_client
from tests.support.servers import serve
from tests.telemetry.spans import metric
from websocket.usage_hooks import model_label


@pytest.mark.parametrize(
    ("model", "label"),
    [
        ("offline", "offline"),
        ("openai:gpt-4.1-mini", "gpt-4.1-mini"),
        ("chat:qwen2.5:7b@http://localhost:11434/v1", "qwen2.5:7b"),
        ("responses:m@https://user:pw@gateway.example/v1", "m"),  # never the URL
        ("gpt-4o", "gpt-4o"),  # a plug-in agent's bare model name
        (None, "main"),  # an agent on the run's default model
        ("", "main"),
    ],
)
def test_the_model_label(model: str | None, label: str) -> None:
    assert model_label(model, "main") == label


def test_an_sdk_model_is_labelled_by_its_name() -> None:
    class Named:
        model = "fake-large"

    assert model_label(Named(), "main") == "fake-large"
    assert model_label(object(), "main") == "main"


async def test_each_turns_tokens_are_counted_against_its_model(
    make_settings: Callable[..., Settings],
) -> None:
    async with serve(make_settings()) as live:
        async with live.client() as http:
            before = (await http.get("/metrics")).text
        assert metric(before, "switchboard_model_tokens_total", "offline") == 0
        usages = []
        async with open_client(live.ws_url(uuid.uuid4().hex), auto_approve=True) as client:
            for prompt in ("find sushi in Boston and show my account balances", "hello"):
                events = await client.turn(prompt)
                usages.append(next(e for e in events if e["type"] == "end_of_stream")["usage"])
        async with live.client() as http:
            text = (await http.get("/metrics")).text
    assert all(usage["input_tokens"] > 0 for usage in usages)
    for sample, key in (
        ("switchboard_model_input_tokens_total", "input_tokens"),
        ("switchboard_model_output_tokens_total", "output_tokens"),
        ("switchboard_model_tokens_total", "total_tokens"),
        ("switchboard_model_requests_total", "requests"),
    ):
        assert metric(text, sample, "offline") == sum(usage[key] for usage in usages), sample
