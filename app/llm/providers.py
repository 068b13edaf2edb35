"""The models a deployment runs on, built from the settings (``SWITCHBOARD_MODEL`` & co.).

``build_models(settings)`` gives one model for the orchestrator, one for the connector
agents (``SWITCHBOARD_CONNECTOR_MODEL``, e.g. a cheaper one) and one for suggestions and
titles (``SWITCHBOARD_SUGGEST_MODEL``), plus the ``RunConfig`` every turn runs with.

Real models are the Agents SDK's own ``OpenAIResponsesModel`` / ``OpenAIChatCompletionsModel``
over an ``AsyncOpenAI`` client pointed at the configured base URL, with the client's own
retries off. Retrying is the runner's (``ModelSettings.retry``): it retries a failed
*streamed* call only while nothing but ``response.created`` / ``response.in_progress`` has
been streamed, which is exactly "before the first token", with our backoff and policy below.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents import (
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    set_tracing_disabled,
    set_tracing_export_api_key,
)
from agents.models.interface import Model, ModelProvider
from agents.retry import ModelRetrySettings, RetryDecision, RetryPolicyContext
from openai import AsyncOpenAI, Timeout

from app.llm.errors import is_transient_failure_event
from app.llm.offline import OfflineModelProvider
from app.llm.offline_knowledge import OfflineKnowledge
from app.llm.spec import OPENAI_BASE_URL, ModelSpec, parse_model_spec, parse_optional_spec
from app.llm.upstream import UpstreamResponsesModel, drop_vendor_items
from app.settings import Settings, SettingsError
from connectors.registry import Connector

logger = logging.getLogger("switchboard.llm")

# Servers without authentication (a local Ollama or vLLM) still get a Bearer value: the
# OpenAI client refuses to start without one, and these servers ignore it.
KEYLESS_PLACEHOLDER = "no-key"
SUGGEST_OFF = "off"
CONNECT_TIMEOUT = 10.0
BACKGROUND_GRACE = 2.0

# Backoff between retries of one model call (seconds); a server's Retry-After wins, capped.
RETRY_INITIAL_DELAY = 0.5
RETRY_MAX_DELAY = 8.0
RETRY_MULTIPLIER = 2.0

# The OpenAI client logs whole request bodies at DEBUG; they carry the user's data.
QUIET_LOGGERS = ("openai", "httpx", "httpx2", "httpcore", "httpcore2")


def resolve_api_key(settings: Settings, environ: Mapping[str, str] = os.environ) -> str | None:
    """``SWITCHBOARD_MODEL_API_KEY``, else ``OPENAI_API_KEY``, else None."""
    if settings.model_api_key is not None and settings.model_api_key.get_secret_value():
        return settings.model_api_key.get_secret_value()
    return environ.get("OPENAI_API_KEY") or None


def is_transient(context: RetryPolicyContext) -> bool:
    """Worth another try: rate limits, server errors, timeouts and broken connections, and
    a streamed ``response.failed`` / ``error`` whose code does not blame the request (it
    reaches the policy only when it came before the first token: app.llm.upstream)."""
    error = context.normalized
    status = error.status_code
    return (
        error.is_network_error
        or error.is_timeout
        or status in (408, 429)
        or (status is not None and status >= 500)
        or is_transient_failure_event(context.error)
    )


def backoff_delay(attempt: int, retry_after: float | None = None) -> float:
    """Exponential with jitter; a server's Retry-After is honoured up to the cap."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), RETRY_MAX_DELAY)
    base = min(RETRY_INITIAL_DELAY * RETRY_MULTIPLIER ** max(attempt - 1, 0), RETRY_MAX_DELAY)
    return base * (0.8 + 0.4 * random.random())


def transient_retry_policy(context: RetryPolicyContext) -> RetryDecision:
    if not is_transient(context):
        return RetryDecision(retry=False)
    return RetryDecision(
        retry=True,
        delay=backoff_delay(context.attempt, context.normalized.retry_after),
        reason=f"transient model failure (status {context.normalized.status_code})",
    )


