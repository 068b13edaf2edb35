"""The REST API's answers as pydantic models: routes build their JSON through these, and
``/openapi.json`` (``app.openapi``) publishes the same models' schemas, so the document
cannot describe a shape the server does not send.

Every model forbids fields it does not name (``additionalProperties: false`` in the
document), so a field added to an answer without its model fails the schemathesis run of
``tests/api`` instead of going undocumented. ``dump`` is how a route serialises one.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from starlette.responses import JSONResponse

from storage.feedback import MAX_COMMENT_CHARS
from storage.records import ApprovalStatus, TurnStatus
from wire.events import TS_PATTERN, ApprovalEffect, Usage

# RFC 3339 UTC with milliseconds and a "Z" (app.api_json.rfc3339), like every event's ts.
Timestamp = Annotated[str, Field(pattern=TS_PATTERN, examples=["2025-01-31T12:00:00.000Z"])]

# One persisted event exactly as the socket sent it; its schema is the protocol's own
# (wire.events, the discriminated union of every event model), registered by app.openapi
# under this name. Kept a plain dict here: events are stored JSON, passed through as is.
SERVER_EVENT = "ServerEvent"
WireEvent = Annotated[
    dict[str, Any], WithJsonSchema({"$ref": f"#/components/schemas/{SERVER_EVENT}"})
]


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=False)


def json_answer(model: ApiModel, status_code: int = 200, **kwargs: Any) -> JSONResponse:
    """The route's answer: ``model`` as JSON (its documented shape)."""
    return JSONResponse(model.dump(), status_code=status_code, **kwargs)


# ----------------------------------------------------------------------------- errors


class ErrorDetail(ApiModel):
    code: str = Field(
        description="One of docs/protocol.md §5's codes, e.g. invalid_request, not_found",
        examples=["not_found"],
    )
    message: str = Field(description="Short, human-readable; never holds secrets")


class ErrorBody(ApiModel):
    """Every refusal of the REST API (app.errors)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"error": {"code": "not_found", "message": "chat not found"}}]
        }
    )

    error: ErrorDetail


class OpenResponsesErrorDetail(ApiModel):
    type: str = Field(examples=["invalid_request"])
    code: str | None
    param: str | None
    message: str


class OpenResponsesErrorBody(ApiModel):
    """The Open Responses spec's error object (``/v1/*``, app.openresponses.errors)."""

    error: OpenResponsesErrorDetail


# ----------------------------------------------------------------------------- service


class OidcClientConfig(ApiModel):
    """What the bundled page needs to run the authorization-code flow with PKCE itself
    (a public client: nothing here is secret)."""

    issuer: str
    client_id: str | None
    scopes: str = Field(examples=["openid profile email"])
    audience: str | None
    authorization_endpoint: str
    token_endpoint: str
    end_session_endpoint: str | None


class AuthConfig(ApiModel):
    """How to sign in on this server (``docs/auth.md``); ``oidc`` only in that mode."""

    mode: Literal["local", "token", "oidc", "header"]
    oidc: OidcClientConfig | None = None

    def dump(self) -> dict[str, Any]:
        # The page tells "not in oidc mode" by the key's absence, as before the model.
        return self.model_dump(mode="json", exclude_none=True)


class Health(ApiModel):
    status: Literal["ok"]


