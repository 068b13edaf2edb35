"""What the connector fakes share: serving a Starlette app on loopback, recording requests,
and scripted failures.

Each fake (``gmail_api``, ``plaid_api``, ``yelp_api``, ``google_search``, ``searxng``)
is a ``FakeService`` subclass whose routes speak the real service's wire format. A test
can queue answers for a path prefix before the real handler runs::

    fake.script("/v3/businesses/search", Answer(429, headers={"Retry-After": "0"}))

so the next request to that prefix gets a 429 (then the handler answers again). An
``Answer`` with ``delay`` holds the request that long first (timeouts).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.servers import running_uvicorn

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any = None  # dict/list → JSON; str → text; None → empty
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    then_handle: bool = False  # after the delay, answer normally (a slow success)

    def response(self) -> Response:
        if isinstance(self.body, dict | list):
            return JSONResponse(self.body, status_code=self.status, headers=self.headers)
        return Response(
            self.body or b"",
            status_code=self.status,
            headers=self.headers,
            media_type="text/plain" if self.body else None,
        )


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


class FakeService:
    """Base of the fakes: subclasses list their routes in ``routes()``."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._scripts: dict[str, deque[Answer]] = {}
        self.base_url = ""

    def routes(self) -> list[tuple[str, Endpoint, list[str]]]:
        raise NotImplementedError

    def script(self, prefix: str, *answers: Answer) -> None:
        self._scripts.setdefault(prefix, deque()).extend(answers)

    def hits(self, prefix: str) -> list[Recorded]:
        """Requests whose path starts with ``prefix``."""
        return [r for r in self.requests if r.path.startswith(prefix)]

    def calls(self, path: str) -> list[Recorded]:
        """Requests to exactly ``path``."""
        return [r for r in self.requests if r.path == path]

    def _wrap(self, endpoint: Endpoint) -> Endpoint:
        async def handle(request: Request) -> Response:
            body = await request.body()
            query: dict[str, list[str]] = {}
            for key, value in request.query_params.multi_items():
                query.setdefault(key, []).append(value)
            self.requests.append(
                Recorded(
                    request.method,
                    request.url.path,
                    query,
                    {k.lower(): v for k, v in request.headers.items()},
                    body,
                )
            )
            for prefix in sorted(self._scripts, key=len, reverse=True):
                queue = self._scripts[prefix]
                if request.url.path.startswith(prefix) and queue:
                    answer = queue.popleft()
                    if answer.delay:
                        await asyncio.sleep(answer.delay)
                    if not answer.then_handle:
                        return answer.response()
                    break
            return await endpoint(request)

        return handle

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route(path, self._wrap(endpoint), methods=methods)
                for path, endpoint, methods in self.routes()
            ]
        )


@asynccontextmanager
async def serve_fake(fake: FakeService) -> AsyncIterator[str]:
    """Run ``fake`` under uvicorn on a free loopback port; yields its base URL."""
    async with running_uvicorn(
        fake.app(),
        what=f"the fake {type(fake).__name__}",
        lifespan="off",
        timeout_graceful_shutdown=1,
    ) as port:
        fake.base_url = f"http://127.0.0.1:{port}"
        yield fake.base_url


def closed_port_url() -> str:
    """A loopback URL where nothing listens: connections are refused at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"
