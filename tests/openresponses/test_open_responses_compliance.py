"""Each check of the official Open Responses compliance suite (openresponses/openresponses,
``bin/compliance-test.ts`` / ``src/lib/compliance-tests.ts``), as a test of ours against
the default configuration (the offline model): the same requests, the same verdicts.

The suite validates objects with its zod schemas, which know only the core item types
(``message``, ``function_call``, ``function_call_output``, ``reasoning``, ``compaction``):
so its prompts must be answered without Switchboard's own tools, whose calls are vendor
items (``CORE`` below). Every stream is also checked by ``tests/openresponses/spec.py``.
The suite itself, fetched and run by hand, passes 17/17 (docs/open-responses.md).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import websockets

from tests.openresponses.spec import Stream, check_resource, check_stream, parse_sse
from tests.support.servers import LiveServer

MODEL = "gpt-4o-mini"  # the suite's default model name: any name is echoed
CORE = {"message", "function_call", "function_call_output", "reasoning", "compaction"}
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location",
    "parameters": {
        "type": "object",
        "properties": {
            "location": {
                "type": "string",
                "description": "The city and state, e.g. San Francisco, CA",
            }
        },
        "required": ["location"],
    },
}
# The suite's image: a red heart on white, 32x32.
HEART = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAABmklEQVR42tyWAaTyUBzF"
    "ew/eG4AHz+MBSAHKBiJRGFKwIgQQJKLUIioBIhCAiCAAEizAQIAECaASqFFJq84nudjnaqvuPnxzgP9xfrq5938c"
    "sPn7PwHTKSoViCIEAYEAMhmoKsU2mUCWEQqB5xEMIp/HaGQG2G6RSuH9HQ7H34rFrtPbdz4jl6PbwmEsl3QA1mt4"
    "vcRKk8dz9eg6IpF7tt9fzGY0gCgafFRFo5Blc5vLhf3eCOj1yNhM5GRMVK0aATxPZoz09YXjkQDmczJgquGQAPp9"
    "WwCNBgG027YACgUC6HRsAZRKBDAY2AJoNv/ZnwzA6WScznG3p4UAymXGAEkyXrTFAh8fLAGqagQAyGaZpYsi7bHT"
    "NPz8MEj//LxuFPo+UBS8vb0KaLXubrRa7aX0RMLCykwmn0z3+XA4WACcTpCkh9MFAZpmuVXo+mO/w+/HZvNgbblc"
    "UCxaSo/Hyck80Yu6XXDcvfVZr79cvMZjuN2U9O9vKAqjZrfbIZ0mV4TUi9Xqz6jddNy//7+e3n8Fhf/Llo2kxi8A"
    "QyGRoDkmAhAAAAAASUVORK5CYII="
)


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


async def create(live: LiveServer, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=f"{live.http}/v1", timeout=30) as http:
        answer = await http.post("/responses", json=body, headers={"Authorization": "Bearer local"})
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    result: dict[str, Any] = answer.json()
    return result


def compliant(body: dict[str, Any]) -> dict[str, Any]:
    """The checks every suite test makes of a Response object."""
    check_resource(body)
    assert body["output"], "Response has no output items"
    assert {item["type"] for item in body["output"]} <= CORE, body["output"]
    return body


def text_of(body: dict[str, Any]) -> str:
    return " ".join(
        part.get("text", "")
        for item in body["output"]
        if item["type"] == "message"
        for part in item["content"]
    )


# ----------------------------------------------------------------------------- HTTP


async def test_basic_response(offline: LiveServer) -> None:
    body = await create(offline, {"model": MODEL, "input": [user("Say hello in exactly 3 words.")]})
    assert compliant(body)["status"] == "completed"
    assert body["model"] == MODEL and text_of(body) == "Hello there, friend!"


async def test_assistant_phase(offline: LiveServer) -> None:
    history = [
        {
            "type": "message",
            "role": "assistant",
            "phase": "commentary",
            "content": "I should answer with the saved number.",
        },
        {
            "type": "message",
            "role": "assistant",
            "phase": "final_answer",
            "content": "The number is four.",
        },
        user("Repeat only the number."),
    ]
    body = await create(offline, {"model": MODEL, "input": history})
    assert compliant(body)["status"] == "completed" and text_of(body) == "four"


async def test_streaming_response(offline: LiveServer) -> None:
    async with (
        httpx.AsyncClient(base_url=offline.http, timeout=30) as http,
        http.stream(
            "POST",
            "/v1/responses",
            json={"model": MODEL, "input": [user("Count from 1 to 5.")], "stream": True},
        ) as answer,
    ):
        assert answer.headers["content-type"].startswith("text/event-stream")
        stream = parse_sse("".join([chunk async for chunk in answer.aiter_text()]))
    check_stream(stream)
    assert compliant(stream.final)["status"] == "completed"
    assert text_of(stream.final) == "1, 2, 3, 4, 5"


async def test_system_prompt(offline: LiveServer) -> None:
    body = await create(
        offline,
        {
            "model": MODEL,
            "input": [
                {
                    "type": "message",
                    "role": "system",
                    "content": "You are a pirate. Always respond in pirate speak.",
                },
                user("Say hello."),
            ],
        },
    )
    assert compliant(body)["status"] == "completed"


async def test_tool_calling(offline: LiveServer) -> None:
    body = await create(
        offline,
        {
            "model": MODEL,
            "input": [user("What's the weather like in San Francisco?")],
            "tools": [WEATHER],
        },
    )
    [call] = compliant(body)["output"]
    assert (call["type"], call["name"], call["status"]) == (
        "function_call",
        "get_weather",
        "completed",
    )
    assert json.loads(call["arguments"]) == {"location": "San Francisco"}
    assert body["tools"] == [{**WEATHER, "strict": None}]


async def test_function_call_round_trip(offline: LiveServer) -> None:
    first = await create(
        offline,
        {
            "model": MODEL,
            "input": "Use the weather tool to get the temperature in San Francisco.",
            "tools": [WEATHER],
            "tool_choice": {"type": "function", "name": "get_weather"},
        },
    )
    [call] = compliant(first)["output"]
    assert call["type"] == "function_call" and call["call_id"]
    second = await create(
        offline,
        {
            "model": MODEL,
            "previous_response_id": first["id"],
            "input": [
                {
                    "type": "function_call_output",
                    "call_id": call["call_id"],
                    "output": "64 degrees and clear",
                }
            ],
        },
    )
    assert compliant(second)["status"] == "completed"
    assert "64 degrees and clear" in text_of(second)  # the answer read the client's result


async def test_image_input(offline: LiveServer) -> None:
    body = await create(
        offline,
        {
            "model": MODEL,
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": "What do you see in this image? Answer in one sentence.",
                        },
                        {"type": "input_image", "image_url": HEART},
                    ],
                }
            ],
        },
    )
    assert compliant(body)["status"] == "completed"
    assert "can't look at images" in text_of(body)  # the offline model says it cannot see


async def test_file_input(offline: LiveServer) -> None:
    body = await create(
        offline,
        {
            "model": MODEL,
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": "Read the attached file and answer with its title only.",
                        },
                        {
                            "type": "input_file",
                            "filename": "fixture.pdf",
                            "file_data": "data:application/pdf;base64,JVBERi0xLjEK",
                        },
                    ],
                }
            ],
        },
    )
    assert compliant(body)["status"] == "completed"


async def test_multi_turn(offline: LiveServer) -> None:
    body = await create(
        offline,
        {
            "model": MODEL,
            "input": [
                user("My name is Alice."),
                {
                    "type": "message",
                    "role": "assistant",
                    "content": "Hello Alice! Nice to meet you. How can I help you today?",
                },
                user("What is my name?"),
            ],
        },
    )
    assert compliant(body)["status"] == "completed" and text_of(body) == "Your name is Alice."


async def test_previous_response_id(offline: LiveServer) -> None:
    first = await create(
        offline, {"model": MODEL, "input": "Remember this code word: papaya. Reply with only OK."}
    )
    assert text_of(compliant(first)) == "OK"
    second = await create(
        offline,
        {
            "model": MODEL,
            "previous_response_id": first["id"],
            "input": "What code word did I ask you to remember?",
        },
    )
    assert compliant(second)["status"] == "completed" and "papaya" in text_of(second)


async def test_compact_response(offline: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=f"{offline.http}/v1", timeout=30) as http:
        answer = await http.post(
            "/responses/compact",
            json={
                "model": MODEL,
                "prompt_cache_key": "openresponses-compact-test",
                "input": [
                    user("We agreed to launch on Tuesday and notify support first."),
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": "Understood. The launch is Tuesday, with support notified "
                        "beforehand.",
                    },
                ],
            },
        )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    # CompactResource.json: required fields and the compaction item.
    assert set(body) >= {"id", "object", "output", "created_at", "usage"}
    assert body["object"] == "response.compaction"
    [item] = body["output"]
    assert item["type"] == "compaction" and item["id"] and item["encrypted_content"]
    assert "Tuesday" not in item["encrypted_content"]  # sealed, not readable
    usage = body["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0


async def test_compact_without_a_model_is_refused(offline: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=f"{offline.http}/v1", timeout=30) as http:
        answer = await http.post(
            "/responses/compact", json={"input": [user("Compact this conversation.")]}
        )
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "type": "invalid_request",
        "code": "missing_required_parameter",
        "param": "model",
        "message": answer.json()["error"]["message"],
    }


# ----------------------------------------------------------------------------- WebSocket


class Socket:
    """One Open Responses WebSocket, as the suite drives it: a ``response.create`` per
    turn, read up to its terminal event or its error."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    async def turn(self, **body: Any) -> tuple[Stream | None, dict[str, Any] | None]:
        """(the turn's events, or None) and (its error envelope, or None)."""
        await self.connection.send(json.dumps({"type": "response.create", "model": MODEL, **body}))
        events: list[dict[str, Any]] = []
        while True:
            message = json.loads(await self.connection.recv())
            if message["type"] == "error" and "status" in message:
                assert not events
                assert set(message) == {"type", "status", "error"}
                assert set(message["error"]) == {"type", "code", "message", "param"}
                return None, message
            events.append(message)
            if message["type"] in ("response.completed", "response.failed", "response.incomplete"):
                stream = Stream(events)
                check_stream(stream)
                return stream, None


