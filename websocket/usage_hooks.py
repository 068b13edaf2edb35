"""Token usage per model, counted as each model call ends (``switchboard_model_*`` in
``/metrics``): the run's hooks see which agent made the call, so a turn whose agents run
on different models (``SWITCHBOARD_CONNECTOR_MODEL``) is counted against each."""

from __future__ import annotations

from typing import Any

from agents import Agent, ModelResponse, RunContextWrapper, RunHooks

from websocket.metrics import Metrics


def model_label(model: object, default: str) -> str:
    """The name of the model an agent runs on: an SDK model's ``model`` attribute, an
    agent's model name (a spec's ``kind:`` and ``@base_url`` dropped), else ``default``
    (the deployment's main model, which agents without a model of their own run on)."""
    name = model if isinstance(model, str) else getattr(model, "model", None)
    if not isinstance(name, str) or not name:
        return default
    kind, colon, rest = name.partition(":")
    if colon and kind in ("openai", "responses", "chat"):
        name = rest.rsplit("@http", 1)[0]
    return name[:100]


class UsageHooks(RunHooks[Any]):
    """Adds each finished model call's tokens to the metrics; shared by every run."""

    def __init__(self, metrics: Metrics, default_model: str) -> None:
        self.metrics = metrics
        self.default_model = default_model

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        usage = response.usage
        model = model_label(agent.model, self.default_model)
        self.metrics.count_tokens(
            model, usage.input_tokens, usage.output_tokens, usage.total_tokens
        )
