"""Hostile bodies and ids on ``/v1/responses`` (issue 15): deeply nested JSON, U+0000
and unpaired surrogates.

Each answers 400 ``invalid_request`` in the spec's error shape, naming the field, before
anything is written: PostgreSQL text and JSON cannot hold U+0000 and no engine takes an
unpaired surrogate, so both are refused on every engine alike, and no empty chat is left
behind.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.servers import LiveServer

OK = {"model": "switchboard", "input": "hello"}
NUL = "\u0000"


async def post(live: LiveServer, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=live.http, timeout=30) as http:
        if isinstance(body, bytes):
            return await http.post(
                "/v1/responses", content=body, headers={"Content-Type": "application/json"}
            )
        return await http.post("/v1/responses", json=body)


def error_of(answer: httpx.Response) -> dict[str, Any]:
    error = answer.json()["error"]
    assert set(error) == {"type", "code", "param", "message"}
    assert "Traceback" not in error["message"] and "SQL" not in error["message"]
    return error


async def chats_of(live: LiveServer) -> list[dict[str, Any]]:
    async with live.client() as http:
        listing = await http.get("/api/chats")
    assert listing.status_code == 200
    chats: list[dict[str, Any]] = listing.json()["chats"]
    return chats


def nested(depth: int) -> bytes:
    # Valid JSON, deep inside a field the server would otherwise ignore.
    return (
        b'{"model": "switchboard", "input": "hello", "extra": ' + b"[" * depth + b"]" * depth + b"}"
    )


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 5000,  # what the fuzzer sent: unclosed, the decoder recursed until it gave up
        b'{"a":' * 5000,
        nested(200),  # parses, but nests far deeper than any request needs
    ],
    ids=["unclosed-arrays", "unclosed-objects", "closed-200"],
)
async def test_deeply_nested_json_is_a_400(offline: LiveServer, body: bytes) -> None:
    answer = await post(offline, body)
    assert answer.status_code == 400, answer.text
    error = error_of(answer)
    assert error["type"] == "invalid_request" and error["code"] == "invalid_json"
    assert "nested" in error["message"]
    assert await chats_of(offline) == []


async def test_nesting_within_the_limit_is_read(offline: LiveServer) -> None:
    answer = await post(offline, nested(60))
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "completed"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({**OK, "input": f"hello{NUL}"}, "input"),
        ({**OK, "input": [{"role": "user", "content": f"hi{NUL}there"}]}, "input[0].content"),
        (
            {**OK, "input": [{"role": "user", "content": [{"type": "input_text", "text": NUL}]}]},
            "input[0].content[0].text",
        ),
        ({**OK, "instructions": f"be brief{NUL}"}, "instructions"),
        ({**OK, "previous_response_id": f"resp_{NUL}"}, "previous_response_id"),
        ({**OK, "metadata": {"note": f"x{NUL}"}}, "metadata.note"),
        ({**OK, "model": f"switch{NUL}board"}, "model"),
    ],
    ids=["input", "message", "part", "instructions", "previous", "metadata", "model"],
)
async def test_nul_in_a_field_is_a_400_naming_it_and_writes_nothing(
    offline: LiveServer, body: dict[str, Any], param: str
) -> None:
    answer = await post(offline, body)
    assert answer.status_code == 400, answer.text
    error = error_of(answer)
    assert error["type"] == "invalid_request" and error["param"] == param
    assert "NUL" in error["message"]
    assert await chats_of(offline) == []


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b'{"model": "switchboard", "input": "hi \\ud800"}', "input"),
        (
            b'{"model": "switchboard", "input": [{"role": "user", "content": "\\udfff"}]}',
            "input[0].content",
        ),
    ],
    ids=["input", "message"],
)
async def test_an_unpaired_surrogate_is_a_400_and_writes_nothing(
    offline: LiveServer, body: bytes, param: str
) -> None:
    # Valid JSON, yet not Unicode text: no database column can take it.
    answer = await post(offline, body)
    assert answer.status_code == 400, answer.text
    error = error_of(answer)
    assert error["type"] == "invalid_request" and error["param"] == param
    assert "unpaired surrogates" in error["message"]
    assert await chats_of(offline) == []


async def test_nul_in_a_response_id_is_a_400(offline: LiveServer) -> None:
    async with offline.client() as http:
        answer = await http.get("/v1/responses/resp_%00x")
    assert answer.status_code == 400, answer.text
    error = error_of(answer)
    assert error["type"] == "invalid_request" and error["param"] == "response_id"
    assert "NUL" in error["message"]


# ----------------------------------------------------------------------------- the rule broken


MESSAGE = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        # pydantic said "input: Input should be a valid string" (the other branch).
        ({**OK, "input": [MESSAGE] * 1001}, "input", "input has 1,001 items; at most 1,000"),
        # pydantic said "Unable to extract tag using discriminator _item_kind()".
        (
            {**OK, "input": ["hi"]},
            "input[0]",
            'input[0]: an input item is a JSON object, not a string: a message ({"role": '
            '"user", "content": "…"}) or an item with a "type" (message, function_call,',
        ),
        ({**OK, "input": [MESSAGE, 5]}, "input[1]", "input[1]: an input item is a JSON object"),
        ({**OK, "input": 5}, "input", "input is a string (one user message) or an array"),
    ],
    ids=["1001-items", "string-item", "number-item", "number-input"],
)
async def test_a_bad_input_names_the_rule_it_broke(
    offline: LiveServer, body: dict[str, Any], param: str, words: str
) -> None:
    answer = await post(offline, body)
    assert answer.status_code == 400, answer.text
    error = error_of(answer)
    assert (error["code"], error["param"]) == ("invalid_value", param)
    assert error["message"].startswith(words), error["message"]
    assert "discriminator" not in error["message"]
    assert await chats_of(offline) == []


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/responses/compact"])
async def test_a_body_sent_as_another_media_type_is_415(offline: LiveServer, path: str) -> None:
    async with httpx.AsyncClient(base_url=offline.http, timeout=30) as http:
        # What curl -d sends without -H: a JSON-looking body declared as a form.
        answer = await http.post(
            path,
            content=json.dumps(OK),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert answer.status_code == 415, answer.text
        error = error_of(answer)
        assert (error["type"], error["code"]) == ("invalid_request", "unsupported_media_type")
        assert "application/x-www-form-urlencoded" in error["message"]
        # No Content-Type says nothing: read as JSON, as before.
        untyped = await http.post(path, content=json.dumps(OK).encode())
        assert untyped.status_code == 200, untyped.text
    assert len(await chats_of(offline)) == (1 if path == "/v1/responses" else 0)
