"""The WebSocket transport of ``/v1/responses`` beyond the suite's checks
(``test_open_responses_compliance.py``): one response at a time, HTTP-only fields, bad
messages that leave the connection usable, stored responses chained from a new
connection, the time limit, and a browser page from another origin."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import websockets
from websockets.exceptions import ConnectionClosed

from app.settings import Settings
from tests.openresponses.spec import Stream, check_stream
from tests.support.servers import LiveServer, serve


def url_of(live: LiveServer) -> str:
    return live.http.replace("http://", "ws://") + "/v1/responses"


def create(**body: Any) -> str:
    return json.dumps({"type": "response.create", "model": "switchboard", **body})


async def until_end(ws: Any) -> Stream:
    events: list[dict[str, Any]] = []
    while True:
        event = json.loads(await ws.recv())
        events.append(event)
        if event["type"] in ("response.completed", "response.failed", "response.incomplete"):
            stream = Stream(events)
            check_stream(stream)
            return stream


async def error_of(ws: Any) -> dict[str, Any]:
    message = json.loads(await ws.recv())
    assert message["type"] == "error" and set(message) == {"type", "status", "error"}
    error: dict[str, Any] = message["error"]
    assert set(error) == {"type", "code", "message", "param"}
    return {"status": message["status"], **error}


async def test_responses_go_one_at_a_time_in_the_order_sent(offline: LiveServer) -> None:
    async with websockets.connect(url_of(offline)) as ws:
        # Both at once: the second waits for the first to end.
        await ws.send(create(input="Reply with exactly: one"))
        await ws.send(create(input="Reply with exactly: two"))
        first, second = await until_end(ws), await until_end(ws)
    assert [s.final["output"][0]["content"][0]["text"] for s in (first, second)] == ["one", "two"]
    assert first.types[0] == second.types[0] == "response.created"
    async with offline.client() as http:
        chats = (await http.get("/api/chats")).json()["chats"]
    assert len(chats) == 2  # each a turn of a chat, as over HTTP


@pytest.mark.parametrize(
    ("message", "status", "code", "param"),
    [
        ("{nope", 400, "invalid_json", None),
        ("[1]", 400, "invalid_json", None),
        (json.dumps({"type": "response.cancel"}), 400, "unknown_event_type", "type"),
        (create(input="hi", stream=False), 400, "invalid_value", "stream"),
        (create(input="hi", background=True), 400, "invalid_value", "background"),
        (create(input="hi", temperature="0.5"), 400, "invalid_value", "temperature"),
        (
            create(input="hi", previous_response_id="resp_x"),
            404,
            "previous_response_not_found",
            "previous_response_id",
        ),
    ],
    ids=["not-json", "not-object", "unknown-type", "stream", "background", "strict", "missing"],
)
async def test_a_bad_message_is_an_error_and_the_connection_goes_on(
    offline: LiveServer, message: str, status: int, code: str, param: str | None
) -> None:
    async with websockets.connect(url_of(offline)) as ws:
        await ws.send(message)
        error = await error_of(ws)
        await ws.send(create(input="Reply with exactly: still here"))
        after = await until_end(ws)
    assert (error["status"], error["code"], error["param"]) == (status, code, param)
    assert after.final["output"][0]["content"][0]["text"] == "still here"


async def test_what_http_clients_send_about_streaming_is_ignored(offline: LiveServer) -> None:
    # The Agents SDK's WebSocket transport sends "stream": true; the spec says not to.
    async with websockets.connect(url_of(offline)) as ws:
        await ws.send(
            create(input="Reply with exactly: fine", stream=True, stream_options={"x": 1})
        )
        done = await until_end(ws)
    assert done.final["output"][0]["content"][0]["text"] == "fine"


async def test_a_stored_response_is_chained_from_another_connection(offline: LiveServer) -> None:
    async with websockets.connect(url_of(offline)) as ws:
        await ws.send(create(input="Remember the code word: amber. Reply with OK."))
        first = await until_end(ws)
    async with websockets.connect(url_of(offline)) as ws:
        await ws.send(
            create(input="What is the code word?", previous_response_id=first.final["id"])
        )
        second = await until_end(ws)
    assert second.final["output"][0]["content"][0]["text"] == "The code word is amber."
    async with offline.client() as http:
        stored = (await http.get(f"/v1/responses/{first.final['id']}")).json()
    assert stored == first.final


async def test_the_connection_ends_at_its_time_limit(
    make_settings: Callable[..., Settings],
) -> None:
    async with (
        serve(make_settings(responses_socket_seconds=1)) as live,
        websockets.connect(url_of(live)) as ws,
    ):
        error = await error_of(ws)  # nothing sent: the limit comes while it waits
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert (error["status"], error["code"]) == (400, "websocket_connection_limit_reached")
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000


async def test_a_page_from_another_origin_is_refused(offline: LiveServer) -> None:
    async with websockets.connect(
        url_of(offline), additional_headers={"Origin": "https://evil.example"}
    ) as ws:
        error = await error_of(ws)
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert (error["status"], error["code"]) == (403, "forbidden")
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    async with offline.client() as http:
        assert (await http.get("/api/chats")).json()["chats"] == []  # nothing ran