@pytest.fixture
async def socket(offline: LiveServer) -> AsyncIterator[Any]:
    async def connect() -> Any:
        return websockets.connect(
            offline.http.replace("http://", "ws://") + "/v1/responses",
            additional_headers={"Authorization": "Bearer local"},
        )

    yield connect


async def test_websocket_response(socket: Any) -> None:
    async with await socket() as ws:
        stream, error = await Socket(ws).turn(input=[user("Count from 1 to 3.")])
    assert error is None and stream is not None
    assert compliant(stream.final)["status"] == "completed" and text_of(stream.final) == "1, 2, 3"


async def test_websocket_sequential_responses(socket: Any) -> None:
    async with await socket() as ws:
        turns = Socket(ws)
        first, _ = await turns.turn(store=False, input="Reply with exactly: first")
        second, _ = await turns.turn(store=False, input="Reply with exactly: second")
    assert first is not None and second is not None
    assert [text_of(compliant(s.final)) for s in (first, second)] == ["first", "second"]
    assert first.final["id"] != second.final["id"]


async def test_websocket_continuation_without_storage(socket: Any, offline: LiveServer) -> None:
    async with await socket() as ws:
        turns = Socket(ws)
        first, _ = await turns.turn(
            store=False, input="Remember the code word: cobalt. Reply with OK."
        )
        assert first is not None and first.final["store"] is False
        second, _ = await turns.turn(
            store=False,
            previous_response_id=first.final["id"],
            input="What is the code word? Reply with only the code word.",
        )
    assert second is not None and text_of(compliant(second.final)) == "cobalt"
    # Not stored: nothing but that connection could find it.
    async with offline.client() as http:
        assert (await http.get(f"/v1/responses/{first.final['id']}")).status_code == 404
    chained = await create(
        offline,
        {"model": MODEL, "previous_response_id": first.final["id"], "input": "and?"},
        status=404,
    )
    assert chained["error"]["code"] == "previous_response_not_found"


