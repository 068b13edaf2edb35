"""Every error, from a route or from Starlette itself, has the {"error": {...}} shape."""

from __future__ import annotations

import logging

import pytest
from apptest import Running, User, running
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app.errors import api_error
from app.settings import Settings


def test_api_error_shape() -> None:
    response = api_error(418, "invalid_request", "no coffee")
    assert response.status_code == 418
    assert response.body == b'{"error":{"code":"invalid_request","message":"no coffee"}}'


async def test_unknown_route_is_json_404(api: Running) -> None:
    response = await api.client.get("/no/such/page")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "not found"}}


async def test_wrong_method_is_json_405(api: Running, alice: User) -> None:
    response = await api.client.post("/api/chats", headers=alice.auth)
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "invalid_request"
    assert "GET" in response.headers["allow"]
    put = await api.client.put("/api/chats/c1", headers=alice.auth)
    assert put.status_code == 405
    assert {"GET", "DELETE"} <= {m.strip() for m in put.headers["allow"].split(",")}


async def boom(request: Request) -> Response:
    raise RuntimeError("secret-ish internal detail: SELECT * FROM api_tokens")


async def teapot(request: Request) -> Response:
    raise HTTPException(429, "slow down")


@pytest.fixture
async def extra_api(settings: Settings) -> Running:  # type: ignore[misc]
    routes = [Route("/boom", boom), Route("/teapot", teapot)]
    async with running(settings, extra_routes=routes, raise_app_exceptions=False) as server:
        yield server  # type: ignore[misc]


async def test_unhandled_error_is_generic_500_and_logged(
    extra_api: Running, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="switchboard.errors"):
        response = await extra_api.client.get("/boom")
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "server_error", "message": "internal server error"}
    }
    assert "SELECT" not in response.text
    record = next(r for r in caplog.records if r.name == "switchboard.errors")
    assert record.exc_info is not None and "SELECT" in str(record.exc_info[1])
    assert record.path == "/boom"  # type: ignore[attr-defined]


async def test_http_exception_from_extra_route(extra_api: Running) -> None:
    response = await extra_api.client.get("/teapot")
    assert response.status_code == 429
    assert response.json() == {"error": {"code": "rate_limited", "message": "slow down"}}
