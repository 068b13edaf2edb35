"""``Switchboard-Tool-Items: mcp``: Switchboard's tool calls as the Responses API's
``mcp_call`` items (server ``switchboard``) instead of ``switchboard:tool_call`` items, for
clients that read only OpenAI's item types (``@ai-sdk/openai``'s ``generateText``).

The view changes only what goes out: the same turn, stored object and item ids. So
``GET`` shows either view, an ``mcp_call`` sent back (whole, or by ``item_reference``) is
read as the call it stands for, and a header that names no view is refused before
anything runs.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import websockets
from openai.types.responses import ResponseOutputItem
from pydantic import TypeAdapter

from storage.session import ChatSession
from tests.openresponses.spec import check_resource, check_stream, parse_sse
from tests.support.clients import client_for
from tests.support.servers import LiveServer

MCP = {"Switchboard-Tool-Items": "mcp"}
MCP_CALL_FIELDS = {
    "type",
    "id",
    "status",
    "server_label",
    "name",
    "arguments",
    "output",
    "error",
    "approval_request_id",
    "call_id",
}
PROMPT = "find sushi in Boston"


async def post(
    live: LiveServer, body: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    async with httpx.AsyncClient(base_url=live.http, timeout=30, headers=headers) as http:
        return await http.post("/v1/responses", json={"model": "switchboard", **body})


async def conversations(live: LiveServer) -> list[list[dict[str, Any]]]:
    async with live.client() as http:
        chats = (await http.get("/api/chats")).json()["chats"]
    return [
        [dict(item) for item in await ChatSession(live.services.db, chat["id"]).get_items()]
        for chat in chats
    ]


def replayed_calls(conversation: list[dict[str, Any]], before: str) -> list[tuple[Any, ...]]:
    """The calls and outputs the model read before the user message ``before``."""
    end = [item.get("content") for item in conversation].index(before)
    return [
        (item["type"], item["call_id"], item.get("name"), item.get("output"))
        for item in conversation[:end]
        if "call_id" in item
    ]


async def test_the_mcp_view_shows_each_call_as_an_mcp_call_of_the_same_item(
    offline: LiveServer,
) -> None:
    client = client_for(offline).with_options(default_headers=MCP)
    raw = await client.responses.with_raw_response.create(model="switchboard", input=PROMPT)
    body = raw.http_response.json()
    response = check_resource(body)  # mcp_call is a core item: the openai types check it
    call, message = body["output"]
    assert set(call) == MCP_CALL_FIELDS, sorted(call)
    assert call["type"] == "mcp_call" and call["server_label"] == "switchboard"
    assert call["status"] == "completed" and call["error"] is None
    assert call["approval_request_id"] is None
    assert call["name"] == "search_businesses_at_yelp"
    assert json.loads(call["arguments"])["location"].startswith("Boston")
    assert call["output"].startswith("Searching Yelp for sushi in Boston")
    assert response.output[0].type == "mcp_call"  # the client's own McpCall type
    assert message["type"] == "message" and "sushi" in response.output_text
    assert "switchboard:" not in raw.http_response.text

    # Stored once: the default view shows the same item as a switchboard:tool_call.
    async with httpx.AsyncClient(base_url=offline.http, timeout=30) as http:
        default = (await http.get(f"/v1/responses/{response.id}")).json()
        shown = (await http.get(f"/v1/responses/{response.id}", headers=MCP)).json()
    check_resource(default)
    stored = default["output"][0]
    assert stored["type"] == "switchboard:tool_call"
    for name in ("id", "call_id", "name", "arguments", "output", "status"):
        assert stored[name] == call[name], name
    assert call["id"] == f"sbc_{call['call_id']}"
    assert shown["output"] == body["output"]


async def test_the_mcp_view_streams_the_spec_events_over_http_and_the_socket(
    offline: LiveServer,
) -> None:
    async with (
        httpx.AsyncClient(base_url=offline.http, timeout=30, headers=MCP) as http,
        http.stream(
            "POST", "/v1/responses", json={"model": "switchboard", "input": PROMPT, "stream": True}
        ) as answer,
    ):
        assert answer.status_code == 200
        text = "".join([chunk async for chunk in answer.aiter_text()])
    stream = parse_sse(text)
    check_stream(stream)  # every event validated by the openai package's event types
    assert "switchboard:" not in text
    added, done = (
        [e["item"] for e in stream.events if e["type"] == f"response.output_item.{kind}"]
        for kind in ("added", "done")
    )
    assert [i["type"] for i in added] == [i["type"] for i in done] == ["mcp_call", "message"]
    assert added[0]["status"] == "in_progress" and added[0]["output"] is None
    assert done[0]["status"] == "completed" and done[0]["output"].startswith("Searching Yelp")
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseOutputItem)
    assert adapter.validate_python(done[0]).type == "mcp_call"

    # A WebSocket opened with the header sees every response of it in that view.
    url = offline.http.replace("http://", "ws://") + "/v1/responses"
    async with websockets.connect(url, additional_headers=MCP) as ws:
        await ws.send(
            json.dumps({"type": "response.create", "model": "switchboard", "input": PROMPT})
        )
        events = []
        while not events or events[-1]["type"] != "response.completed":
            events.append(json.loads(await ws.recv()))
    items = [e["item"]["type"] for e in events if e["type"] == "response.output_item.done"]
    assert items == ["mcp_call", "message"]
    assert events[-1]["response"]["output"][0]["type"] == "mcp_call"


async def test_an_mcp_call_sent_back_is_read_as_the_call_it_shows(offline: LiveServer) -> None:
    first = (await post(offline, {"input": PROMPT}, MCP)).json()
    call, answer = first["output"]
    without_call_id = {key: value for key, value in call.items() if key != "call_id"}
    histories = {
        "whole": [call, answer],
        "without call_id": [without_call_id, answer],  # as a client that drops extras
        "by reference": [
            {"type": "item_reference", "id": call["id"]},
            {"type": "item_reference", "id": answer["id"]},
        ],
    }
    for name, history in histories.items():
        follow_up = f"thanks ({name})"
        second = await post(
            offline,
            {
                "input": [
                    {"role": "user", "content": PROMPT},
                    *history,
                    {"role": "user", "content": follow_up},
                ]
            },
            MCP,
        )
        assert second.status_code == 200, (name, second.text)
        [conversation] = [
            c for c in await conversations(offline) if any(i.get("content") == follow_up for i in c)
        ]
        # The model read the call and exactly what it returned, as from the default view.
        assert replayed_calls(conversation, follow_up) == [
            ("function_call", call["call_id"], call["name"], None),
            ("function_call_output", call["call_id"], None, call["output"]),
        ], name


async def test_a_bad_view_or_another_servers_mcp_call_is_refused_and_runs_nothing(
    offline: LiveServer,
) -> None:
    bad = await post(offline, {"input": PROMPT}, {"Switchboard-Tool-Items": "function_call"})
    assert bad.status_code == 400, bad.text
    error = bad.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request", "Switchboard-Tool-Items")
    assert "'mcp'" in error["message"]
    async with httpx.AsyncClient(base_url=offline.http, timeout=30) as http:
        got = await http.get("/v1/responses/resp_x", headers={"Switchboard-Tool-Items": "x"})
    assert got.status_code == 400 and got.json()["error"]["param"] == "Switchboard-Tool-Items"

    foreign = {
        "type": "mcp_call",
        "id": "mcp_1",
        "server_label": "github",
        "name": "list_issues",
        "arguments": "{}",
        "output": "[]",
    }
    refused = await post(offline, {"input": [{"role": "user", "content": PROMPT}, foreign]}, MCP)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["param"] == "input[1].server_label"
    assert await conversations(offline) == []  # nothing ran

    url = offline.http.replace("http://", "ws://") + "/v1/responses"
    async with websockets.connect(url, additional_headers={"Switchboard-Tool-Items": "x"}) as ws:
        envelope = json.loads(await ws.recv())
        assert envelope["type"] == "error" and envelope["status"] == 400
        assert envelope["error"]["param"] == "Switchboard-Tool-Items"
        await ws.wait_closed()
    assert ws.close_code == 1008