async def test_websocket_reconnect_store_false_recovery(socket: Any) -> None:
    async with await socket() as ws:
        first, _ = await Socket(ws).turn(
            store=False, input="Remember the code word: copper. Reply with OK."
        )
    assert first is not None
    async with await socket() as ws:
        turns = Socket(ws)
        lost, error = await turns.turn(
            store=False,
            previous_response_id=first.final["id"],
            input="Try to continue after reconnect. Reply with exactly: reconnected",
        )
        assert lost is None and error is not None
        assert (error["status"], error["error"]["code"]) == (404, "previous_response_not_found")
        recovered, _ = await turns.turn(
            store=False,
            input=[
                user(
                    "The previous store:false chain could not continue after reconnect. "
                    "Start a new response and reply with exactly: recovered"
                )
            ],
        )
    assert recovered is not None and text_of(compliant(recovered.final)) == "recovered"


async def test_websocket_previous_response_not_found(socket: Any) -> None:
    async with await socket() as ws:
        stream, error = await Socket(ws).turn(
            store=False,
            previous_response_id="resp_openresponses_missing_1",
            input="This should fail because the previous response is missing.",
        )
    assert stream is None and error is not None
    assert error["error"]["param"] == "previous_response_id"
    assert error["error"]["code"] == "previous_response_not_found"


