"""What a failed model call means for the user: the ``error`` event of docs/protocol.md §5.

Provider errors carry the provider's own text, which may echo the request (prompts, tool
schemas) and, from odd servers, even the key. So neither the event nor the log line
repeats it: they carry only facts we can vouch for — the HTTP status, the provider's
short error code, its request id and the exception type. Pure: no I/O.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import openai
from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError, ModelTimeoutError

from wire.events import ErrorEvent

FailureCode = Literal["rate_limited", "model_unavailable", "model_error"]

_SAFE_TOKEN = re.compile(r"^[A-Za-z0-9_.:\-]{1,80}$")
# The SDK turns a streamed `response.failed` / `error` event into a ModelBehaviorError whose
# text names the provider's code; nothing else of that text is used.
_TERMINAL = "Responses stream ended with terminal event"
_TERMINAL_CODE = re.compile(r"\bcode=['\"]?([A-Za-z0-9_.\-]+)")
_RATE_CODES = ("rate_limit", "too_many_requests", "rate_limited", "quota")
_UNAVAILABLE_CODES = ("server_error", "overloaded", "unavailable", "timeout", "server_busy")
# Codes of a failed response that blame the request itself: the same request would fail
# again, so it is neither retried nor reported as retryable. Any other failure of a
# response is the server's, like a 5xx.
_REQUEST_FAULT_CODES = (
    "invalid",
    "context_length",
    "content_filter",
    "not_found",
    "unsupported",
    "policy",
)


def _blames_request(code: str | None) -> bool:
    lowered = (code or "").lower()
    return any(word in lowered for word in _REQUEST_FAULT_CODES)


def is_transient_failure_event(exc: BaseException) -> bool:
    """``exc`` is a streamed ``response.failed`` / ``error`` event (not ``incomplete``)
    whose code, if any, does not blame the request: worth another try."""
    if not isinstance(exc, ModelBehaviorError):
        return False
    text = str(exc)
    if not text.startswith(_TERMINAL) or "response.incomplete" in text:
        return False
    match = _TERMINAL_CODE.search(text)
    return not _blames_request(match.group(1) if match else None)


@dataclass(frozen=True)
class ModelFailure:
    code: FailureCode
    message: str
    retryable: bool
    status: int | None = None
    provider_code: str | None = None
    request_id: str | None = None
    provider_error: bool = True  # False: not the provider's doing (a bug, a config slip)

    def event(self) -> ErrorEvent:
        """The ``error`` event the user sees."""
        return ErrorEvent(code=self.code, message=self.message, retryable=self.retryable)

    def log_fields(self, exc: BaseException) -> dict[str, Any]:
        fields: dict[str, Any] = {"error_code": self.code, "error_type": type(exc).__name__}
        for key, value in (
            ("status", self.status),
            ("provider_code", self.provider_code),
            ("request_id", self.request_id),
        ):
            if value is not None:
                fields[key] = value
        return fields


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _safe(value: object) -> str | None:
    return value if isinstance(value, str) and _SAFE_TOKEN.match(value) else None


def _body_code(body: object) -> str | None:
    """The short error code of an OpenAI-style error body (``{"error": {"code", "type"}}``)."""
    if not isinstance(body, Mapping):
        return None
    inner = body.get("error") if isinstance(body.get("error"), Mapping) else body
    assert isinstance(inner, Mapping)
    return _safe(inner.get("code")) or _safe(inner.get("type"))


def _by_code(
    code: str | None, status: int | None = None, request_id: str | None = None
) -> ModelFailure:
    lowered = (code or "").lower()
    if any(word in lowered for word in _RATE_CODES):
        return rate_limited(status, code, request_id)
    if any(word in lowered for word in _UNAVAILABLE_CODES):
        return ModelFailure(
            "model_unavailable",
            "The model service failed while answering. Please try again.",
            True,
            status,
            code,
            request_id,
        )
    if _blames_request(code):
        return ModelFailure(
            "model_error",
            "The model could not answer this request (its service reported "
            f"{code}); trying again will not help.",
            False,
            status,
            code,
            request_id,
        )
    return ModelFailure(
        "model_error",
        "The model stopped with an error while answering. Please try again.",
        True,
        status,
        code,
        request_id,
    )


def rate_limited(status: int | None, code: str | None, request_id: str | None) -> ModelFailure:
    return ModelFailure(
        "rate_limited",
        "The model provider is rate limiting this server. Please try again in a moment.",
        True,
        status,
        code,
        request_id,
    )


def _status_failure(exc: openai.APIStatusError) -> ModelFailure:
    status = exc.status_code
    code = _body_code(exc.body) or _safe(getattr(exc, "code", None))
    request_id = _safe(exc.request_id)
    if status == 429:
        return rate_limited(status, code, request_id)
    if status == 408 or status >= 500:
        return ModelFailure(
            "model_unavailable",
            f"The model service is unavailable right now (HTTP {status}). Please try again.",
            True,
            status,
            code,
            request_id,
        )
    if status in (401, 403):
        message = (
            f"The model provider refused this server's credentials (HTTP {status}); "
            "the server's model settings need attention."
        )
    elif status == 404:
        message = (
            "The model provider does not know the configured model or endpoint "
            "(HTTP 404); the server's model settings need attention."
        )
    elif code and "context_length" in code:
        message = "This chat is too long for the model. Please start a new chat."
    else:
        message = f"The model provider rejected the request (HTTP {status})."
    return ModelFailure("model_error", message, False, status, code, request_id)


def classify_model_error(exc: BaseException) -> ModelFailure:
    """The user-facing meaning of an exception that ended a turn."""
    for candidate in _chain(exc):
        if isinstance(candidate, openai.APIStatusError):
            return _status_failure(candidate)
        if isinstance(candidate, openai.APITimeoutError | ModelTimeoutError | TimeoutError):
            return ModelFailure(
                "model_unavailable", "The model did not answer in time. Please try again.", True
            )
        if isinstance(candidate, openai.APIConnectionError):
            return ModelFailure(
                "model_unavailable",
                "The model service cannot be reached right now. Please try again.",
                True,
            )
        if isinstance(candidate, openai.APIError):
            # An error the server sent inside a stream (no HTTP status).
            return _by_code(
                _body_code(candidate.body) or _safe(candidate.code),
                request_id=_safe(getattr(candidate, "request_id", None)),
            )
        if isinstance(candidate, MaxTurnsExceeded):
            return ModelFailure(
                "model_error",
                "The assistant needed too many steps for this "
                "request. Try asking for one thing at a time.",
                False,
            )
        if isinstance(candidate, ModelBehaviorError):
            text = str(candidate)
            if text.startswith(_TERMINAL):
                if "response.incomplete" in text:
                    return ModelFailure(
                        "model_error",
                        "The model stopped before finishing its answer (it hit an output limit).",
                        False,
                    )
                match = _TERMINAL_CODE.search(text)
                return _by_code(match.group(1) if match else None)
            return ModelFailure(
                "model_error",
                "The model gave an answer the server could not use. Please try again.",
                True,
            )
        if isinstance(candidate, json.JSONDecodeError):
            # A stream event that is not JSON (a broken provider or proxy): the client
            # library raises the decoder's error as it is.
            return ModelFailure(
                "model_error",
                "The model's answer could not be read (its stream was malformed). "
                "Please try again.",
                True,
            )
    # The exception's type is in the log line (log_fields), not in what a person reads.
    return ModelFailure(
        "model_error", "The model failed to answer. Please try again.", True, provider_error=False
    )


def log_model_failure(
    logger: logging.Logger, exc: BaseException, extra: Mapping[str, Any]
) -> ModelFailure:
    """Log a turn's model failure server-side and return what to tell the user.

    Provider failures are logged by their facts only (their text may echo the request);
    anything else is a bug or a configuration slip, logged with its traceback.
    """
    failure = classify_model_error(exc)
    fields = {**extra, **failure.log_fields(exc)}
    if failure.provider_error:
        logger.error("turn failed: model call failed", extra=fields)
    else:
        logger.error("turn failed", exc_info=exc, extra=fields)
    return failure


_turn_logger = logging.getLogger("switchboard.turn")


def report_turn_failure(exc: BaseException, extra: Mapping[str, Any]) -> ErrorEvent:
    """The turn engine's failure reporter (``websocket.ports.FailureReporter``)."""
    return log_model_failure(_turn_logger, exc, extra).event()
