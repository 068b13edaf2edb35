"""What ``/openapi.json`` says about an endpoint, declared on the endpoint itself.

A route module marks each endpoint function with ``@documented(METHOD, Operation(...))``
(stacked once per method when one function serves several). ``app.openapi`` walks the
app's routes and reads the marks, so the paths, methods and path parameters come from the
routing table itself and the schemas from the pydantic models the endpoints use; only
the words are written here. ``tests/api`` fails for a route without a mark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from connectors.registry import Connector

F = TypeVar("F", bound=Callable[..., Any])

MARK = "__openapi_operations__"

# Which error body an operation's refusals use: the REST API's ({"error": {code,
# message}}), the Open Responses spec's, an HTML page's, or plain text.
ErrorStyle = Literal["rest", "open_responses", "html", "text"]

# A request body whose shape depends on the served connectors (a flow's finish step):
# given them, the models it may be.
BodyFromConnectors = Callable[[Sequence[Connector]], Sequence[Any]]


@dataclass(frozen=True)
class Answer:
    """One documented status: its words, and the model (or any pydantic-typed value) of
    its body; ``model`` None: no body (or a body of ``media_type`` with no schema)."""

    description: str
    model: Any = None
    media_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)  # name → description
    also: Sequence[str] = ()  # more media types of a body with no schema (text/css, …)


@dataclass(frozen=True)
class Query:
    """A query parameter, with its JSON schema (what ``app.request_input`` accepts)."""

    name: str
    schema: Mapping[str, Any]
    description: str
    required: bool = False


@dataclass(frozen=True)
class Operation:
    summary: str
    tag: str
    answers: Mapping[int, Answer]
    description: str = ""
    body: Any = None  # a pydantic model, any type pydantic can describe, or BodyFromConnectors
    body_media_type: str = "application/json"
    query: Sequence[Query] = ()
    # Needs a signed-in user (app.api_auth.needs_user): 401, 403 and 503 are documented
    # for it, and it carries the server's security requirement.
    signed_in: bool = True
    errors: ErrorStyle = "rest"


def documented(method: str, operation: Operation) -> Callable[[F], F]:
    """Attach ``operation`` to the endpoint for ``method``."""

    def mark(endpoint: F) -> F:
        operations: dict[str, Operation] = dict(getattr(endpoint, MARK, {}))
        if method in operations:
            raise ValueError(f"{endpoint.__name__}: {method} documented twice")
        operations[method] = operation
        setattr(endpoint, MARK, operations)
        return endpoint

    return mark


def operations_of(endpoint: Any) -> Mapping[str, Operation]:
    found: Mapping[str, Operation] = getattr(endpoint, MARK, {})
    return found
