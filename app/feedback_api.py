"""Ratings of answers: ``PUT`` / ``DELETE /api/chats/{chat_id}/turns/{turn_id}/feedback``.

A person rates a turn's answer thumbs up or down, with an optional comment; rating again
replaces it, ``DELETE`` clears it. ``GET /api/chats/{id}`` returns each turn's rating, so
a reloaded page shows it, and the chat's export carries them. Another user's chat answers
404 like one that does not exist; so does a turn id the chat does not have (another
chat's turn too). A running turn has no answer to rate yet: 409.

``/metrics`` counts ratings given (``switchboard_feedback_total{rating}``: a first rating,
or a change to the other one, not a comment edit) and taken back
(``switchboard_feedback_cleared_total``).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from app.api_auth import needs_user, signed_in
from app.api_docs import Answer, Operation, documented
from app.api_json import rfc3339
from app.api_models import ErrorBody, FeedbackIn, TurnFeedback, json_answer
from app.errors import ApiError
from app.request_input import chat_id_param, json_body
from app.services import services_of
from storage.errors import ChatNotFound, TurnInProgress, TurnNotFound
from storage.feedback import FeedbackRecord, FeedbackRepository

EXAMPLE = '{"rating": "down", "comment": "optional, up to 2000 characters"}'
MAX_TURN_ID_CHARS = 64
NOT_FOUND = Answer(
    "No such chat of this user's (another user's answers the same), or no such turn in it",
    ErrorBody,
)


def feedback_model(record: FeedbackRecord) -> TurnFeedback:
    return TurnFeedback(
        turn_id=record.turn_id,
        rating=record.rating,
        comment=record.comment,
        created_at=rfc3339(record.created_at) or "",
        updated_at=rfc3339(record.updated_at) or "",
    )


def _turn_id(request: Request) -> str:
    turn_id: str = request.path_params["turn_id"]
    if not 1 <= len(turn_id) <= MAX_TURN_ID_CHARS:
        raise ApiError(404, "not_found", "turn not found in this chat")
    return turn_id


async def rate(request: Request) -> Response:
    user = signed_in(request)
    chat_id = chat_id_param(request)
    turn_id = _turn_id(request)
    body: FeedbackIn = await json_body(request, FeedbackIn, EXAMPLE)
    comment = body.comment if body.comment and body.comment.strip() else None
    services = services_of(request)
    try:
        change = await FeedbackRepository(services.db, user.id).rate(
            chat_id, turn_id, body.rating, comment
        )
    except ChatNotFound:
        raise ApiError(404, "not_found", "chat not found") from None
    except TurnNotFound:
        raise ApiError(404, "not_found", "turn not found in this chat") from None
    except TurnInProgress:
        raise ApiError(
            409,
            "turn_in_progress",
            "this turn is still running; rate its answer once it has finished",
        ) from None
    if change.before != change.after.rating:
        services.metrics.feedback.labels(change.after.rating).inc()
    return json_answer(feedback_model(change.after))


async def clear(request: Request) -> Response:
    user = signed_in(request)
    chat_id = chat_id_param(request)
    turn_id = _turn_id(request)
    services = services_of(request)
    try:
        before = await FeedbackRepository(services.db, user.id).clear(chat_id, turn_id)
    except ChatNotFound:
        raise ApiError(404, "not_found", "chat not found") from None
    except TurnNotFound:
        raise ApiError(404, "not_found", "turn not found in this chat") from None
    if before is not None:
        services.metrics.feedback_cleared.inc()
    return Response(status_code=204)


@documented(
    "PUT",
    Operation(
        summary="Rate a turn's answer thumbs up or down, with an optional comment",
        tag="chats",
        body=FeedbackIn,
        description=(
            "One rating per answer and user: sending another replaces it (comment "
            "included; leave it out to drop it). GET /api/chats/{chat_id} returns it "
            "with the turn."
        ),
        answers={
            200: Answer("The rating as stored", TurnFeedback),
            400: Answer(
                "Not a JSON object with a rating of up or down and a comment of at most "
                "2000 characters",
                ErrorBody,
            ),
            404: NOT_FOUND,
            409: Answer("The turn is still running: rate it once it has finished", ErrorBody),
        },
    ),
)
@documented(
    "DELETE",
    Operation(
        summary="Take back the rating of a turn's answer",
        tag="chats",
        answers={204: Answer("Cleared (also when there was none)"), 404: NOT_FOUND},
    ),
)
async def feedback(request: Request) -> Response:
    # One route per path, so a 405 lists every allowed method in its Allow header.
    if request.method == "DELETE":
        return await clear(request)
    return await rate(request)


def feedback_routes() -> list[BaseRoute]:
    return [
        Route(
            "/api/chats/{chat_id}/turns/{turn_id}/feedback",
            feedback,
            methods=["PUT", "DELETE"],
            middleware=needs_user(),
        )
    ]