def turn_model_settings(settings: Settings) -> ModelSettings:
    """Timeout and retries for every agent's calls; usage reported by Chat Completions too."""
    return ModelSettings(
        timeout=settings.model_call_timeout,
        retry=ModelRetrySettings(
            max_retries=settings.model_max_retries, policy=transient_retry_policy
        ),
        include_usage=True,
    )


def suggest_model_settings(settings: Settings) -> ModelSettings:
    # Suggestions are a nicety: one try, short timeout, never a retry.
    return ModelSettings(
        timeout=settings.suggest_timeout,
        retry=ModelRetrySettings(max_retries=0),
        include_usage=True,
    )


class ModelFactory:
    """Makes SDK models from specs, one ``AsyncOpenAI`` client per endpoint, and closes them."""

    def __init__(
        self,
        settings: Settings,
        environ: Mapping[str, str] = os.environ,
        connectors: Iterable[Connector] = (),
    ) -> None:
        self._settings = settings
        self._environ = environ
        self._timeout = settings.model_timeout
        self._clients: dict[str, AsyncOpenAI] = {}
        # The offline model knows what the connectors' offline hints tell it.
        self._offline = OfflineModelProvider(
            delta_delay=settings.offline_delta_delay, connectors=connectors
        )

    @property
    def offline_knowledge(self) -> OfflineKnowledge:
        return self._offline.knowledge

    def base_url_of(self, spec: ModelSpec) -> str:
        if spec.kind == "openai":
            # OPENAI_BASE_URL is the OpenAI client's own convention (proxies, gateways).
            return (self._environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).rstrip("/")
        assert spec.base_url is not None
        return spec.base_url

    def client_for(self, spec: ModelSpec) -> AsyncOpenAI:
        base_url = self.base_url_of(spec)
        client = self._clients.get(base_url)
        if client is None:
            api_key = resolve_api_key(self._settings, self._environ)
            if api_key is None and spec.kind == "openai":
                raise SettingsError(
                    f"SWITCHBOARD_MODEL: {spec} needs an API key; set "
                    "SWITCHBOARD_MODEL_API_KEY or OPENAI_API_KEY"
                )
            timeout = Timeout(self._timeout, connect=min(CONNECT_TIMEOUT, self._timeout))
            client = AsyncOpenAI(
                api_key=api_key or KEYLESS_PLACEHOLDER,
                base_url=base_url,
                timeout=timeout,
                max_retries=0,
            )
            self._clients[base_url] = client
        return client

    def model_for(self, spec: ModelSpec) -> Model:
        if spec.kind == "offline":
            return self._offline.get_model(None)
        client = self.client_for(spec)
        if spec.kind == "chat":
            return OpenAIChatCompletionsModel(model=spec.model, openai_client=client)
        return UpstreamResponsesModel(model=spec.model, openai_client=client)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


class SwitchboardModelProvider(ModelProvider):
    """For agents whose ``model`` is a name (plug-ins): a full spec, or a bare model name
    served by the same endpoint as the default model. ``None`` is the default model."""

    def __init__(self, factory: ModelFactory, default_spec: ModelSpec, default: Model) -> None:
        self._factory = factory
        self._default_spec = default_spec
        self._models: dict[str | None, Model] = {None: default, "": default}

    def get_model(self, model_name: str | None) -> Model:
        model = self._models.get(model_name)
        if model is None:
            assert model_name is not None
            try:
                spec = parse_model_spec(model_name)
            except ValueError:
                base = self._default_spec
                spec = base if base.is_offline else ModelSpec(base.kind, model_name, base.base_url)
            model = self._models[model_name] = self._factory.model_for(spec)
        return model


