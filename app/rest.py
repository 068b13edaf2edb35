"""REST API for chat history (docs/protocol.md §7). Same auth as the socket, through
``app.api_auth`` (Starlette's AuthenticationMiddleware).

A chat that belongs to another user answers 404 exactly like one that does not exist:
the repositories enforce ownership and raise ``ChatNotFound``, which ``app.errors`` maps.

``GET /api/chats/{id}/events?debug=true`` returns tool outputs' ``debug_info`` only when the
server runs with ``SWITCHBOARD_EXPOSE_DEBUG_INFO=true``; otherwise asking for it is a 400
(rather than silently ignored), so a developer knows why it is missing.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from app.api_auth import needs_user, signed_in
from app.api_docs import Answer, Operation, Query, documented
from app.api_json import approval_model, rfc3339
from app.api_models import (
    STORABLE_TEXT,
    ChatDetail,
    ChatExportDocument,
    ChatPage,
    ChatRename,
    ChatSearchHit,
    ChatSearchPage,
    ChatSummary,
    ErrorBody,
    EventPage,
    ExportTurn,
    Me,
    Turn,
    json_answer,
)
from app.chat_export import (
    cut_off_reasons,
    export_filename,
    markdown_transcript,
)
from app.errors import ApiError
from app.feedback_api import feedback_model
from app.request_input import bool_param, chat_id_param, int_param, json_body
from app.services import services_of
from storage.chats import ChatRepository, decode_cursor
from storage.engine import Database
from storage.events import EventStore
from storage.feedback import FeedbackRecord, FeedbackRepository
from storage.records import ChatRecord, TurnRecord
from storage.search import MAX_QUERY_CHARS, MAX_TERMS, WORD, BadQuery, search_chats
from wire.events import Usage

NOT_FOUND = Answer("No such chat of this user's (another user's chat answers the same)", ErrorBody)
RENAME_EXAMPLE = '{"title": "Coffee spending in May"}'
EXPORT_FORMATS = {"markdown": "md", "json": "json"}  # format → file extension
BAD_QUERY = Answer("A query parameter out of range, or a cursor not from a page", ErrorBody)


def chat_fields(chat: ChatRecord) -> dict[str, str | None]:
    return {
        "id": chat.id,
        "title": chat.title,
        "created_at": rfc3339(chat.created_at),
        "updated_at": rfc3339(chat.updated_at),
        "preview": chat.preview,
    }


def turn_model(turn: TurnRecord, rating: FeedbackRecord | None = None) -> Turn:
    return Turn(
        id=turn.id,
        prompt=turn.prompt,
        final_text=turn.final_text,
        status=turn.status,
        usage=turn.usage,
        created_at=rfc3339(turn.created_at) or "",
        finished_at=rfc3339(turn.finished_at),
        client_message_id=turn.client_message_id,
        feedback=feedback_model(rating) if rating is not None else None,
        superseded_by=turn.superseded_by,
        continues=turn.continues,
    )


def usage_totals(turns: list[TurnRecord]) -> Usage:
    totals = dict.fromkeys(Usage.model_fields, 0)
    for turn in turns:
        for key in Usage.model_fields:
            value = (turn.usage or {}).get(key)
            if isinstance(value, int):
                totals[key] += value
    return Usage(**totals)


@documented(
    "GET",
    Operation(
        summary="The signed-in user, and the server's auth mode",
        tag="chats",
        answers={200: Answer("Who is signed in", Me)},
    ),
)
async def me(request: Request) -> Response:
    user = signed_in(request)
    mode = services_of(request).settings.resolved_auth_mode
    return json_answer(Me(id=user.id, name=user.name, auth_mode=mode))


@documented(
    "GET",
    Operation(
        summary="The user's chats, newest first, a page at a time",
        tag="chats",
        query=(
            Query(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": 100, "default": 50},
                "Chats per page",
            ),
            Query("cursor", {"type": "string"}, "The next_cursor of the previous page"),
            Query(
                "q",
                {"type": "string", "maxLength": MAX_QUERY_CHARS, "pattern": STORABLE_TEXT},
                "Full-text search of titles, prompts and answers (every word, as a prefix; "
                f"at most {MAX_TERMS} words): answers a ChatSearchPage, with a snippet per "
                "chat. A q without letters or digits (blank, punctuation) matches nothing",
            ),
        ),
        description=(
            "A chat is listed once it has a prompt: a chat only opened, or whose first "
            "send never reached the server, is not."
        ),
        answers={
            200: Answer("One page of chats (of matching chats with q)", ChatPage | ChatSearchPage),
            400: Answer(f"A bad limit or cursor, or a q of more than {MAX_TERMS} words", ErrorBody),
        },
    ),
)
async def list_chats(request: Request) -> Response:
    user = signed_in(request)
    limit = int_param(request, "limit", default=50, low=1, high=100)
    cursor = request.query_params.get("cursor") or None
    query = request.query_params.get("q")
    db = services_of(request).db
    try:
        if query is not None:
            return json_answer(await _search(db, user.id, query, limit, cursor))
        chats, next_cursor = await ChatRepository(db, user.id).list(limit=limit, cursor=cursor)
    except BadQuery as exc:
        raise ApiError(400, "invalid_request", str(exc)) from None
    except ValueError:
        raise ApiError(
            400, "invalid_request", "cursor is not valid; pass the next_cursor of a previous page"
        ) from None
    page = ChatPage(
        chats=[ChatSummary.model_validate(chat_fields(c)) for c in chats], next_cursor=next_cursor
    )
    return json_answer(page)


async def _search(
    db: Database, user_id: str, query: str, limit: int, cursor: str | None
) -> ChatSearchPage:
    if not WORD.search(query):
        # Nothing to search for (blank, or punctuation only): nothing matches, as a search
        # box that finds nothing shows; the cursor is still checked.
        if cursor is not None:
            decode_cursor(cursor)
        return ChatSearchPage(chats=[], next_cursor=None)
    hits, next_cursor = await search_chats(db, user_id, query, limit=limit, cursor=cursor)
    return ChatSearchPage(
        chats=[
            ChatSearchHit.model_validate(
                chat_fields(hit.chat) | {"matched": hit.kind, "snippet": hit.snippet}
            )
            for hit in hits
        ],
        next_cursor=next_cursor,
    )


async def get_chat(request: Request) -> Response:
    user = signed_in(request)
    chat_id = chat_id_param(request)
    repo = ChatRepository(services_of(request).db, user.id)
    chat = await repo.get(chat_id)
    if chat is None:
        raise ApiError(404, "not_found", "chat not found")
    turns = await repo.turns(chat_id)
    ratings = await FeedbackRepository(services_of(request).db, user.id).for_chat(chat_id)
    approvals = await services_of(request).turns.approvals.for_chat(chat_id)
    detail = ChatDetail.model_validate(
        chat_fields(chat)
        | {
            "turns": [turn_model(t, ratings.get(t.id)) for t in turns],
            "usage": usage_totals(turns),
            # Every approval asked for in the chat, with who decided, when, how and why.
            "approvals": [approval_model(a) for a in approvals],
        }
    )
    return json_answer(detail)


@documented(
    "GET",
    Operation(
        summary="The chat's persisted events, exactly as the socket sent them",
        tag="chats",
        query=(
            Query(
                "after_seq",
                {"type": "integer", "minimum": 0, "maximum": 2**31 - 1, "default": 0},
                "Only events with a greater seq",
            ),
            Query(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": 1000, "default": 500},
                "At most this many events",
            ),
            Query(
                "debug",
                {"type": "boolean", "default": False},
                "Include tool outputs' debug_info (only with "
                "SWITCHBOARD_EXPOSE_DEBUG_INFO=true, else 403)",
            ),
        ),
        answers={
            200: Answer("Events in seq order (none for a chat of another user's)", EventPage),
            400: BAD_QUERY,
            # Well formed, and refused by this server's setting: the request is not wrong.
            403: Answer("debug=true on a server that does not expose debug_info", ErrorBody),
            404: Answer("A chat id no chat can have", ErrorBody),
        },
    ),
)
async def chat_events(request: Request) -> Response:
    user = signed_in(request)
    chat_id = chat_id_param(request)
    after_seq = int_param(request, "after_seq", default=0, low=0, high=2**31 - 1)
    limit = int_param(request, "limit", default=500, low=1, high=1000)
    debug = bool_param(request, "debug")
    services = services_of(request)
    if debug and not services.settings.expose_debug_info:
        raise ApiError(
            403,
            "forbidden",
            "debug_info is not exposed by this server; start it with "
            "SWITCHBOARD_EXPOSE_DEBUG_INFO=true",
        )
    events = await ChatRepository(services.db, user.id).events(chat_id, after_seq, limit)
    return json_answer(EventPage(events=[e.to_wire(include_debug=debug) for e in events]))


async def delete_chat(request: Request) -> Response:
    user = signed_in(request)
    chat_id = chat_id_param(request)
    services = services_of(request)
    repo = ChatRepository(services.db, user.id)
    if await repo.get(chat_id) is None:
        raise ApiError(404, "not_found", "chat not found")
    running = await EventStore(services.db).running_turn(chat_id)
    if running is not None:
        raise ApiError(
            409, "turn_in_progress", "a turn is running in this chat; cancel it, then delete"
        )
    blob_keys = await services.attachments.repo.blob_keys_of_chat(chat_id)
    if not await repo.delete(chat_id):
        raise ApiError(404, "not_found", "chat not found")
    # The rows went with the chat (cascade); their bytes go from the blob store now.
    await services.attachments.forget(blob_keys)
    # Its id is free again, for anyone: no socket may stay attached to it.
    await services.connections.close_chat(chat_id)
    await services.turns.cluster.announce_deleted(chat_id)
    return Response(status_code=204)


@documented(
    "GET",
    Operation(
        summary="A chat with its turns, usage and approvals",
        tag="chats",
        answers={200: Answer("The chat", ChatDetail), 404: NOT_FOUND},
    ),
)
@documented(
    "DELETE",
    Operation(
        summary="Delete a chat with its events; its sockets are closed",
        tag="chats",
        answers={
            204: Answer("Deleted"),
            404: NOT_FOUND,
            409: Answer("A turn is running in the chat: cancel it first", ErrorBody),
        },
    ),
)
@documented(
    "PATCH",
    Operation(
        summary="Rename a chat",
        tag="chats",
        body=ChatRename,
        answers={
            200: Answer("The renamed chat", ChatSummary),
            400: Answer("Not a JSON object with a title of 1 to 200 characters", ErrorBody),
            404: NOT_FOUND,
        },
    ),
)
async def chat(request: Request) -> Response:
    # One route per path, so a 405 lists every allowed method in its Allow header.
    if request.method == "DELETE":
        return await delete_chat(request)
    if request.method == "PATCH":
        return await rename_chat(request)
    return await get_chat(request)


async def rename_chat(request: Request) -> Response:
    user = signed_in(request)
    chat_id = chat_id_param(request)
    body: ChatRename = await json_body(request, ChatRename, RENAME_EXAMPLE)
    # Trimmed and on one line: a title is a sidebar entry and a file name.
    title = " ".join(body.title.split())
    if not title:
        raise ApiError(
            400, "invalid_request", f"title may not be blank (expected {RENAME_EXAMPLE})"
        )
    services = services_of(request)
    repo = ChatRepository(services.db, user.id)
    await repo.set_title(chat_id, title)  # ChatNotFound (another user's too) → 404
    chat = await repo.get(chat_id)
    if chat is None:  # deleted in between
        raise ApiError(404, "not_found", "chat not found")
    services.turns.announce_title(user.id, chat_id, title)  # the chat's other open tabs
    return json_answer(ChatSummary.model_validate(chat_fields(chat)))


@documented(
    "GET",
    Operation(
        summary="Download a chat as a Markdown transcript or as its JSON events",
        tag="chats",
        query=(
            Query(
                "format",
                {"type": "string", "enum": list(EXPORT_FORMATS), "default": "markdown"},
                "markdown: prompts, answers (marked when cut off, stopped, failed or "
                "replaced), tool cards by their plain text, approvals; json: the chat, its "
                "turns and every stored event",
            ),
        ),
        answers={
            200: Answer(
                "The file (Content-Disposition: attachment, named after the title)",
                ChatExportDocument,
                headers={"Content-Disposition": "attachment; filename=<title>.md or .json"},
                also=("text/markdown",),
            ),
            400: Answer("format is not markdown or json", ErrorBody),
            404: NOT_FOUND,
        },
    ),
)
async def export_chat(request: Request) -> Response:
    user = signed_in(request)
    chat_id = chat_id_param(request)
    export_format = request.query_params.get("format", "markdown")
    if export_format not in EXPORT_FORMATS:
        raise ApiError(400, "invalid_request", "format must be markdown or json")
    repo = ChatRepository(services_of(request).db, user.id)
    chat = await repo.get(chat_id)
    if chat is None:
        raise ApiError(404, "not_found", "chat not found")
    events = await repo.events(chat_id)
    turns = await repo.turns(chat_id)
    ratings = await FeedbackRepository(services_of(request).db, user.id).for_chat(chat_id)
    extension = EXPORT_FORMATS[export_format]
    headers = {"Content-Disposition": f'attachment; filename="{export_filename(chat, extension)}"'}
    if export_format == "json":
        cut_off = cut_off_reasons(events)
        document = ChatExportDocument(
            chat=ChatSummary.model_validate(chat_fields(chat)),
            events=[e.to_wire() for e in events],
            feedback=[feedback_model(r) for r in ratings.values()],
            turns=[
                ExportTurn(
                    **turn_model(t, ratings.get(t.id)).model_dump(), cut_off=cut_off.get(t.id)
                )
                for t in turns
            ],
        )
        return json_answer(document, headers=headers)
    return Response(
        markdown_transcript(chat, events, turns, ratings),
        media_type="text/markdown",
        headers=headers,
    )


def rest_routes() -> list[BaseRoute]:
    signed_in_only = needs_user()
    return [
        Route("/api/me", me, methods=["GET"], middleware=signed_in_only),
        Route("/api/chats", list_chats, methods=["GET"], middleware=signed_in_only),
        Route(
            "/api/chats/{chat_id}",
            chat,
            methods=["GET", "PATCH", "DELETE"],
            middleware=signed_in_only,
        ),
        Route(
            "/api/chats/{chat_id}/export", export_chat, methods=["GET"], middleware=signed_in_only
        ),
        Route(
            "/api/chats/{chat_id}/events", chat_events, methods=["GET"], middleware=signed_in_only
        ),
    ]
