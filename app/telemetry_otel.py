"""OpenTelemetry tracing (the ``otel`` extra), loaded only when tracing is configured.

Spans (docs/telemetry.md):

- ``switchboard.turn``: one run of a turn, current in the turn's task, so everything the
  turn does nests under it: ids (chat, turn, a hash of the user id), how it ended, tokens;
- the Agents SDK's own spans through OpenInference's instrumentation (a tracing processor
  registered with the SDK): the agent run, each model call (model name, token counts) and
  each tool call the SDK makes;
- ``switchboard.tool_call``: each tool call as the turn saw it, with its outcome (ok,
  error, or waiting for approval), which the SDK's span cannot know;
- each database statement (app.telemetry_db).

No text of prompts, answers or tool arguments unless ``SWITCHBOARD_TRACE_CONTENT`` is on.
Spans leave through a batch processor whose exporter runs on its own thread: the event
loop never waits on the collector.
"""

from __future__ import annotations

import asyncio
import hashlib
import os

from openinference.instrumentation import TraceConfig
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import Span, Status, StatusCode

from app import telemetry
from app.settings import Settings
from app.telemetry_db import DatabaseSpans
from storage.engine import Database
from websocket.tracing import TurnTrace
from wire.events import Usage

SERVICE_NAME = "switchboard"
TRACER_NAME = "switchboard"
# Seconds a shutdown waits for the last spans to leave.
FLUSH_TIMEOUT_MS = 5000


def user_hash(user_id: str) -> str:
    """A stable pseudonym to group one user's turns; not a secret (ids may be guessable)."""
    return hashlib.sha256(user_id.encode()).hexdigest()[:16]


class OtelTurnTrace:
    def __init__(self, tracer: trace.Tracer, span: Span, token: object) -> None:
        self._tracer = tracer
        self._span = span
        self._context = trace.set_span_in_context(span)
        self._token = token
        self._tools: dict[str, Span] = {}

    def tool_called(self, call_id: str, name: str, agent: str) -> None:
        self._tools[call_id] = self._tracer.start_span(
            "switchboard.tool_call",
            context=self._context,
            attributes={
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "switchboard.agent": agent,
            },
        )

    def tool_finished(self, call_id: str, outcome: str) -> None:
        span = self._tools.pop(call_id, None)
        if span is not None:
            _end_tool(span, outcome)

    def end(
        self, status: str, usage: Usage, error_code: str | None, waiting: frozenset[str]
    ) -> None:
        # A call without an output: waiting for approval, a hidden result (a success, as
        # the metrics count it), or cut short by the turn's end.
        for call_id, span in self._tools.items():
            if call_id in waiting:
                _end_tool(span, "waiting_approval")
            else:
                _end_tool(span, "ok" if status in ("completed", "paused") else "unfinished")
        self._tools.clear()
        span = self._span
        span.set_attribute("switchboard.turn.status", status)
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        span.set_attribute("switchboard.turn.total_tokens", usage.total_tokens)
        span.set_attribute("switchboard.turn.model_requests", usage.requests)
        if error_code is not None:
            span.set_attribute("error.type", error_code)
        if status == "failed":
            span.set_status(Status(StatusCode.ERROR, error_code or "failed"))
        span.end()
        try:
            otel_context.detach(self._token)  # type: ignore[arg-type]
        except Exception:  # a context changed under us is not worth failing a turn
            pass


def _end_tool(span: Span, outcome: str) -> None:
    span.set_attribute("switchboard.tool.outcome", outcome)
    if outcome == "error":
        span.set_status(Status(StatusCode.ERROR, "tool_error"))
    span.end()


class OtelTurnTracer:
    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer

    def start_turn(
        self, *, user_id: str, chat_id: str, turn_id: str, resumed: bool, front_end: str
    ) -> TurnTrace:
        span = self._tracer.start_span(
            "switchboard.turn",
            attributes={
                "switchboard.chat_id": chat_id,
                "switchboard.turn_id": turn_id,
                "switchboard.user_hash": user_hash(user_id),
                "switchboard.turn.resumed": resumed,
                "switchboard.front_end": front_end,
            },
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        return OtelTurnTrace(self._tracer, span, token)


def _resource() -> Resource:
    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over our default name.
    if os.environ.get("OTEL_SERVICE_NAME"):
        return Resource.create()
    return Resource.create({"service.name": SERVICE_NAME})


class OtelTracing:
    """The tracer provider, its exporter and the two instrumentations, for one app."""

    def __init__(self, settings: Settings, db: Database, target: telemetry.TracingTarget) -> None:
        self.provider = TracerProvider(resource=_resource())
        if target.exporter is not None:
            # Given in code (tests): exported as each span ends, nothing left in a queue.
            self.provider.add_span_processor(SimpleSpanProcessor(target.exporter))
        else:
            # OTLP/HTTP; with no endpoint given it reads OTEL_EXPORTER_OTLP_* (headers,
            # timeout, certificates) as every OpenTelemetry exporter does.
            exporter = (
                OTLPSpanExporter(endpoint=target.endpoint)
                if target.endpoint
                else OTLPSpanExporter()
            )
            self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self._tracer = self.provider.get_tracer(TRACER_NAME)
        hide = not settings.trace_content
        self._agents = OpenAIAgentsInstrumentor()
        self._agents.instrument(
            tracer_provider=self.provider,
            # Alone, unless tracing to OpenAI is on as well (SWITCHBOARD_TRACING).
            exclusive_processor=not settings.tracing,
            config=TraceConfig(
                hide_inputs=hide,
                hide_outputs=hide,
                hide_input_messages=hide,
                hide_output_messages=hide,
                # The response's parameters as the instrumentation records them include
                # its instructions and, for a model server that echoes them, the input.
                hide_llm_invocation_parameters=hide,
            ),
        )
        self._db = DatabaseSpans(self._tracer, db)

    @property
    def tracer(self) -> OtelTurnTracer:
        return OtelTurnTracer(self._tracer)

    async def aclose(self) -> None:
        self._agents.uninstrument()
        self._db.remove()
        # Flushing blocks on the exporter's HTTP calls (each with its own timeout): off
        # the event loop.
        await asyncio.to_thread(self.provider.force_flush, FLUSH_TIMEOUT_MS)
        await asyncio.to_thread(self.provider.shutdown)