async def test_websocket_failed_continuation_evicts_the_response(socket: Any) -> None:
    async with await socket() as ws:
        turns = Socket(ws)
        first, _ = await turns.turn(
            store=False, input="Remember the code word: ember. Reply with OK."
        )
        assert first is not None
        previous = first.final["id"]
        failed, error = await turns.turn(
            store=False,
            previous_response_id=previous,
            input=[
                {
                    "type": "function_call_output",
                    "call_id": "call_openresponses_missing",
                    "output": "No matching tool call exists in the previous response.",
                }
            ],
        )
        assert failed is None and error is not None and error["status"] == 400
        assert error["error"]["code"] == "unknown_call_id"
        stale, gone = await turns.turn(
            store=False,
            previous_response_id=previous,
            input="Try to continue after the failed turn. Reply with exactly: stale",
        )
    assert stale is None and gone is not None
    assert gone["error"]["code"] == "previous_response_not_found"


async def test_websocket_compact_new_chain(socket: Any, offline: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=f"{offline.http}/v1", timeout=30) as http:
        compacted = await http.post(
            "/responses/compact",
            json={
                "model": MODEL,
                "input": [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [
                            {
                                "type": "input_text",
                                "text": "Remember the compaction code word: slate.",
                            }
                        ],
                    },
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "OK."}],
                    },
                    user("Compress this conversation for later continuation."),
                ],
            },
        )
    assert compacted.status_code == 200, compacted.text
    window = compacted.json()["output"]
    async with await socket() as ws:
        turns = Socket(ws)
        stream, _ = await turns.turn(
            store=False,
            input=[*window, user("Continue from here. Reply with exactly: compacted")],
            tools=[],
        )
        assert stream is not None and text_of(compliant(stream.final)) == "compacted"
        # The window holds the conversation: the model still knows the code word.
        recalled, _ = await turns.turn(
            store=False, input=[*window, user("What is the compaction code word?")]
        )
    assert recalled is not None and text_of(recalled.final) == "The compaction code word is slate."
