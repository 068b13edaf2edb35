"""Reading a request's input: query and path parameters, JSON bodies.

What is wrong is a 400 (``ApiError``) that says what was expected; a chat id no chat can
have is a 404, as for a chat that does not exist.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from app.errors import ApiError
from websocket.protocol import CHAT_ID, unstorable_at

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise ApiError(400, "invalid_request", f"{name} must be an integer from {low} to {high}")
    return value


def bool_param(request: Request, name: str) -> bool:
    raw = request.query_params.get(name, "").lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ApiError(400, "invalid_request", f"{name} must be true or false")


# Deeper than any request of this API needs; the decoder recurses once per level.
MAX_JSON_DEPTH = 64
# A JSON string, or an unterminated one running to the end: always a match, so the scan
# stays linear whatever quotes and backslashes a body holds.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class JsonTooDeep(ValueError):
    """A JSON document nested deeper than ``MAX_JSON_DEPTH``."""


def _nests_deeper(text: str, limit: int) -> bool:
    if text.count("[") + text.count("{") <= limit:
        return False  # too few brackets to nest that deep: most bodies stop here
    depth = 0
    for bracket in _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > limit:
            return True
    return False


def load_json(body: bytes | bytearray) -> Any:
    """``json.loads``, but nesting deeper than ``MAX_JSON_DEPTH`` is ``JsonTooDeep``.

    Checked before decoding: ``"[" * 5000`` makes the decoder raise RecursionError, and a
    document just under the interpreter's limit leaves no stack for what walks it next.
    Anything else wrong is a ``ValueError``, as from ``json.loads``.
    """
    text = body.decode(json.detect_encoding(body), "surrogatepass")  # as json.loads does
    if _nests_deeper(text, MAX_JSON_DEPTH):
        raise JsonTooDeep(f"the body is nested more than {MAX_JSON_DEPTH} levels deep")
    return json.loads(text)


def not_json_media_type(content_type: str | None) -> str | None:
    """Why a body of this ``Content-Type`` is not read as JSON (a 415), or None.

    No ``Content-Type`` says nothing, and the body is read as JSON; one naming another
    media type (a form, text) would be misread: ``curl -d`` sends
    ``application/x-www-form-urlencoded``, whose body only looks like JSON by chance.
    """
    if content_type is None or not content_type.strip():
        return None
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    ):
        return None
    return (
        f"the body must be JSON, sent with Content-Type: application/json, not {media_type[:80]!r}"
    )


async def json_body(request: Request, model: type[BaseModel], example: str) -> Any:
    """The request's JSON object body as ``model``; a 400 naming the first problem."""
    try:
        data = load_json(await request.body() or b"null")
    except JsonTooDeep as exc:
        raise ApiError(400, "invalid_request", f"{exc} (expected {example})") from None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ApiError(400, "invalid_request", f"the body must be a JSON object like {example}")
    try:
        body = model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise ApiError(
            400, "invalid_request", f"{where}: {first['msg']} (expected {example})"
        ) from None
    unstorable = unstorable_at(body.model_dump())
    if unstorable is not None:
        where, problem = unstorable
        raise ApiError(400, "invalid_request", f"{where or 'body'} {problem}")
    return body


def chat_id_param(request: Request) -> str:
    chat_id: str = request.path_params["chat_id"]
    if not CHAT_ID.fullmatch(chat_id):
        # No chat can have this id, so it does not exist.
        raise ApiError(404, "not_found", "chat not found")
    return chat_id