class Readiness(ApiModel):
    """``degraded``: Redis is configured but unreachable (events of other instances reach
    this one's sockets late); ``unavailable`` (503): the database is."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["ok", "degraded", "unavailable"]
    database: Literal["ok", "unavailable"]
    redis: Literal["ok", "unreachable"] | None = Field(
        default=None, description="Present only when Redis is configured"
    )

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


# ----------------------------------------------------------------------------- chats


class Me(ApiModel):
    id: str
    name: str
    auth_mode: str = Field(description="How this server signs people in: local, token, …")


class ChatSummary(ApiModel):
    id: str
    title: str | None
    created_at: Timestamp
    updated_at: Timestamp
    preview: str | None


class ChatPage(ApiModel):
    chats: list[ChatSummary] = Field(description="Newest first")
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page; null: last")


class ChatSearchHit(ChatSummary):
    matched: Literal["title", "prompt", "answer"] = Field(
        description="Where the snippet comes from (a tool's output is never searched)"
    )
    snippet: str = Field(description="About 160 characters of that text around the match")


class ChatSearchPage(ApiModel):
    chats: list[ChatSearchHit] = Field(description="Matching chats, newest first")
    next_cursor: str | None = Field(description="Pass as ?cursor= (with the same q): next page")


MAX_TITLE_CHARS = 200

# Text the server stores, as the document states it: no U+0000 (PostgreSQL cannot hold
# it) and no unpaired surrogate (no engine can): the server refuses those with a 400
# naming the field. JSON Schema only: the server's own check says which character.
_STORABLE_CHAR = r"[^\u0000\uD800-\uDFFF]"
STORABLE_TEXT = rf"^{_STORABLE_CHAR}*$"
# The same, with something besides white space (the server trims, then refuses a blank).
NOT_BLANK_TEXT = rf"^{_STORABLE_CHAR}*[^\s\u0000\uD800-\uDFFF]{_STORABLE_CHAR}*$"


class ChatRename(ApiModel):
    title: str = Field(
        min_length=1,
        max_length=MAX_TITLE_CHARS,
        description="The new title; surrounding spaces are trimmed, and it may not be blank",
        examples=["Coffee spending in May"],
        json_schema_extra={"pattern": NOT_BLANK_TEXT},
    )


FeedbackRating = Literal["up", "down"]


class FeedbackIn(ApiModel):
    """A rating of one answer; sending it again replaces the earlier one."""

    rating: FeedbackRating = Field(description="Thumbs up or down", examples=["down"])
    comment: str | None = Field(
        default=None,
        max_length=MAX_COMMENT_CHARS,
        description=f"Optional, up to {MAX_COMMENT_CHARS} characters, kept as plain text; "
        "blank is no comment",
        examples=["It listed last year's transactions"],
        json_schema_extra={"pattern": STORABLE_TEXT},
    )


class TurnFeedback(ApiModel):
    """The signed-in user's current rating of a turn's answer."""

    turn_id: str
    rating: FeedbackRating
    comment: str | None
    created_at: Timestamp = Field(description="When the answer was first rated")
    updated_at: Timestamp = Field(description="When the rating or comment last changed")


class ChatExport(ApiModel):
    chat: ChatSummary
    events: list[WireEvent] = Field(description="Every persisted event, in seq order")
    feedback: list[TurnFeedback] = Field(
        default_factory=list, description="The user's ratings of the chat's answers"
    )


class Turn(ApiModel):
    id: str
    prompt: str
    final_text: str | None
    status: TurnStatus = Field(description="A turn waiting for an approval is still running")
    usage: dict[str, Any] | None = Field(description="input/output/total tokens and requests")
    created_at: Timestamp
    finished_at: Timestamp | None
    client_message_id: str | None
    feedback: TurnFeedback | None = Field(
        default=None, description="The signed-in user's rating of the answer; null: none"
    )
    superseded_by: str | None = Field(
        default=None,
        description="The turn that replaced this one (regenerate or edit); it stays in the log",
    )
    continues: str | None = Field(
        default=None, description="The stopped turn this one continues (a continue frame)"
    )


# What GET /api/chats/{id}/export?format=json answers (built by app.chat_export).
class ExportTurn(Turn):
    cut_off: str | None = Field(
        default=None,
        description="Why the answer was cut off (its llm_response's incomplete_reason: "
        "max_output_tokens, content_filter); null: it was not",
    )


class ChatExportDocument(ChatExport):
    turns: list[ExportTurn] = Field(
        description="Every turn, oldest first, as GET /api/chats/{id} gives it: its "
        "final_text is the answer as far as it got (a stopped or failed turn's unfinished "
        "text too), its status how it ended, superseded_by whether it was replaced"
    )


class Approval(ApiModel):
    """An approval as asked for, and the record of its decision (docs/protocol.md,
    "Approval records")."""

    approval_id: str
    chat_id: str
    turn_id: str
    call_id: str
    name: str = Field(description="The tool's function name")
    description: str
    arguments: dict[str, Any] = Field(description="Exactly what will run once approved")
    effect: ApprovalEffect | None = Field(
        default=None,
        description="What the call will do, resolved before asking (recipients, names, "
        "amounts); null when the arguments say it all",
    )
    current_agent: str
    status: ApprovalStatus
    created_at: Timestamp
    expires_at: Timestamp
    decided_at: Timestamp | None
    decided_by: str | None = Field(description="The user who decided; null: the server did")
    decided_via: str | None = Field(description="socket:<id>, rest, responses, expiry, …")
    reason: str | None


class ChatDetail(ChatSummary):
    turns: list[Turn]
    usage: Usage = Field(description="The sum over the chat's turns")
    approvals: list[Approval] = Field(description="Every approval asked for, oldest first")


class EventPage(ApiModel):
    events: list[WireEvent] = Field(description="Persisted events in seq order")


class ApprovalList(ApiModel):
    approvals: list[Approval]


class Decided(ApiModel):
    approval: Approval | None


# ----------------------------------------------------------------------------- connectors


class ConnectorTool(ApiModel):
    name: str
    description: str = Field(description="The progress text of its tool_call events")


class ServerState(ApiModel):
    state: str = Field(examples=["connected", "reconnecting", "failed"])
    reason: str | None


class ConnectorInfo(ApiModel):
    """One connector as every connector endpoint describes it (docs/protocol.md,
    "Connector endpoints")."""

    name: str
    display_name: str
    agent_name: str
    mode: Literal["demo", "live"]
    needs_account: bool
    connected: bool
    account: dict[str, Any] | None = Field(description="Non-secret details of the connection")
    connected_at: Timestamp | None
    tools: list[ConnectorTool]
    server: ServerState | None = Field(description="A remote (MCP) server's connection")
    icon: str | None
    card: str | None = Field(description="Its UI card module's URL, with a digest")
    card_css: str | None


class FailedConnector(ApiModel):
    name: str
    origin: str
    reason: str


class ConnectorList(ApiModel):
    connectors: list[ConnectorInfo]
    failed: list[FailedConnector] = Field(description="Installed or configured but not served")


class ConnectedAnswer(ApiModel):
    status: Literal["connected"]
    connector: ConnectorInfo


class DisconnectedAnswer(ApiModel):
    status: Literal["disconnected"]
    connector: ConnectorInfo


class RedirectAnswer(ApiModel):
    """An OAuth flow: send the browser to ``url``."""

    status: Literal["redirect"]
    url: str


class ClientStepAnswer(ApiModel):
    """A client widget (e.g. Plaid Link): run ``widget`` with the other fields, then post
    its result to ``finish``."""

    # The widget's own fields (a link token, its expiry) come beside these.
    model_config = ConfigDict(extra="allow")

    status: str = Field(examples=["link_token", "client_step"])
    widget: str
    finish: str


class ApiKeyAnswer(ApiModel):
    """Ask the person for a key and post it to ``finish`` as ``{"api_key": …}``."""

    status: Literal["api_key"]
    label: str
    help: str
    finish: str


ConnectAnswer = ConnectedAnswer | RedirectAnswer | ApiKeyAnswer | ClientStepAnswer


# ----------------------------------------------------------------------------- RAP


class CallbackAccepted(ApiModel):
    status: Literal["accepted", "duplicate", "ignored"]


class Subscription(ApiModel):
    call_id: str
    connector: str
    operation: str
    created_at: Timestamp


class SubscriptionList(ApiModel):
    subscriptions: list[Subscription]


# ----------------------------------------------------------------------------- Open Responses


class ResponseObject(BaseModel):
    """An Open Responses response object (docs/open-responses.md): the spec's many fields
    are passed through as the service builds them; these are the ones always present."""

    model_config = ConfigDict(extra="allow")

    id: str
    object: Literal["response"]
    status: str = Field(examples=["completed", "incomplete"])


# ----------------------------------------------------------------------------- attachments


class AttachmentUpload(ApiModel):
    """The multipart form of an upload: one part named ``file``."""

    file: bytes = Field(
        json_schema_extra={"format": "binary", "contentMediaType": "application/octet-stream"},
        description="The file. Its type is read from its bytes; the declared Content-Type "
        "and the file name's extension are not trusted",
    )


class Attachment(ApiModel):
    """A file uploaded into a chat, as its bytes showed it to be."""

    id: str = Field(examples=["att_6c8e2c7b0a3f4e1d9b5a7c3e1f2d4b6a"])
    chat_id: str
    name: str = Field(description="The uploaded file's name, without folders or controls")
    content_type: str = Field(description="Sniffed from the bytes", examples=["image/png"])
    size: int = Field(ge=1, description="In bytes")
    width: int | None = Field(description="An image's width in pixels; null for files")
    height: int | None = Field(description="An image's height in pixels; null for files")
    sha256: str = Field(pattern="^[0-9a-f]{64}$")
    created_at: Timestamp
    sent: bool = Field(description="Whether a prompt has referred to it yet")