@dataclass
class ConfiguredModels:
    """Everything about models a running server needs; ``aclose()`` on shutdown."""

    specs: dict[str, str]  # role → spec, for the start-up log (never a key)
    orchestrator: Model
    connector: Model
    suggest: Model | None  # None: the offline suggestions and titles (from ``offline``)
    suggestions_enabled: bool
    provider: ModelProvider
    model_settings: ModelSettings
    suggest_settings: ModelSettings
    tracing: bool  # the SDK's tracing (to OpenAI, or to OpenTelemetry: app.telemetry)
    factory: ModelFactory | None = field(default=None, repr=False)
    offline: OfflineKnowledge = field(default_factory=OfflineKnowledge, repr=False)
    _background: set[asyncio.Task[None]] = field(default_factory=set, repr=False)
    # The SDK's spans carry the model's input and output (it drops the whole response,
    # model name and token counts too, without them). Off unless SWITCHBOARD_TRACE_CONTENT,
    # except when its spans go to OpenTelemetry alone: the instrumentation then hides the
    # text from every span (app.telemetry_otel) and keeps the rest.
    trace_content: bool = False

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run model work that nobody waits for (chat titles); ``aclose`` ends it."""
        task = asyncio.create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def run_config(self, *, suggest: bool = False) -> RunConfig:
        return RunConfig(
            model_provider=self.provider,
            model_settings=self.suggest_settings if suggest else self.model_settings,
            tracing_disabled=not self.tracing,
            trace_include_sensitive_data=self.trace_content,
            # No model is sent a model server's vendor items (app.llm.upstream).
            call_model_input_filter=drop_vendor_items,
        )

    async def aclose(self, grace: float = BACKGROUND_GRACE) -> None:
        """Let background work finish for ``grace`` seconds, cancel the rest, close clients."""
        pending = set(self._background)
        if pending:
            _, pending = await asyncio.wait(pending, timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if self.factory is not None:
            await self.factory.aclose()


def _suggest_spec(settings: Settings, connector: ModelSpec) -> ModelSpec | None:
    value = (settings.suggest_model or "").strip()
    if value.lower() == SUGGEST_OFF:
        return None
    return parse_optional_spec(value) or connector


def quiet_client_loggers() -> None:
    """Keep HTTP client debug logs (request bodies, full URLs) out of our log."""
    for name in QUIET_LOGGERS:
        client_logger = logging.getLogger(name)
        if client_logger.level == logging.NOTSET or client_logger.level < logging.WARNING:
            client_logger.setLevel(logging.WARNING)


def build_models(
    settings: Settings,
    environ: Mapping[str, str] = os.environ,
    *,
    connectors: Iterable[Connector] = (),
    otel: bool = False,
) -> ConfiguredModels:
    """The models ``settings`` name; the offline model knows ``connectors``' offline hints.
    ``otel``: OpenTelemetry tracing is on (app.telemetry), so the SDK traces its runs even
    when tracing to OpenAI is off. Raises ``SettingsError`` for an unusable combination."""
    main = parse_model_spec(settings.model)
    connector = parse_optional_spec(settings.connector_model) or main
    suggest = _suggest_spec(settings, connector)
    factory = ModelFactory(settings, environ, connectors)
    orchestrator_model = factory.model_for(main)
    specs = {
        "orchestrator": str(main),
        "connector": str(connector),
        "suggest": str(suggest) if suggest is not None else SUGGEST_OFF,
    }
    everything_offline = all(spec.is_offline for spec in (main, connector))

    set_tracing_disabled(not (settings.tracing or otel))
    if settings.tracing and main.kind == "openai":
        key = resolve_api_key(settings, environ)
        if key:
            set_tracing_export_api_key(key)
    if not everything_offline or (suggest is not None and not suggest.is_offline):
        quiet_client_loggers()

    return ConfiguredModels(
        specs=specs,
        orchestrator=orchestrator_model,
        connector=factory.model_for(connector),
        suggest=(
            factory.model_for(suggest) if suggest is not None and not suggest.is_offline else None
        ),
        suggestions_enabled=suggest is not None,
        provider=SwitchboardModelProvider(factory, main, orchestrator_model),
        # The offline model never fails or stalls: no timeout task or retry around it.
        model_settings=ModelSettings() if everything_offline else turn_model_settings(settings),
        suggest_settings=suggest_model_settings(settings),
        tracing=settings.tracing or otel,
        trace_content=settings.trace_content or (otel and not settings.tracing),
        factory=factory,
        offline=factory.offline_knowledge,
    )


def describe(models: ConfiguredModels) -> dict[str, Any]:
    """Log fields naming the models in use (specs carry no keys: see ``app.llm.spec``)."""
    return {f"{role}_model": spec for role, spec in models.specs.items()}
