"""Spans leave over OTLP/HTTP to a collector: a small real HTTP server here that decodes
the protobuf export requests, as a collector does."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app import telemetry
from app.settings import Settings, SettingsError, load_settings
from tests.support.clients import open_client
from tests.support.servers import running_uvicorn, serve

PROTOBUF = "application/x-protobuf"


@dataclass
class Collector:
    port: int = 0
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """Every span received, with its resource's attributes."""
        found = []
        for request in self.requests:
            for resource_spans in request.resource_spans:
                resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope in resource_spans.scope_spans:
                    found.extend((resource, span) for span in scope.spans)
        return found


@pytest.fixture
async def collector() -> AsyncIterator[Collector]:
    received = Collector()

    async def traces(request: Request) -> Response:
        if request.headers.get("content-type") != PROTOBUF:
            return Response(status_code=415)
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)  # a malformed body fails the test's assertions
        received.requests.append(export)
        received.headers.append(dict(request.headers))
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type=PROTOBUF)

    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    async with running_uvicorn(app, what="the OTLP collector") as port:
        received.port = port
        yield received


def attributes(span: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for attribute in span.attributes:
        value = attribute.value
        values[attribute.key] = getattr(value, value.WhichOneof("value"))
    return values


async def run_a_turn(settings: Settings) -> list[dict[str, Any]]:
    async with serve(settings) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex), auto_approve=True) as client:
            return await client.turn("find sushi in Boston and show my account balances")
    # Leaving the block shut the app down, which flushed the last spans to the collector.


async def test_spans_are_exported_to_the_configured_endpoint(
    make_settings: Callable[..., Settings],
    collector: Collector,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in telemetry.STANDARD_ENDPOINTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    # The exporter's own standard variables still apply (a collector's token, say).
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-token=abc123")
    events = await run_a_turn(make_settings(otlp_endpoint=collector.base_url))
    end = next(e for e in events if e["type"] == "end_of_stream")

    assert collector.requests, "nothing was exported"
    assert all(h.get("x-collector-token") == "abc123" for h in collector.headers)
    spans = collector.spans()
    turns = [(r, s) for r, s in spans if s.name == "switchboard.turn"]
    assert len(turns) == 1
    resource, turn = turns[0]
    assert resource["service.name"] == "switchboard"
    assert attributes(turn)["switchboard.turn_id"] == end["turn_id"]
    assert attributes(turn)["switchboard.turn.status"] == "completed"
    children = [
        s for _, s in spans if s.trace_id == turn.trace_id and s.parent_span_id == turn.span_id
    ]
    names = {s.name for s in children}
    assert "switchboard.tool_call" in names and "Agent workflow" in names


async def test_the_standard_variable_turns_tracing_on_too(
    make_settings: Callable[..., Settings],
    collector: Collector,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.base_url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "switchboard-eu")
    await run_a_turn(make_settings())
    spans = collector.spans()
    assert any(s.name == "switchboard.turn" for _, s in spans)
    assert {r["service.name"] for r, _ in spans} == {"switchboard-eu"}


def test_endpoints() -> None:
    assert telemetry.traces_url("http://otel:4318") == "http://otel:4318/v1/traces"
    assert telemetry.traces_url("http://otel:4318/") == "http://otel:4318/v1/traces"
    assert telemetry.traces_url("https://c.example/v1/traces") == "https://c.example/v1/traces"
    settings = load_settings(otlp_endpoint="http://otel:4318")
    assert telemetry.tracing_target(settings, {}) == telemetry.TracingTarget(
        endpoint="http://otel:4318/v1/traces"
    )
    assert telemetry.tracing_target(load_settings(), {}) is None
    assert telemetry.tracing_target(load_settings(), {"OTEL_EXPORTER_OTLP_ENDPOINT": " "}) is None
    standard = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://otel:4318/v1/traces"}
    assert telemetry.tracing_target(load_settings(), standard) == telemetry.TracingTarget()


def test_an_endpoint_that_is_not_an_http_url_is_refused() -> None:
    with pytest.raises(SettingsError, match="SWITCHBOARD_OTLP_ENDPOINT: .*http:// or https://"):
        load_settings(otlp_endpoint="otel:4317")


def test_an_endpoint_without_the_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(telemetry, "EXTRA_MODULES", ("opentelemetry.sdk", "no_such_module.x"))
    with pytest.raises(SettingsError, match=r"pip install 'switchboard-server\[otel\]'"):
        telemetry.start_tracing(load_settings(otlp_endpoint="http://otel:4318"), None, {})  # type: ignore[arg-type]
    # Only the standard variable (often set machine-wide): a warning, and no tracing.
    standard = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318"}
    assert telemetry.start_tracing(load_settings(), None, standard) is None  # type: ignore[arg-type]
    assert "pip install 'switchboard-server[otel]'" in caplog.text


def test_without_tracing_configured_nothing_of_opentelemetry_is_loaded(tmp_path: Any) -> None:
    """A real turn over a real socket in a fresh interpreter: nothing of tracing is
    imported, so an unconfigured server pays nothing for the extra being installed.
    (The OpenTelemetry API itself may be: MCP's and redis-py's own optional hooks load it.)"""
    script = textwrap.dedent(
        """
        import asyncio, sys, uuid
        from app.settings import load_settings
        from tests.support.clients import open_client
        from tests.support.servers import serve

        async def main():
            settings = load_settings(
                database_url=sys.argv[1], data_dir=sys.argv[2], offline_delta_delay=0
            )
            async with serve(settings) as live:
                async with open_client(live.ws_url(uuid.uuid4().hex), auto_approve=True) as c:
                    events = await c.turn("find sushi in Boston and show my account balances")
            assert events[-2]["status"] == "completed", events[-2]
            ours = ("app.telemetry_otel", "app.telemetry_db", "openinference",
                    "opentelemetry.sdk.trace", "opentelemetry.exporter")
            loaded = sorted(m for m in sys.modules if m.startswith(ours))
            print("LOADED", loaded)

        asyncio.run(main())
        """
    )
    database = tmp_path / "db.sqlite"
    migrate = [sys.executable, "-m", "app.cli", "migrate"]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SWITCHBOARD_"))},
        "SWITCHBOARD_DATABASE_URL": f"sqlite+aiosqlite:///{database}",
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
    }
    subprocess.run(migrate, env=env, check=True, capture_output=True, timeout=120)
    done = subprocess.run(
        [sys.executable, "-c", script, env["SWITCHBOARD_DATABASE_URL"], str(tmp_path / "data")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "LOADED []" in done.stdout, done.stdout
