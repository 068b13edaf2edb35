"""Database spans (part of the ``otel`` extra's tracing, app.telemetry_otel): one span per
statement, from SQLAlchemy's engine events, and one per plain-SQL transaction (the turn's
own statements, storage/plain_sql.py, which bypass SQLAlchemy), so they nest under
whatever is current (a turn's span, an SDK span) when the statement runs.

Our own listeners rather than OpenTelemetry's SQLAlchemy instrumentation: that one patches
``create_engine`` and ``Engine.connect`` process-wide and refuses SQLAlchemy releases newer
than the ones it lists, while this needs two engine events and works on any 2.x.

A span carries the statement's SQL (our own, with placeholders: parameter values, which
hold users' data, are never recorded), the operation and the database system.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from sqlalchemy import event

from storage.engine import Database

MAX_QUERY_TEXT = 2000
_SPAN = "_switchboard_otel_span"


class DatabaseSpans:
    def __init__(self, tracer: trace.Tracer, db: Database) -> None:
        self._tracer = tracer
        self._db = db
        self._engine = engine = db.engine.sync_engine
        self._system = (
            "postgresql" if engine.dialect.name.startswith("postgres") else engine.dialect.name
        )
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine, "after_cursor_execute", self._after)
        event.listen(engine, "handle_error", self._error)
        db.plain_sql_span = self._plain_sql

    def remove(self) -> None:
        event.remove(self._engine, "before_cursor_execute", self._before)
        event.remove(self._engine, "after_cursor_execute", self._after)
        event.remove(self._engine, "handle_error", self._error)
        self._db.plain_sql_span = None

    @contextmanager
    def _plain_sql(self) -> Iterator[list[str]]:
        """A plain-SQL transaction's span; its statements are known once it has run."""
        span = self._tracer.start_span(
            "TRANSACTION", kind=SpanKind.CLIENT, attributes={"db.system.name": self._system}
        )
        statements: list[str] = []
        try:
            yield statements
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            span.set_attribute("error.type", type(exc).__name__)
            raise
        finally:
            operations = [_operation(sql) for sql in statements]
            if len(set(operations)) == 1:
                span.update_name(operations[0])
            span.set_attribute("db.operation.name", " ".join(operations) or "SQL")
            span.set_attribute("db.query.text", ";\n".join(statements)[:MAX_QUERY_TEXT])
            span.end()

    def _before(
        self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        if context is None:
            return
        operation = _operation(statement)
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


def _operation(sql: str) -> str:
    return sql.lstrip().split(None, 1)[0].upper() if sql.strip() else "SQL"
