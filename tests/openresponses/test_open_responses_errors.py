"""Bad requests, missing responses, auth, limits and failing models: the spec's error
shape (``type``, ``code``, ``param``, ``message``) with its HTTP statuses, seen by the
``openai`` client and on the wire."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from app.settings import Settings
from storage.users import UserRepository
from tests.fakes.model_server import Fail, FakeModelServer, Say, reply
from tests.openresponses.spec import check_resource, check_stream, parse_sse
from tests.support.clients import client_for
from tests.support.servers import LiveServer, serve

OK = {"model": "switchboard", "input": "hello"}


async def post(live: LiveServer, body: Any, **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=live.http, timeout=30) as http:
        if isinstance(body, bytes):
            return await http.post(
                "/v1/responses",
                content=body,
                headers={"Content-Type": "application/json"},
                **kwargs,
            )
        return await http.post("/v1/responses", json=body, **kwargs)


def error_of(answer: httpx.Response) -> dict[str, Any]:
    error = answer.json()["error"]
    assert set(error) == {"type", "code", "param", "message"}
    assert error["message"] and "Traceback" not in error["message"]
    return error


@pytest.mark.parametrize(
    ("body", "param", "says"),
    [
        ({"input": "hi"}, "model", "model is required"),
        ({"model": "m"}, "input", "input is required"),
        ([1, 2], None, "JSON object"),
        ({**OK, "input": 3}, "input", "a string (one user message) or an array"),
        ({**OK, "input": []}, "input", "user message"),
        ({**OK, "input": [{"role": "robot", "content": "hi"}]}, "input[0].role", "user"),
        (
            {**OK, "input": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            "input[0].content[0]",
            "input_audio",
        ),
        (
            {**OK, "input": [{"type": "item_reference", "id": "msg_1"}]},
            "input[0].id",
            "no output item 'msg_1'",
        ),
        ({**OK, "input": [{"role": "assistant", "content": "only me"}]}, "input", "user message"),
        (
            {
                **OK,
                "input": [
                    {"type": "function_call_output", "call_id": "c1", "output": "x"},
                    {"role": "user", "content": "hi"},
                ],
            },
            "input[0].call_id",
            "answers no call",
        ),
        (
            {
                **OK,
                "input": [
                    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                    {"role": "user", "content": "hi"},
                ],
            },
            "input",
            "no function_call_output",
        ),
        ({**OK, "tools": [{"type": "web_search"}]}, "tools[0]", "hosted tools"),
        (
            {**OK, "tools": [{"type": "switchboard:tool", "name": "get_weather"}]},
            "tools[0].name",
            "Switchboard has no tool named 'get_weather'",
        ),
        (
            {**OK, "tools": [{"type": "function", "name": "search_google"}]},
            "tools[0].name",
            "one of Switchboard's own tools",
        ),
        (
            {**OK, "tools": [{"type": "function", "name": "transfer_to_gmail"}]},
            "tools[0].name",
            "one of Switchboard's own tools",
        ),
        ({**OK, "tools": [{"type": "function", "name": "a b"}]}, "tools[0].name", "pattern"),
        # Strict types: nothing is coerced.
        ({**OK, "stream": "yes"}, "stream", "valid boolean"),
        ({**OK, "temperature": "0.5"}, "temperature", "valid number"),
        ({**OK, "max_output_tokens": 20.5}, "max_output_tokens", "valid integer"),
        ({**OK, "store": 0}, "store", "valid boolean"),
        ({**OK, "metadata": {"n": 1}}, "metadata.n", "valid string"),
        (
            {**OK, "tool_choice": {"type": "function", "name": "nope"}},
            "tool_choice.name",
            "search_businesses_at_yelp",
        ),
        ({**OK, "tool_choice": "sometimes"}, "tool_choice", "auto"),
        ({**OK, "temperature": 5}, "temperature", "less than or equal to 2"),
        ({**OK, "background": True}, "background", "not supported"),
        ({**OK, "conversation": "conv_1"}, "conversation", "previous_response_id"),
        ({**OK, "text": {"format": {"type": "json_schema"}}}, "text.format.type", "plain text"),
        ({**OK, "input": "x" * 101}, "input", "over 100 characters"),
    ],
)
async def test_bad_requests_are_400_naming_the_field(
    make_settings: Callable[..., Settings], body: Any, param: str | None, says: str
) -> None:
    async with serve(make_settings(max_prompt_chars=100)) as live:
        answer = await post(live, body)
        async with live.client() as http:
            chats = (await http.get("/api/chats")).json()["chats"]
    assert answer.status_code == 400
    error = error_of(answer)
    assert error["type"] == "invalid_request" and error["param"] == param
    assert says in error["message"]
    assert chats == []  # nothing was started


async def test_malformed_and_oversized_bodies(offline: LiveServer) -> None:
    bad_json = await post(offline, b"{nope")
    assert bad_json.status_code == 400 and error_of(bad_json)["code"] == "invalid_json"
    huge = await post(offline, b'{"model": "m", "input": "' + b"x" * (9 * 1024 * 1024) + b'"}')
    assert huge.status_code == 413 and error_of(huge)["type"] == "invalid_request"
    wrong_method = await httpx.AsyncClient(base_url=offline.http).put("/v1/responses")
    assert wrong_method.status_code == 405
    assert error_of(wrong_method) == {
        "type": "invalid_request",
        "code": "method_not_allowed",
        "param": None,
        "message": "method PUT not allowed here; allowed: POST",
    }


@pytest.mark.parametrize(
    ("method", "path", "status", "kind", "param"),
    [
        ("GET", "/v1/models", 404, "not_found", None),
        ("POST", "/v1/chat/completions", 404, "not_found", None),
        ("GET", "/v1", 404, "not_found", None),
        ("DELETE", "/v1/responses/resp_1", 405, "invalid_request", None),
        # An id, not the endpoint (which is POST only).
        ("GET", "/v1/responses/compact", 404, "not_found", "response_id"),
    ],
)
async def test_every_answer_under_v1_has_the_spec_error_shape(
    offline: LiveServer, method: str, path: str, status: int, kind: str, param: str | None
) -> None:
    async with httpx.AsyncClient(base_url=offline.http) as http:
        answer = await http.request(method, path)
    assert answer.status_code == status
    error = error_of(answer)
    assert error["type"] == kind and error["param"] == param
    # Elsewhere the REST API keeps its own shape.
    async with httpx.AsyncClient(base_url=offline.http) as http:
        rest = await http.get("/api/nope")
    assert rest.status_code == 404 and set(rest.json()["error"]) == {"code", "message"}


async def test_a_long_string_input_is_one_message_not_a_list_of_items(
    make_settings: Callable[..., Settings],
) -> None:
    # The cap on input items does not apply to a string's characters.
    async with serve(make_settings(max_prompt_chars=5000)) as live:
        answer = await post(live, {**OK, "input": "hello " + "x" * 1500})
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "completed"


async def test_unknown_previous_response_is_404(offline: LiveServer) -> None:
    client = client_for(offline)
    with pytest.raises(openai.NotFoundError) as raised:
        await client.responses.create(
            model="switchboard", input="hi", previous_response_id="resp_doesnotexist"
        )
    assert raised.value.type == "not_found"
    assert raised.value.code == "previous_response_not_found"
    assert raised.value.param == "previous_response_id"
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve("resp_doesnotexist")


async def test_token_mode_needs_a_token_and_keeps_users_apart(
    make_settings: Callable[..., Settings],
) -> None:
    async with serve(make_settings(auth_mode="token")) as live:
        users = UserRepository(live.services.db)
        _, ada = await users.create_user("ada")
        _, bob = await users.create_user("bob")
        with pytest.raises(openai.AuthenticationError) as raised:
            await client_for(live, "sb_not_a_real_token").responses.create(**OK)
        mine = await client_for(live, ada).responses.create(**OK)
        with pytest.raises(openai.NotFoundError):
            await client_for(live, bob).responses.create(
                model="switchboard", input="and then?", previous_response_id=mine.id
            )
        with pytest.raises(openai.NotFoundError):
            await client_for(live, bob).responses.retrieve(mine.id)
        again = await client_for(live, ada).responses.create(
            model="switchboard", input="and then?", previous_response_id=mine.id
        )
    assert raised.value.status_code == 401 and raised.value.code == "unauthorized"
    assert raised.value.type == "invalid_request"
    assert again.previous_response_id == mine.id


async def test_too_many_requests_is_429_with_retry_after(
    make_settings: Callable[..., Settings],
) -> None:
    async with serve(make_settings(prompts_per_minute=1)) as live:
        client = client_for(live)
        await client.responses.create(**OK)
        with pytest.raises(openai.RateLimitError) as raised:
            await client.responses.create(**OK)
    assert raised.value.status_code == 429 and raised.value.type == "too_many_requests"
    assert int(raised.value.response.headers["retry-after"]) >= 1


async def test_a_failing_model_is_a_500_or_a_failed_stream(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Fail(500, "server_error"),
        Fail(429, "rate_limit_exceeded"),
        reply(Say("partial answer that breaks", chunk=4), break_after=2, break_with="failed"),
    )
    async with scripted() as live:
        client = client_for(live)
        with pytest.raises(openai.InternalServerError) as failed:
            await client.responses.create(**OK)
        with pytest.raises(openai.RateLimitError) as limited:
            await client.responses.create(**OK)
        async with (
            httpx.AsyncClient(base_url=live.http, timeout=30) as http,
            http.stream("POST", "/v1/responses", json={**OK, "stream": True}) as answer,
        ):
            stream = parse_sse("".join([chunk async for chunk in answer.aiter_text()]))
        stored = (
            await httpx.AsyncClient(base_url=live.http).get(f"/v1/responses/{stream.final['id']}")
        ).json()
    assert failed.value.status_code == 500 and failed.value.type == "model_error"
    assert "resp_" in failed.value.message
    assert limited.value.type == "too_many_requests"
    check_stream(stream)
    assert stream.types[-1] == "response.failed"
    final = stream.final
    assert final["status"] == "failed" and final["error"]["code"] == "server_error"
    [message] = final["output"]
    assert message["status"] == "incomplete"
    assert message["content"][0]["text"] == "partial "  # the two deltas that had streamed
    check_resource(stored)
    assert stored["status"] == "failed"


async def test_a_malformed_model_stream_fails_in_words_a_person_reads(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    # The model's stream breaks into a data line that is not JSON, after two deltas.
    broken = reply(
        Say("partial answer that breaks", chunk=4), break_after=2, break_with="malformed"
    )
    fake_model.script(broken, broken)
    async with scripted() as live:
        async with (
            httpx.AsyncClient(base_url=live.http, timeout=30) as http,
            http.stream("POST", "/v1/responses", json={**OK, "stream": True}) as answer,
        ):
            stream = parse_sse("".join([chunk async for chunk in answer.aiter_text()]))
        with pytest.raises(openai.InternalServerError) as failed:
            await client_for(live).responses.create(**OK)
    check_stream(stream)
    error = stream.final["error"]
    assert stream.final["status"] == "failed" and error["code"] == "server_error"
    # It said "The model failed to answer (JSONDecodeError). Please try again."
    for message in (error["message"], failed.value.message):
        assert "JSONDecodeError" not in message and "Error)" not in message, message
        assert (
            "The model's answer could not be read (its stream was malformed). Please try again."
            in message
        )


async def test_deleting_the_chat_deletes_its_responses(offline: LiveServer) -> None:
    client = client_for(offline)
    first = await client.responses.create(**OK)
    async with offline.client() as http:
        [chat] = (await http.get("/api/chats")).json()["chats"]
        assert (await http.delete(f"/api/chats/{chat['id']}")).status_code == 204
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.create(
            model="switchboard", input="and?", previous_response_id=first.id
        )
