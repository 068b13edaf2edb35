"""``/openapi.json`` is complete and true: every HTTP route of the app is in it with its
methods and nothing else is, every refusal is documented with the error body, its
examples validate against their schemas, the security follows the auth mode, and the
JSON real endpoints answer (a chat with a turn paused for an approval, connectors,
approvals) validates against the schema the document gives for that status."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from starlette.routing import Route

from app.api_docs import Answer, Operation, documented
from app.cli import installed_version
from app.main import create_app
from app.openapi import build_document, undocumented
from app.settings import Settings
from tests.support.clients import open_client
from tests.support.servers import LiveServer, serve

EMAIL = "find sushi in Boston and email the list to bob@example.com"
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "options", "head", "trace"}


@pytest.fixture
async def local(make_settings: Callable[..., Settings]) -> Any:
    async with serve(make_settings(auth_mode="local")) as live:
        yield live


async def document_of(live: LiveServer, **headers: str) -> dict[str, Any]:
    async with live.client() as http:
        answer = await http.get("/openapi.json", headers=headers)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    document: dict[str, Any] = answer.json()
    return document


def validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    # "#/components/schemas/…" resolves against the root: give the schema the components.
    return Draft202012Validator({**schema, "components": document["components"]})


def answer_schema(document: dict[str, Any], path: str, method: str, status: int) -> Any:
    responses = document["paths"][path][method]["responses"]
    assert str(status) in responses, f"{method.upper()} {path} does not document {status}"
    return responses[str(status)]["content"]["application/json"]["schema"]


def check_answer(document: dict[str, Any], path: str, method: str, status: int, body: Any) -> None:
    errors = list(
        validator(document, answer_schema(document, path, method, status)).iter_errors(body)
    )
    assert errors == [], f"{method.upper()} {path} {status}: {[e.message for e in errors]}"


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert method in HTTP_METHODS, f"{path}: {method}"
            yield path, method, operation


def walk_examples(node: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Every (location, schema, example) in the document's schemas."""
    if isinstance(node, dict):
        if isinstance(node.get("examples"), list) and ("type" in node or "properties" in node):
            for example in node["examples"]:
                yield where, node, example
        for key, value in node.items():
            yield from walk_examples(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk_examples(value, f"{where}/{index}")


# ----------------------------------------------------------------------------- completeness


async def test_every_route_and_method_is_documented_and_nothing_else(local: LiveServer) -> None:
    document = await document_of(local)
    assert document["openapi"].startswith("3.1")
    assert undocumented(local.app.routes) == []
    routes = {
        (route.path, method.lower())
        for route in local.app.routes
        if isinstance(route, Route)
        for method in (route.methods or set()) - {"HEAD"}
    }
    documented_ops = {(path, method) for path, method, _ in operations(document)}
    assert documented_ops == routes
    # The routes the brief names are all there.
    for path in (
        "/api/chats",
        "/api/connectors/{name}/finish",
        "/rap/callback",
        "/v1/responses",
        "/ag-ui",
        "/healthz",
        "/readyz",
        "/metrics",
        "/oauth/{name}/callback",
    ):
        assert path in document["paths"], path
    # Operation ids are unique (clients generate method names from them).
    ids = [operation["operationId"] for _, _, operation in operations(document)]
    assert len(ids) == len(set(ids))


def test_a_route_without_its_operation_is_reported() -> None:
    async def endpoint(request: Any) -> Any:
        raise AssertionError("never called")

    marked = documented("GET", Operation("x", "t", answers={200: Answer("ok")}))(endpoint)
    routes = [Route("/a", endpoint, methods=["GET", "POST"]), Route("/b", lambda r: None)]
    assert undocumented(routes) == ["POST /a", "GET /b"]
    document = build_document(routes, auth_mode="token")
    assert list(document["paths"]) == ["/a"] and list(document["paths"]["/a"]) == ["get"]
    assert marked is endpoint
    with pytest.raises(ValueError, match="documented twice"):
        documented("GET", Operation("x", "t", answers={}))(endpoint)


async def test_every_refusal_is_documented_with_the_error_body(local: LiveServer) -> None:
    document = await document_of(local)
    error_refs = {"#/components/schemas/ErrorBody", "#/components/schemas/OpenResponsesErrorBody"}
    for path, method, operation in operations(document):
        responses = operation["responses"]
        assert any(status.startswith("2") for status in responses), (path, method)
        if operation["security"] != []:  # signed in: refused without a user, an Origin, a DB
            assert {"401", "403", "503"} <= set(responses), (path, method)
        for status, answer in responses.items():
            if not status.startswith(("4", "5")) or (path, status) == ("/readyz", "503"):
                continue  # /readyz's 503 is its answer: the readiness body, not a refusal
            content = answer.get("content", {})
            assert content, f"{method.upper()} {path} {status} has no body"
            if "application/json" in content:
                assert content["application/json"]["schema"]["$ref"] in error_refs, (path, status)
    # The error body is {"error": {"code", "message"}}, nothing else.
    body = document["components"]["schemas"]["ErrorBody"]
    assert body["required"] == ["error"] and body["additionalProperties"] is False


async def test_every_example_validates_against_its_schema(local: LiveServer) -> None:
    document = await document_of(local)
    found = list(walk_examples(document["components"]["schemas"]))
    assert len(found) >= 5  # the error body's, timestamps, …
    for where, schema, example in found:
        errors = [e.message for e in validator(document, schema).iter_errors(example)]
        assert errors == [], f"{where}: example {example!r}: {errors}"
    # And a wrong one is caught, so the check above can fail.
    error_body = {"$ref": "#/components/schemas/ErrorBody"}
    assert list(validator(document, error_body).iter_errors({"error": {"code": "x"}}))


def test_the_document_builds_without_a_server() -> None:
    # Every schema pydantic makes must be a valid JSON Schema 2020-12 (OpenAPI 3.1's).
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:", auth_mode="token"))
    document = build_document(app.routes, auth_mode="token")
    assert document["info"]["version"] == installed_version()  # as `switchboard --version`
    assert len(document["components"]["schemas"]) > 20
    for schema in document["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)


# ----------------------------------------------------------------------------- security


async def test_security_follows_the_auth_mode(
    local: LiveServer, make_settings: Callable[..., Settings]
) -> None:
    local_doc = await document_of(local)
    me = local_doc["paths"]["/api/me"]["get"]
    assert me["security"] == [{}]  # no credentials: the single local user
    assert local_doc["paths"]["/healthz"]["get"]["security"] == []
    schemes = local_doc["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {**schemes["bearerAuth"], "type": "http", "scheme": "bearer"}
    async with serve(make_settings(auth_mode="token")) as token_server:
        # The document itself is public, also in token mode.
        token_doc = await document_of(token_server)
    assert token_doc["paths"]["/api/me"]["get"]["security"] == [
        {"bearerAuth": []},
        {"sessionCookie": []},
    ]
    assert token_doc["paths"]["/rap/callback"]["post"]["security"] == []
    assert "Auth mode of this server: token" in token_doc["info"]["description"]


# ----------------------------------------------------------------------------- real answers


async def test_real_answers_validate_against_the_document(local: LiveServer) -> None:
    document = await document_of(local)
    chat_id = "openapi-chat"
    async with open_client(local.ws_url(chat_id)) as client:
        await client.send({"type": "prompt", "text": EMAIL})
        asked = (await client.until("approval_required"))[-1]
    async with local.client() as http:
        calls = [
            ("/healthz", "get", "/healthz"),
            ("/readyz", "get", "/readyz"),
            ("/api/me", "get", "/api/me"),
            ("/api/chats", "get", "/api/chats"),
            ("/api/chats/{chat_id}", "get", f"/api/chats/{chat_id}"),
            ("/api/chats/{chat_id}/events", "get", f"/api/chats/{chat_id}/events"),
            ("/api/approvals", "get", "/api/approvals"),
            ("/api/connectors", "get", "/api/connectors"),
            (
                "/api/chats/{chat_id}/rap-subscriptions",
                "get",
                f"/api/chats/{chat_id}/rap-subscriptions",
            ),
        ]
        bodies = {}
        for path, method, url in calls:
            answer = await http.request(method.upper(), url)
            assert answer.status_code == 200, (url, answer.text)
            check_answer(document, path, method, 200, answer.json())
            bodies[path] = answer.json()
        # What was checked holds the interesting parts: a paused turn, a pending approval.
        assert bodies["/api/chats/{chat_id}"]["approvals"][0]["status"] == "pending"
        assert any(
            e["type"] == "approval_required"
            for e in bodies["/api/chats/{chat_id}/events"]["events"]
        )
        decide = "/api/chats/{chat_id}/approvals/{approval_id}"
        url = f"/api/chats/{chat_id}/approvals/{asked['approval_id']}"
        answer = await http.post(url, json={"decision": "reject", "reason": "not now"})
        assert answer.status_code == 200, answer.text
        check_answer(document, decide, "post", 200, answer.json())
        again = await http.post(url, json={"decision": "approve"})
        assert again.status_code == 409
        check_answer(document, decide, "post", 409, again.json())
        bad = await http.post(url, json={"decision": "maybe"})
        assert bad.status_code == 400
        check_answer(document, decide, "post", 400, bad.json())
        # Connect and disconnect a demo account: both answers as documented.
        connected = await http.post("/api/connectors/gmail/connect")
        check_answer(document, "/api/connectors/{name}/connect", "post", 200, connected.json())
        gone = await http.delete("/api/connectors/gmail")
        check_answer(document, "/api/connectors/{name}", "delete", 200, gone.json())
        unknown = await http.get("/api/chats/no-such-chat")
        assert unknown.status_code == 404
        check_answer(document, "/api/chats/{chat_id}", "get", 404, unknown.json())
        # A body the schema does not allow is caught (so the checks above can fail).
        with pytest.raises(AssertionError):
            check_answer(document, "/api/me", "get", 200, {**bodies["/api/me"], "extra": 1})
