"""Sign-in through Starlette's AuthenticationMiddleware (app.api_auth): each API's own
error shape for a foreign Origin, nobody signed in and a database that is down."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest
from apptest import Running, User
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.api_auth import signed_in
from app.auth import Authenticator
from storage.engine import Database

# Nothing listens on port 1: connections are refused at once, no timeout to wait for.
CLOSED_PORT_URL = "postgresql+asyncpg://postgres:pw@127.0.0.1:1/switchboard"
EVIL = {"Origin": "https://evil.test"}


async def test_rest_refusals(api: Running, alice: User) -> None:
    foreign = await api.client.get("/api/chats", headers=alice.auth | EVIL)
    assert foreign.status_code == 403
    assert foreign.json() == {
        "error": {
            "code": "forbidden",
            "message": "this Origin is not allowed; add it to SWITCHBOARD_ALLOWED_ORIGINS",
        }
    }
    nobody = await api.client.get("/api/approvals")
    assert nobody.status_code == 401
    assert nobody.json()["error"]["code"] == "unauthorized"


async def test_open_responses_refusals_keep_its_error_shape(api: Running, alice: User) -> None:
    foreign = await api.client.get("/v1/responses/resp_1", headers=alice.auth | EVIL)
    assert foreign.status_code == 403
    assert foreign.json()["error"] == {
        "type": "invalid_request",
        "code": "forbidden",
        "param": None,
        "message": "this Origin is not allowed; add it to SWITCHBOARD_ALLOWED_ORIGINS",
    }
    nobody = await api.client.post("/v1/responses", json={"model": "x", "input": "hi"})
    assert nobody.status_code == 401
    assert nobody.json()["error"]["type"] == "invalid_request"
    assert nobody.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize(
    ("method", "path", "shape"),
    [
        ("GET", "/api/chats", {"code", "message"}),
        ("GET", "/v1/responses/resp_1", {"type", "code", "param", "message"}),
    ],
)
async def test_a_token_lookup_without_the_database_is_a_503(
    api: Running, alice: User, method: str, path: str, shape: set[str]
) -> None:
    services = api.services
    unreachable = Database(CLOSED_PORT_URL)
    # The token is not in the cache, so it must be looked up, in a database that is down.
    api.state["services"] = replace(services, auth=Authenticator("token", unreachable))
    try:
        response = await api.client.request(method, path, headers=alice.auth)
    finally:
        api.state["services"] = services
        await unreachable.dispose()
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert set(response.json()["error"]) == shape
    assert "database is unavailable" in response.json()["error"]["message"]


async def test_signed_in_on_a_route_without_the_middleware_says_what_is_missing() -> None:
    async def endpoint(request: Request) -> Response:
        return JSONResponse({"id": signed_in(request).id})

    transport = httpx.ASGITransport(app=Starlette(routes=[Route("/me", endpoint)]))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        with pytest.raises(RuntimeError, match=r"/me: its route needs middleware=needs_user\(\)"):
            await client.get("/me")
