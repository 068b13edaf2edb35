"""Reading finished spans (from the SDK's in-memory exporter) and ``/metrics`` in tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from prometheus_client.parser import text_string_to_metric_families


def named(spans: Iterable[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def parent_of(span: ReadableSpan, spans: Iterable[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next((s for s in spans if s.context.span_id == span.parent.span_id), None)


def ancestors(span: ReadableSpan, spans: list[ReadableSpan]) -> list[ReadableSpan]:
    chain, current = [], parent_of(span, spans)
    while current is not None:
        chain.append(current)
        current = parent_of(current, spans)
    return chain


def attribute_text(spans: Iterable[ReadableSpan]) -> str:
    """Every attribute value and event of ``spans`` as one text, to look for leaks in."""
    parts: list[Any] = []
    for span in spans:
        parts.extend(str(value) for value in (span.attributes or {}).values())
        for event in span.events:
            parts.extend(str(value) for value in (event.attributes or {}).values())
    return "\n".join(parts)


def metric(text: str, sample: str, model: str) -> float:
    """The value of ``sample`` for ``model`` in a ``/metrics`` text (0 when absent)."""
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == sample and found.labels.get("model") == model:
                return float(found.value)
    return 0.0
