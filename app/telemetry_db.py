"""Database spans (part of the ``otel`` extra's tracing, app.telemetry_otel): one span per
statement, from SQLAlchemy's engine events, so they nest under whatever is current (a
turn's span, an SDK span) when the statement runs.

Our own listeners rather than OpenTelemetry's SQLAlchemy instrumentation: that one patches
``create_engine`` and ``Engine.connect`` process-wide and refuses SQLAlchemy releases newer
than the ones it lists, while this needs two engine events and works on any 2.x.

A span carries the statement's SQL (our own, with placeholders: parameter values, which
hold users' data, are never recorded), the operation and the database system.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from sqlalchemy import event
from sqlalchemy.engine import Engine

MAX_QUERY_TEXT = 2000
_SPAN = "_switchboard_otel_span"


class DatabaseSpans:
    def __init__(self, tracer: trace.Tracer, engine: Engine) -> None:
        self._tracer = tracer
        self._engine = engine
        self._system = (
            "postgresql" if engine.dialect.name.startswith("postgres") else engine.dialect.name
        )
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine, "after_cursor_execute", self._after)
        event.listen(engine, "handle_error", self._error)

    def remove(self) -> None:
        event.remove(self._engine, "before_cursor_execute", self._before)
        event.remove(self._engine, "after_cursor_execute", self._after)
        event.remove(self._engine, "handle_error", self._error)

    def _before(
        self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        if context is None:
            return
        operation = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
        span = self._tracer.start_span(
            operation,
            kind=SpanKind.CLIENT,
            attributes={
                "db.system.name": self._system,
                "db.operation.name": operation,
                "db.query.text": statement[:MAX_QUERY_TEXT],
            },
        )
        setattr(context, _SPAN, span)

    def _after(
        self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        span = getattr(context, _SPAN, None)
        if span is not None:
            span.end()
            setattr(context, _SPAN, None)

    def _error(self, exception_context: Any) -> None:
        context = exception_context.execution_context
        span = getattr(context, _SPAN, None) if context is not None else None
        if span is not None:
            error = exception_context.original_exception
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
            span.set_attribute("error.type", type(error).__name__)
            span.end()
            setattr(context, _SPAN, None)
