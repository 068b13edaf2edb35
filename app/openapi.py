"""``GET /openapi.json`` (OpenAPI 3.1) built from the app's own routing table, and ``GET
/docs``, a vendored Swagger UI reading it.

Not Starlette's ``SchemaGenerator``: it reads YAML from docstrings, which nothing checks
against what the endpoint does. Here the paths, methods and path parameters come from the
routes, each operation's words and answers from its ``app.api_docs.Operation``, and every
schema from pydantic (``TypeAdapter.json_schemas``: JSON Schema 2020-12, which is what
OpenAPI 3.1 uses) for the very models the endpoints validate with and serialise through.

The document depends on the server: the security it asks for follows the auth mode (local
mode needs no credentials at all) and a connector's ``finish`` body is one of the served
connectors' own finish models. WebSockets are not REST: their endpoints are listed in the
description and documented in docs/protocol.md and docs/open-responses.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Union

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import core_schema
from starlette.convertors import IntegerConvertor
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute

from app.api_docs import Answer, Operation, documented, operations_of
from app.api_models import SERVER_EVENT, STORABLE_TEXT, ErrorBody, OpenResponsesErrorBody
from app.services import services_of
from connectors.names import DISTRIBUTION
from connectors.registry import Connector
from wire.events import CHAT_ID_PATTERN, MAX_APPROVAL_ID, server_event_adapter

REF = "#/components/schemas/{model}"
BEARER = "bearerAuth"
COOKIE = "sessionCookie"

# Path parameters the endpoints check beyond "a string" (app.request_input): a chat id
# no chat can have, or an approval id too long for one, answers 404.
PATH_SCHEMAS: dict[str, dict[str, Any]] = {
    "chat_id": {"type": "string", "pattern": CHAT_ID_PATTERN},
    "approval_id": {"type": "string", "minLength": 1, "maxLength": MAX_APPROVAL_ID},
}

_ERROR_MODEL = {"rest": ErrorBody, "open_responses": OpenResponsesErrorBody}
_SIGNED_IN_ERRORS = {
    401: "Not signed in: no, or an unknown, bearer token (token mode)",
    403: "A browser page from an Origin this server does not allow",
    503: "The database is unavailable; retry after Retry-After seconds",
}


def _package_version() -> str:
    try:
        return version(DISTRIBUTION)  # pyproject.toml's, as `switchboard --version` says
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


# Read once, on import (start-up): reading it reads the package's metadata files, which
# must not happen on the event loop at each request for the document.
PACKAGE_VERSION = _package_version()


@dataclass(frozen=True)
class Documented:
    path: str
    method: str
    route: Route
    operation: Operation


def documented_routes(routes: Sequence[BaseRoute]) -> Iterator[Documented]:
    for route in routes:
        if isinstance(route, Route):
            for method, operation in operations_of(route.endpoint).items():
                yield Documented(route.path, method, route, operation)


def undocumented(routes: Sequence[BaseRoute]) -> list[str]:
    """Every HTTP route and method the document leaves out ("GET /path"); HEAD, which
    Starlette answers for every GET, counts as documented with its GET."""
    missing = []
    for route in routes:
        if isinstance(route, Route):
            marked = set(operations_of(route.endpoint))
            for method in sorted((route.methods or set()) - {"HEAD"} - marked):
                missing.append(f"{method} {route.path}")
        elif not isinstance(route, (Mount, WebSocketRoute)):
            missing.append(f"{type(route).__name__} {getattr(route, 'path', '?')}")
    return missing


class _StorableInput(GenerateJsonSchema):
    """Every string a request may send says it is one the server stores: no U+0000, no
    unpaired surrogate (``STORABLE_TEXT``). The server refuses those with a 400 naming the
    field (``websocket.protocol.unstorable_at``); a string with its own pattern or format
    says more already. (Object keys are not described: schemathesis cannot read such a
    pattern in ``propertyNames``.)"""

    def str_schema(self, schema: core_schema.StringSchema) -> JsonSchemaValue:
        described = super().str_schema(schema)
        if self.mode == "validation" and not {"pattern", "format"} & described.keys():
            described["pattern"] = STORABLE_TEXT
        return described

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        described = super().dict_schema(schema)
        # A key is a string too, which pydantic would turn into patternProperties: keys
        # are left free (see above), their values keep the pattern.
        patterned = described.pop("patternProperties", None)
        if patterned is not None and list(patterned) == [STORABLE_TEXT]:
            described["additionalProperties"] = patterned[STORABLE_TEXT]
        elif patterned is not None:
            described["patternProperties"] = patterned
        return described


class _Schemas:
    """Collects every type the document names, then has pydantic describe them all at
    once, so shared models become one component each."""

    def __init__(self) -> None:
        self._wanted: dict[tuple[str, JsonSchemaMode], TypeAdapter[Any]] = {}

    def ref(self, annotation: Any, mode: JsonSchemaMode) -> tuple[str, JsonSchemaMode]:
        key = (_key_of(annotation), mode)
        if key not in self._wanted:
            self._wanted[key] = TypeAdapter(annotation)
        return key

    def resolve(self) -> tuple[dict[tuple[str, JsonSchemaMode], Any], dict[str, Any]]:
        inputs = [(key, mode, adapter) for (key, mode), adapter in self._wanted.items()]
        inputs.append((SERVER_EVENT, "serialization", server_event_adapter()))
        by_key, defs = TypeAdapter.json_schemas(
            inputs, ref_template=REF, schema_generator=_StorableInput
        )
        components = dict(defs.get("$defs", {}))
        components[SERVER_EVENT] = by_key[(SERVER_EVENT, "serialization")]
        return {key: schema for key, schema in by_key.items()}, components


def _key_of(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or repr(annotation)


def _body_type(operation: Operation, connectors: Sequence[Connector]) -> Any:
    body = operation.body
    if body is None:
        return None
    if callable(body) and not isinstance(body, type) and not hasattr(body, "__origin__"):
        choices = list(body(connectors))
        if not choices:
            return None
        return choices[0] if len(choices) == 1 else Union[tuple(choices)]  # noqa: UP007
    return body


def _parameters(item: Documented) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = []
    for name, convertor in item.route.param_convertors.items():
        schema = PATH_SCHEMAS.get(name, {"type": "string", "minLength": 1})
        if isinstance(convertor, IntegerConvertor):
            schema = {"type": "integer", "minimum": 0}
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    for query in item.operation.query:
        parameters.append(
            {
                "name": query.name,
                "in": "query",
                "required": query.required,
                "description": query.description,
                "schema": dict(query.schema),
            }
        )
    return parameters


# One Server-Sent Event, as OpenAPI tools read a stream: its fields after parsing. The
# data is one JSON event of the stream's protocol (AG-UI's, or the Open Responses spec's).
SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "event": {"type": "string"},
        "data": {"type": "string", "contentMediaType": "application/json"},
        "id": {"type": "string"},
        "retry": {"type": "integer"},
    },
}


def _text_schema(media_type: str) -> dict[str, Any]:
    if media_type == "text/event-stream":
        return dict(SSE_EVENT)
    return {"type": "string"}


def _security(auth_mode: str) -> list[dict[str, list[str]]]:
    if auth_mode == "local":
        return [{}]  # the single local user: no credentials (loopback only)
    return [{BEARER: []}, {COOKIE: []}]


def _security_schemes() -> dict[str, Any]:
    return {
        BEARER: {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "an API token, or a JWT where the server verifies them",
            "description": "Authorization: Bearer <token>. Not needed in local mode.",
        },
        COOKIE: {
            "type": "apiKey",
            "in": "cookie",
            "name": "sb_session",
            "description": "The bundled UI's session cookie (token mode).",
        },
    }


class _Builder:
    def __init__(self, auth_mode: str, connectors: Sequence[Connector]) -> None:
        self.auth_mode = auth_mode
        self.connectors = connectors
        self.schemas = _Schemas()
        # (path, method, status) → the schema key of its body; filled in by resolve.
        self.pending: list[tuple[dict[str, Any], tuple[str, JsonSchemaMode]]] = []

    def _content(self, media_type: str, annotation: Any, mode: JsonSchemaMode) -> dict[str, Any]:
        holder: dict[str, Any] = {}
        self.pending.append((holder, self.schemas.ref(annotation, mode)))
        return {media_type: holder}

    def _answer(self, answer: Answer) -> dict[str, Any]:
        out: dict[str, Any] = {"description": answer.description}
        text_media = list(answer.also)
        if answer.model is not None:
            out["content"] = self._content(answer.media_type, answer.model, "serialization")
        elif answer.media_type != "application/json":
            out["content"] = {}
            text_media.insert(0, answer.media_type)
        for media in text_media:
            out.setdefault("content", {})[media] = {"schema": _text_schema(media)}
        if answer.headers:
            out["headers"] = {
                name: {"description": words, "schema": {"type": "string"}}
                for name, words in answer.headers.items()
            }
        return out

    def _error(self, operation: Operation, description: str) -> Answer:
        if operation.errors in _ERROR_MODEL:
            return Answer(description, _ERROR_MODEL[operation.errors])
        media = "text/html" if operation.errors == "html" else "text/plain"
        return Answer(description, media_type=media)

    def operation(self, item: Documented) -> dict[str, Any]:
        operation = item.operation
        answers = dict(operation.answers)
        if operation.signed_in:
            for status, words in _SIGNED_IN_ERRORS.items():
                answers.setdefault(status, self._error(operation, words))
        out: dict[str, Any] = {
            "operationId": _operation_id(item),
            "summary": operation.summary,
            "tags": [operation.tag],
            "responses": {
                str(status): self._answer(answer) for status, answer in sorted(answers.items())
            },
            "security": _security(self.auth_mode) if operation.signed_in else [],
        }
        if operation.description:
            out["description"] = operation.description
        parameters = _parameters(item)
        if parameters:
            out["parameters"] = parameters
        body = _body_type(operation, self.connectors)
        if body is not None:
            out["requestBody"] = {
                "required": True,
                "content": self._content(operation.body_media_type, body, "validation"),
            }
        return out

    def resolve(self) -> dict[str, Any]:
        by_key, components = self.schemas.resolve()
        for holder, key in self.pending:
            holder["schema"] = by_key[key]
        return components


def _operation_id(item: Documented) -> str:
    words = re.sub(r"[{}]", "", item.path).strip("/").replace("/", "_").replace("-", "_")
    return f"{item.method.lower()}_{words or 'root'}"


def build_document(
    routes: Sequence[BaseRoute], *, auth_mode: str, connectors: Sequence[Connector] = ()
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes`` as a server in ``auth_mode`` serves them."""
    builder = _Builder(auth_mode, connectors)
    paths: dict[str, dict[str, Any]] = {}
    for item in documented_routes(routes):
        paths.setdefault(item.path, {})[item.method.lower()] = builder.operation(item)
    sockets = sorted(r.path for r in routes if isinstance(r, WebSocketRoute))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Switchboard",
            "version": PACKAGE_VERSION,
            "description": (
                "The REST API of Switchboard (docs/protocol.md §7 and the sections after "
                'it). Errors are {"error": {"code", "message"}} with the codes of §5; '
                "under /v1 they are the Open Responses spec's. Streams (/ag-ui, "
                "/v1/responses with stream: true) are Server-Sent Events, described in "
                "docs/ag-ui.md and docs/open-responses.md. WebSockets, not described "
                f"here: {', '.join(sockets)} (docs/protocol.md). Auth mode of this "
                f"server: {auth_mode}."
            ),
        },
        "paths": paths,
        "components": {
            "schemas": builder.resolve(),
            "securitySchemes": _security_schemes(),
        },
    }


