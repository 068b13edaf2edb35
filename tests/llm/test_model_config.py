"""The pure parts: model specs and settings, building the models, the retry policy, error
classification, cleaning suggestions and titles, and the shared instruction text."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx2
import openai
import pytest
from agents import ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel
from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError, ModelTimeoutError
from agents.retry import ModelRetryNormalizedError, RetryPolicyContext

from app.llm.errors import classify_model_error
from app.llm.offline import OfflineModel
from app.llm.providers import (
    KEYLESS_PLACEHOLDER,
    RETRY_MAX_DELAY,
    backoff_delay,
    build_models,
    resolve_api_key,
    transient_retry_policy,
)
from app.llm.spec import ModelSpec, parse_model_spec
from app.llm.suggest import clean_suggestions, clean_title
from app.settings import SettingsError, load_settings
from connectors.instructions import CONNECTOR_RULES, connector_instructions, context_note

# ----------------------------------------------------------------------------- specs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("offline", ModelSpec("offline")),
        (" Offline ", ModelSpec("offline")),
        ("openai:gpt-4.1-mini", ModelSpec("openai", "gpt-4.1-mini")),
        (
            "responses:openai/gpt-oss-20b@http://localhost:8000/v1",
            ModelSpec("responses", "openai/gpt-oss-20b", "http://localhost:8000/v1"),
        ),
        (
            "chat:qwen2.5:7b@http://127.0.0.1:11434/v1/",
            ModelSpec("chat", "qwen2.5:7b", "http://127.0.0.1:11434/v1"),
        ),
        (
            "CHAT:hf.co/org/model:Q4_K_M@https://gpu.internal:8443/v1",
            ModelSpec("chat", "hf.co/org/model:Q4_K_M", "https://gpu.internal:8443/v1"),
        ),
    ],
)
def test_model_specs_parse(text: str, expected: ModelSpec) -> None:
    assert parse_model_spec(text) == expected
    assert parse_model_spec(str(expected)) == expected  # str() round-trips


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("gpt-4o", "expected offline, openai:MODEL"),
        ("ollama:llama3@http://x/v1", "expected offline, openai:MODEL"),
        ("chat:llama3", "needs a base URL"),
        ("chat:llama3@localhost:11434/v1", "must start with http:// or https://"),
        ("chat:@http://localhost/v1", "model name is missing"),
        ("responses:my model@http://localhost/v1", "is not a model name"),
        ("openai:gpt-4o@https://example.org/v1", "takes no base URL"),
        ("chat:m@http://user:pw@localhost/v1", "must not carry credentials"),
        ("chat:m@http://localhost:99999999/v1", "invalid port"),
        ("chat:m@http://localhost/v1?x=1", "query or fragment"),
    ],
)
def test_bad_model_specs_say_what_was_expected(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace("(", r"\(")):
        parse_model_spec(text)


@pytest.mark.parametrize(
    ("overrides", "variable"),
    [
        ({"model": "gpt-4o"}, "SWITCHBOARD_MODEL"),
        ({"connector_model": "chat:small"}, "SWITCHBOARD_CONNECTOR_MODEL"),
        ({"suggest_model": "tiny"}, "SWITCHBOARD_SUGGEST_MODEL"),
        ({"model_timeout": 0}, "SWITCHBOARD_MODEL_TIMEOUT"),
        ({"model_call_timeout": -1}, "SWITCHBOARD_MODEL_CALL_TIMEOUT"),
        ({"model_max_retries": 11}, "SWITCHBOARD_MODEL_MAX_RETRIES"),
        ({"suggest_timeout": 0}, "SWITCHBOARD_SUGGEST_TIMEOUT"),
        ({"timezone": "Mars/Olympus_Mons"}, "SWITCHBOARD_TIMEZONE"),
        ({"locale": "en US"}, "SWITCHBOARD_LOCALE"),
        ({"tracing": "sometimes"}, "SWITCHBOARD_TRACING"),
    ],
)
def test_bad_model_settings_fail_naming_the_variable(
    overrides: dict[str, Any], variable: str
) -> None:
    with pytest.raises(SettingsError, match=variable):
        load_settings(**overrides)


def test_an_openai_model_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SettingsError, match="SWITCHBOARD_MODEL_API_KEY or OPENAI_API_KEY"):
        load_settings(model="openai:gpt-4.1-mini")
    with pytest.raises(SettingsError, match="SWITCHBOARD_CONNECTOR_MODEL=openai:… needs"):
        load_settings(connector_model="openai:gpt-4.1-nano")
    assert load_settings(model="openai:gpt-4.1-mini", model_api_key="sk-a").model_api_key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    settings = load_settings(model="openai:gpt-4.1-mini")
    assert resolve_api_key(settings) == "sk-from-env"
    # Our own variable wins over OpenAI's.
    assert resolve_api_key(load_settings(model_api_key="sk-ours")) == "sk-ours"


def test_settings_never_show_the_key() -> None:
    settings = load_settings(model="chat:m@http://localhost:1/v1", model_api_key="sk-secret-1")
    assert "sk-secret-1" not in repr(settings) and "sk-secret-1" not in str(settings.model_dump())


# ----------------------------------------------------------------------------- building


def test_the_default_is_the_offline_model_with_nothing_around_it() -> None:
    models = build_models(load_settings(), environ={})
    assert isinstance(models.orchestrator, OfflineModel) and models.connector is models.orchestrator
    assert models.suggest is None and models.suggestions_enabled
    assert models.model_settings == ModelSettings()  # no timeout task, no retry wrapper
    config = models.run_config()
    assert (
        config.tracing_disabled is True
        and config.model_provider.get_model(None) is models.orchestrator
    )


async def test_real_models_use_the_sdk_classes_with_our_timeouts_and_no_client_retries() -> None:
    base = "http://127.0.0.1:9/v1"
    settings = load_settings(
        model=f"responses:big@{base}",
        connector_model=f"chat:small@{base}",
        suggest_model="off",
        model_timeout=7,
        model_call_timeout=90,
        model_max_retries=3,
    )
    models = build_models(settings, environ={"OPENAI_API_KEY": "sk-env"})
    try:
        assert isinstance(models.orchestrator, OpenAIResponsesModel)
        assert isinstance(models.connector, OpenAIChatCompletionsModel)
        assert not models.suggestions_enabled and models.specs["suggest"] == "off"
        client = models.orchestrator._client
        assert client is models.connector._client  # one client per endpoint
        assert str(client.base_url).rstrip("/") == base and client.max_retries == 0
        assert client.timeout.read == 7 and client.timeout.connect == 7
        assert client.api_key == "sk-env"
        assert models.model_settings.timeout == 90 and models.model_settings.include_usage
        assert models.model_settings.retry is not None
        assert models.model_settings.retry.max_retries == 3
        provider = models.run_config().model_provider
        named = provider.get_model("other-model")
        assert isinstance(named, OpenAIResponsesModel) and named.model == "other-model"
        assert isinstance(provider.get_model(f"chat:x@{base}"), OpenAIChatCompletionsModel)
    finally:
        await models.aclose()


async def test_a_keyless_local_server_gets_a_placeholder_and_tracing_is_opt_in() -> None:
    settings = load_settings(model="chat:llama3.2@http://127.0.0.1:11434/v1", tracing=True)
    models = build_models(settings, environ={})
    try:
        assert models.orchestrator._client.api_key == KEYLESS_PLACEHOLDER  # type: ignore[attr-defined]
        assert models.run_config().tracing_disabled is False
    finally:
        await models.aclose()
        build_models(load_settings(), environ={})  # back to tracing off for the process


# ----------------------------------------------------------------------------- retries


def _context(attempt: int = 1, **normalized: Any) -> RetryPolicyContext:
    return RetryPolicyContext(
        error=RuntimeError("x"),
        attempt=attempt,
        max_retries=3,
        stream=True,
        normalized=ModelRetryNormalizedError(**normalized),
    )


@pytest.mark.parametrize(
    ("normalized", "retry"),
    [
        ({"status_code": 429}, True),
        ({"status_code": 500}, True),
        ({"status_code": 503}, True),
        ({"status_code": 408}, True),
        ({"is_network_error": True}, True),
        ({"is_timeout": True}, True),
        ({"status_code": 400}, False),
        ({"status_code": 401}, False),
        ({"status_code": 404}, False),
        ({}, False),
    ],
)
def test_only_transient_failures_are_retried(normalized: dict[str, Any], retry: bool) -> None:
    assert transient_retry_policy(_context(**normalized)).retry is retry


def test_backoff_grows_is_capped_and_honours_retry_after() -> None:
    first, third = backoff_delay(1), backoff_delay(3)
    assert 0.4 <= first <= 0.6 and 1.6 <= third <= 2.4
    assert backoff_delay(20) <= RETRY_MAX_DELAY * 1.2
    assert backoff_delay(1, retry_after=0.05) == 0.05
    assert backoff_delay(1, retry_after=600) == RETRY_MAX_DELAY
    decision = transient_retry_policy(_context(status_code=429, retry_after=1.5))
    assert decision.retry and decision.delay == 1.5


# ----------------------------------------------------------------------------- errors

_REQUEST = httpx2.Request("POST", "http://127.0.0.1:9/v1/responses")


def _status(
    cls: type[openai.APIStatusError], status: int, code: str | None = None, message: str = "boom"
) -> openai.APIStatusError:
    response = httpx2.Response(status, request=_REQUEST, headers={"x-request-id": "req_123"})
    return cls(
        f"Error code: {status} - {message}",
        response=response,
        body={"code": code, "message": message, "type": "x"},
    )


@pytest.mark.parametrize(
    ("exc", "code", "retryable"),
    [
        (_status(openai.RateLimitError, 429, "rate_limit_exceeded"), "rate_limited", True),
        (_status(openai.InternalServerError, 503), "model_unavailable", True),
        (_status(openai.APIStatusError, 408), "model_unavailable", True),
        (_status(openai.BadRequestError, 400), "model_error", False),
        (_status(openai.AuthenticationError, 401), "model_error", False),
        (_status(openai.NotFoundError, 404), "model_error", False),
        (openai.APITimeoutError(request=_REQUEST), "model_unavailable", True),
        (openai.APIConnectionError(request=_REQUEST), "model_unavailable", True),
        (ModelTimeoutError(30), "model_unavailable", True),
        (
            openai.APIError("x", request=_REQUEST, body={"code": "server_error"}),
            "model_unavailable",
            True,
        ),
        (
            openai.APIError("x", request=_REQUEST, body={"code": "rate_limit_exceeded"}),
            "rate_limited",
            True,
        ),
        (
            ModelBehaviorError(
                "Responses stream ended with terminal event `response.failed`. "
                "status=failed; error=ResponseError(code='server_error', message='x')."
            ),
            "model_unavailable",
            True,
        ),
        (
            ModelBehaviorError(
                "Responses stream ended with terminal event `error`. "
                "code=invalid_prompt; message=x."
            ),
            "model_error",
            False,  # the request is at fault: neither retried nor worth retrying
        ),
        (
            ModelBehaviorError(
                "Responses stream ended with terminal event `response.failed`. "
                "status=failed; error=ResponseError(code='something_new', message='x')."
            ),
            "model_error",
            True,  # any other failure of a response is the server's, like a 5xx
        ),
        (
            ModelBehaviorError("Responses stream ended with terminal event `response.incomplete`."),
            "model_error",
            False,
        ),
        (ModelBehaviorError("Tool lookup not found in agent Yelp"), "model_error", True),
        (MaxTurnsExceeded("Max turns (12) exceeded"), "model_error", False),
        (RuntimeError("a bug"), "model_error", True),
    ],
)
def test_model_errors_are_classified(exc: BaseException, code: str, retryable: bool) -> None:
    failure = classify_model_error(exc)
    assert (failure.code, failure.retryable) == (code, retryable)
    assert failure.event().payload() == {
        "code": code,
        "message": failure.message,
        "retryable": retryable,
    }
    assert "boom" not in failure.message  # never the provider's own text


def test_wrapped_provider_errors_keep_their_facts() -> None:
    cause = _status(openai.BadRequestError, 400, "context_length_exceeded", "too long: <body>")
    try:
        raise RuntimeError("model step failed") from cause
    except RuntimeError as exc:
        failure = classify_model_error(exc)
    assert failure.code == "model_error" and "too long for the model" in failure.message
    assert failure.log_fields(cause) == {
        "error_code": "model_error",
        "error_type": "BadRequestError",
        "status": 400,
        "provider_code": "context_length_exceeded",
        "request_id": "req_123",
    }
    assert classify_model_error(RuntimeError("x")).provider_error is False


# ----------------------------------------------------------------------------- suggestions


def test_suggestions_are_cleaned() -> None:
    raw = [
        "  1. Show reviews for Oishii ",
        "- Email this list to Ana",
        '"Find cheaper sushi"',
        "show reviews for oishii",
        "",
        "x" * 101,
        "find sushi in boston",
        "What about tomorrow?",
        "One too many",
    ]
    assert clean_suggestions(raw, "Find sushi in Boston") == [
        "Show reviews for Oishii",
        "Email this list to Ana",
        "Find cheaper sushi",
        "What about tomorrow?",
    ]
    assert clean_suggestions([], "hi") == []


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Sushi in Boston", "Sushi in Boston"),
        ('  "Sushi in Boston." ', "Sushi in Boston"),
        ("Title: March spending!", "March spending"),
        ("# Weekend   plans\n", "Weekend plans"),
        ("", "Find sushi in Boston"),
        ("a " * 50, ("a " * 29).strip() + "…"),
    ],
)
def test_titles_are_cleaned(raw: str, expected: str) -> None:
    assert clean_title(raw, "find sushi in Boston") == expected


# ----------------------------------------------------------------------------- instructions


def test_the_context_note_gives_the_local_date_and_locale() -> None:
    late_evening_utc = datetime(2025, 3, 3, 23, 30, tzinfo=UTC)
    note = context_note(late_evening_utc, "Europe/Paris", "fr-FR")
    assert "Today is Tuesday, 2025-03-04, and the time is 00:30 (Europe/Paris)" in note
    assert "locale is fr-FR" in note
    assert "Monday, 2025-03-03" in context_note(late_evening_utc)  # UTC by default
    assert "(UTC)" in context_note(late_evening_utc, "Not/AZone")  # never raises


def test_connector_instructions_take_the_users_locale_over_the_servers() -> None:
    class Context:
        locale = "de-DE"
        settings = load_settings(timezone="Asia/Tokyo", locale="en-GB")

    now = datetime(2025, 3, 3, 23, 30, tzinfo=UTC)
    text = connector_instructions("You are Weather.", Context(), now)
    assert text.startswith("You are Weather.") and CONNECTOR_RULES in text
    assert "locale is de-DE" in text and "(Asia/Tokyo)" in text and "2025-03-04" in text


# ----------------------------------------------------------------------------- memory


async def test_the_memory_budget_and_summary_model_follow_the_settings() -> None:
    from app.llm.summarise import Summariser
    from app.streaming import memory_policy
    from websocket.history_budget import Budget

    base = "http://127.0.0.1:9/v1"
    cases = [
        # (settings, budget, summary model: None = the offline summary, else its role)
        ({}, Budget(128_000, 16_000), None),
        ({"model": "openai:gpt-4o", "model_api_key": "sk-x"}, Budget(128_000, 16_000), "suggest"),
        (
            {"model": f"chat:qwen@{base}", "model_context_tokens": 8_192},
            Budget(8_192, 1_024),
            "suggest",
        ),
        # ``off`` turns suggestions off, not the memory: the connector model summarises.
        (
            {"model": f"responses:m@{base}", "suggest_model": "off"},
            Budget(32_768, 4_096),
            "connector",
        ),
        ({"model": f"responses:m@{base}", "suggest_model": "offline"}, Budget(32_768, 4_096), None),
        (
            {
                "model": f"responses:m@{base}",
                "connector_model": "openai:gpt-4",
                "model_api_key": "k",
            },
            Budget(8_192, 1_024),  # the smaller of the two contexts
            "suggest",
        ),
        ({"model_context_tokens": 4_000, "answer_reserve_tokens": 500}, Budget(4_000, 500), None),
    ]
    for values, budget, role in cases:
        settings = load_settings(**values)
        models = build_models(settings, environ={})
        try:
            policy = memory_policy(settings, models)
            summariser = policy.summarise.__self__  # type: ignore[attr-defined]
            assert isinstance(summariser, Summariser)
            assert policy.budget == budget, values
            expected = None if role is None else getattr(models, role)
            assert summariser.model is expected, values
        finally:
            await models.aclose()


def test_an_answer_reserve_as_large_as_the_context_is_refused_at_start() -> None:
    from app.streaming import memory_policy

    settings = load_settings(model_context_tokens=4_000, answer_reserve_tokens=4_000)
    with pytest.raises(SettingsError, match="SWITCHBOARD_ANSWER_RESERVE_TOKENS .* less than"):
        memory_policy(settings, build_models(settings, environ={}))
    with pytest.raises(SettingsError, match="SWITCHBOARD_MODEL_CONTEXT_TOKENS: .* 1024"):
        load_settings(model_context_tokens=100)
