"""``GET /metrics``: the app's Prometheus registry in the text exposition format."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app.api_docs import Answer, Operation, documented
from app.services import services_of


def metrics_route() -> Route:
    @documented(
        "GET",
        Operation(
            summary="Prometheus metrics (text exposition format)",
            tag="service",
            signed_in=False,
            errors="text",
            answers={200: Answer("The metrics", media_type="text/plain")},
        ),
    )
    async def endpoint(request: Request) -> Response:
        registry = services_of(request).metrics.registry
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", endpoint, methods=["GET"])