# ----------------------------------------------------------------------------- endpoints

# As strict as the UI's page: Swagger UI runs from 'self' (its start-up is /static/docs.js,
# not an inline script), sets styles through the DOM (which style-src does not govern),
# and calls only this server ("Try it out"). tests/browser/test_api_docs.py enforces it.
DOCS_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
SWAGGER_UI = "/static/vendor/swagger-ui"
DOCS_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Switchboard API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{SWAGGER_UI}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-url="/openapi.json"></div>
<script src="{SWAGGER_UI}/swagger-ui-bundle.js"></script>
<script src="/static/docs.js"></script>
</body>
</html>
"""


@documented(
    "GET",
    Operation(
        summary="This document",
        tag="meta",
        signed_in=False,
        answers={200: Answer("The OpenAPI 3.1 description of this server's REST API")},
    ),
)
async def openapi_json(request: Request) -> Response:
    services = services_of(request)
    document = build_document(
        request.app.routes,
        auth_mode=services.settings.resolved_auth_mode,
        connectors=services.connectors,
    )
    return JSONResponse(document, headers={"Cache-Control": "no-cache"})


@documented(
    "GET",
    Operation(
        summary="The API's interactive documentation (Swagger UI)",
        tag="meta",
        signed_in=False,
        errors="html",
        answers={200: Answer("A page reading /openapi.json", media_type="text/html")},
    ),
)
async def docs_page(request: Request) -> Response:
    return HTMLResponse(
        DOCS_PAGE,
        headers={
            "Content-Security-Policy": DOCS_POLICY,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
        },
    )


def openapi_routes() -> list[BaseRoute]:
    return [
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/docs", docs_page, methods=["GET"]),
    ]
