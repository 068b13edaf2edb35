"""REST for approvals (docs/protocol.md §3a, §7): the user's pending approvals, and deciding one.

``POST /api/chats/{id}/approvals/{approval_id}`` takes exactly the decision an ``approval``
frame takes, through the same ``TurnManager.decide``: the first decision wins, from any
socket or this endpoint, on any instance. An approval that is not a pending one of this
user's chat answers 404 whatever the reason (unknown, another chat's, another user's), so
nothing about other chats is revealed; one already decided (or expired) answers 409.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from app.api_auth import needs_user, signed_in
from app.api_docs import Answer, Operation, documented
from app.api_json import approval_model
from app.api_models import STORABLE_TEXT, ApprovalList, Decided, ErrorBody, json_answer
from app.errors import ApiError
from app.request_input import chat_id_param, json_body
from app.services import services_of
from storage.errors import ApprovalDecided, ApprovalNotFound
from websocket.handler import decision_refused, expired_refusal
from websocket.protocol import MAX_APPROVAL_ID, MAX_APPROVAL_REASON
from websocket.turn import NotApproved, ServerDraining

EXAMPLE = '{"decision": "approve"} or {"decision": "reject", "reason": "wrong address"}'


class DecisionBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    decision: Literal["approve", "reject"]
    reason: str | None = Field(
        default=None, max_length=MAX_APPROVAL_REASON, json_schema_extra={"pattern": STORABLE_TEXT}
    )


@documented(
    "GET",
    Operation(
        summary="The user's pending approvals across chats",
        tag="approvals",
        answers={200: Answer("Pending approvals", ApprovalList)},
    ),
)
async def pending_approvals(request: Request) -> Response:
    user = signed_in(request)
    pending = await services_of(request).turns.approvals.pending_for_user(user.id)
    return json_answer(ApprovalList(approvals=[approval_model(a) for a in pending]))


@documented(
    "POST",
    Operation(
        summary="Approve or reject a pending approval (the first decision wins)",
        tag="approvals",
        body=DecisionBody,
        answers={
            200: Answer("Decided: the approval's record", Decided),
            400: Answer("A body that is not a decision", ErrorBody),
            404: Answer("Not an approval of this chat (whoever's it is)", ErrorBody),
            409: Answer(
                "Already decided, past its expires_at, or what it would do changed (a new "
                "approval shows it)",
                ErrorBody,
            ),
            503: Answer("What it would do could not be checked now; try again", ErrorBody),
        },
    ),
)
async def decide(request: Request) -> Response:
    user = signed_in(request)
    chat_id = chat_id_param(request)
    approval_id: str = request.path_params["approval_id"]
    if not 1 <= len(approval_id) <= MAX_APPROVAL_ID:
        raise ApiError(404, "not_found", "approval not found in this chat")
    body: DecisionBody = await json_body(request, DecisionBody, EXAMPLE)
    if body.reason is not None and "\x00" in body.reason:
        raise ApiError(400, "invalid_request", "reason must not contain NUL (U+0000) characters")
    turns = services_of(request).turns
    try:
        decided = await turns.decide(
            user.id, chat_id, approval_id, body.decision == "approve", body.reason, "rest"
        )
    except ApprovalNotFound as exc:
        raise ApiError(404, "not_found", decision_refused(exc)) from None
    except ApprovalDecided as exc:
        raise ApiError(409, "invalid_request", decision_refused(exc)) from None
    except ServerDraining as exc:
        raise ApiError(503, "server_error", f"{exc}; the approval is still pending") from None
    except NotApproved as exc:
        if exc.retryable:
            raise ApiError(503, "server_error", str(exc)) from None
        raise ApiError(409, "invalid_request", str(exc)) from None
    if decided.expired:
        raise ApiError(409, "invalid_request", expired_refusal(approval_id))
    record = await turns.approvals.get(chat_id, approval_id)
    return json_answer(Decided(approval=approval_model(record) if record else None))


def approval_routes() -> list[BaseRoute]:
    signed_in_only = needs_user()
    return [
        Route("/api/approvals", pending_approvals, methods=["GET"], middleware=signed_in_only),
        Route(
            "/api/chats/{chat_id}/approvals/{approval_id}",
            decide,
            methods=["POST"],
            middleware=signed_in_only,
        ),
    ]
