"""OpenTelemetry tracing, when it is configured (docs/telemetry.md).

On when ``SWITCHBOARD_OTLP_ENDPOINT`` (or the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set; then ``start_tracing`` loads
``app.telemetry_otel`` (the ``otel`` extra) and the turn engine gets its tracer. Otherwise
this module imports nothing of OpenTelemetry, and turns do no tracing work at all.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from app.settings import Settings, SettingsError
from storage.engine import Database
from websocket.tracing import TurnTracer

logger = logging.getLogger("switchboard.telemetry")

STANDARD_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
EXTRA_HINT = "install the otel extra: pip install 'switchboard-server[otel]'"
# Packages the extra brings, checked before anything of them is imported.
EXTRA_MODULES = (
    "opentelemetry.sdk",
    "opentelemetry.exporter.otlp.proto.http",
    "openinference.instrumentation.openai_agents",
)

# A span exporter to use instead of OTLP (tests: an in-memory one); see ``exporting_to``.
_exporter_override: ContextVar[Any] = ContextVar("switchboard_span_exporter", default=None)


class Tracing(Protocol):
    """Tracing that runs: the turns' tracer, and its shutdown (flushes what is left)."""

    @property
    def tracer(self) -> TurnTracer: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class TracingTarget:
    """Where spans go: an OTLP/HTTP endpoint (None: the exporter reads the standard
    ``OTEL_EXPORTER_OTLP_*`` variables itself), or an exporter object given in code."""

    endpoint: str | None = None
    exporter: Any = None


def tracing_target(
    settings: Settings, environ: Mapping[str, str] = os.environ
) -> TracingTarget | None:
    """Whether tracing is configured, and where to; None when it is not."""
    override = _exporter_override.get()
    if override is not None:
        return TracingTarget(exporter=override)
    if settings.otlp_endpoint:
        return TracingTarget(endpoint=traces_url(settings.otlp_endpoint))
    if any(environ.get(name, "").strip() for name in STANDARD_ENDPOINTS):
        return TracingTarget()
    return None


def traces_url(endpoint: str) -> str:
    """A collector's base URL -> its OTLP/HTTP traces URL, as the standard base-endpoint
    variable is read; a URL already naming ``/v1/traces`` is kept."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"


def extra_installed() -> bool:
    try:
        return all(importlib.util.find_spec(name) is not None for name in EXTRA_MODULES)
    except ModuleNotFoundError:  # a parent package is missing
        return False


def start_tracing(
    settings: Settings, db: Database, environ: Mapping[str, str] = os.environ
) -> Tracing | None:
    """Tracing as configured, started; None when it is not configured.

    ``SWITCHBOARD_OTLP_ENDPOINT`` without the extra is a configuration error; the standard
    variables alone (often set machine-wide for other programs) only get a warning.
    """
    target = tracing_target(settings, environ)
    if target is None:
        return None
    if not extra_installed():
        if settings.otlp_endpoint:
            raise SettingsError(
                f"SWITCHBOARD_OTLP_ENDPOINT is set but tracing is not installed: {EXTRA_HINT}"
            )
        logger.warning(
            f"OTEL_EXPORTER_OTLP_ENDPOINT is set but tracing is not installed; {EXTRA_HINT}"
        )
        return None
    from app.telemetry_otel import OtelTracing

    tracing = OtelTracing(settings, db, target)
    # The host only: an endpoint URL may carry credentials.
    where = urlsplit(target.endpoint).netloc.rsplit("@", 1)[-1] if target.endpoint else None
    logger.info("OpenTelemetry tracing on", extra={"otlp_host": where or "OTEL_EXPORTER_OTLP_*"})
    return tracing


@contextmanager
def exporting_to(exporter: Any) -> Iterator[None]:
    """Apps started in this block (in this context) trace to ``exporter`` instead of OTLP."""
    token = _exporter_override.set(exporter)
    try:
        yield
    finally:
        _exporter_override.reset(token)
