"""``item_reference`` input items (sent by ``@ai-sdk/openai`` with ``store`` on): an
output item of an earlier stored response, named by its id, is read as that item; an id
found nowhere (or only in another user's responses) is a 400 naming the reference."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import websockets

from storage.session import ChatSession
from storage.users import UserRepository
from tests.openresponses.spec import check_resource
from tests.support.servers import LiveServer, serve


async def post(live: LiveServer, body: dict[str, Any], token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=live.http, timeout=30, headers=headers) as http:
        return await http.post("/v1/responses", json={"model": "switchboard", **body})


async def conversation_with(live: LiveServer, text: str) -> list[dict[str, Any]]:
    """The conversation items of the one chat that has a user message ``text``."""
    async with live.client() as http:
        chats = (await http.get("/api/chats")).json()["chats"]
    found = []
    for chat in chats:
        items = [dict(i) for i in await ChatSession(live.services.db, chat["id"]).get_items()]
        if any(i.get("role") == "user" and i.get("content") == text for i in items):
            found.append(items)
    [items] = found
    return items


def read_before(items: list[dict[str, Any]], text: str) -> list[Any]:
    """What the model read before the user message ``text``: (role or type, content)."""
    end = [i.get("content") for i in items].index(text)
    return [(i.get("role") or i.get("type"), text_of(i.get("content"))) for i in items[:end]]


def text_of(content: Any) -> Any:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return content


async def test_a_reference_is_read_as_the_item_it_names(offline: LiveServer) -> None:
    first = (
        await post(offline, {"input": "Remember the code word: cobalt. Reply with OK."})
    ).json()
    [message] = first["output"]
    # A stateless history, with the answer named by reference: the model reads it.
    second = await post(
        offline,
        {
            "input": [
                {"role": "user", "content": "Remember the code word: cobalt. Reply with OK."},
                {"type": "item_reference", "id": message["id"]},
                {"role": "user", "content": "What is the code word?"},
            ]
        },
    )
    assert second.status_code == 200, second.text
    body = check_resource(second.json())
    assert "cobalt" in body.output_text
    # The model read the referenced answer itself, in its place.
    read = read_before(
        await conversation_with(offline, "What is the code word?"), "What is the code word?"
    )
    assert read[-1][0] == "assistant"
    assert read[-1][1] == message["content"][0]["text"]


async def test_a_reference_to_a_switchboard_tool_call_replays_the_call(
    offline: LiveServer,
) -> None:
    first = (await post(offline, {"input": "search the web for asyncio"})).json()
    call, answer = first["output"]
    assert call["type"] == "switchboard:tool_call"
    second = await post(
        offline,
        {
            "input": [
                {"role": "user", "content": "search the web for asyncio"},
                {"type": "item_reference", "id": call["id"]},
                {"type": "item_reference", "id": answer["id"]},
                {"role": "user", "content": "thanks"},
            ]
        },
    )
    assert second.status_code == 200, second.text
    # The new chat's conversation holds the call with its output, as if the items had
    # been sent.
    async with offline.client() as http:
        chats = (await http.get("/api/chats")).json()["chats"]
    conversations = [
        [dict(i) for i in await ChatSession(offline.services.db, chat["id"]).get_items()]
        for chat in chats
    ]
    [replayed] = [c for c in conversations if any(i.get("content") == "thanks" for i in c)]
    before = replayed[: [i.get("content") for i in replayed].index("thanks")]
    assert [(i["type"], i.get("name")) for i in before if "call_id" in i] == [
        ("function_call", "search_google"),
        ("function_call_output", None),
    ]
    assert before[-2]["output"] == call["output"]  # then the answer, by reference too
    assert before[-1]["role"] == "assistant"


async def test_unknown_and_malformed_references_are_refused(
    make_settings: Callable[..., Any],
) -> None:
    async with serve(make_settings(auth_mode="token", suggest_model="offline")) as live:
        users = UserRepository(live.services.db)
        _, ada = await users.create_user("ada")
        _, bob = await users.create_user("bob")
        first = (await post(live, {"input": "hello"}, ada)).json()
        [message] = first["output"]
        cases = [
            ({"type": "item_reference", "id": "msg_nowhere"}, "item_not_found"),
            ({"type": "item_reference"}, "invalid_value"),
            ({"type": "item_reference", "id": 7}, "invalid_value"),
        ]
        for reference, code in cases:
            answer = await post(
                live, {"input": [{"role": "user", "content": "hi"}, reference]}, ada
            )
            assert answer.status_code == 400, answer.text
            error = answer.json()["error"]
            assert (error["type"], error["code"], error["param"]) == (
                "invalid_request",
                code,
                "input[1].id",
            )
        # Another user's item is not found, as if it did not exist.
        stranger = await post(
            live, {"input": [{"type": "item_reference", "id": message["id"]}]}, bob
        )
        assert stranger.status_code == 400, stranger.text
        assert stranger.json()["error"]["code"] == "item_not_found"
        # Nothing ran for the refused requests: Ada has her one chat, Bob none.
        for token, count in ((ada, 1), (bob, 0)):
            async with live.client(token=token) as http:
                assert len((await http.get("/api/chats")).json()["chats"]) == count


async def test_a_socket_resolves_references_to_its_unstored_responses(
    offline: LiveServer,
) -> None:
    url = offline.http.replace("http://", "ws://") + "/v1/responses"

    async def respond(ws: Any, **body: Any) -> dict[str, Any]:
        await ws.send(json.dumps({"type": "response.create", "model": "switchboard", **body}))
        while True:
            event = json.loads(await ws.recv())
            if event["type"] in ("error", "response.completed", "response.failed"):
                return dict(event)

    remember = "Remember the code word: cobalt. Reply with OK."
    async with websockets.connect(url) as ws:
        first = await respond(ws, store=False, input=remember)
        [message] = first["response"]["output"]
        history = [
            {"role": "user", "content": remember},
            {"type": "item_reference", "id": message["id"]},
            {"role": "user", "content": "What is the code word?"},
        ]
        second = await respond(ws, store=False, input=history)
        assert second["type"] == "response.completed"
        assert "cobalt" in second["response"]["output"][-1]["content"][0]["text"]
    read = read_before(
        await conversation_with(offline, "What is the code word?"), "What is the code word?"
    )
    assert read[-1][0] == "assistant"
    assert read[-1][1] == message["content"][0]["text"]
    # Not stored: another connection cannot name it.
    async with websockets.connect(url) as other:
        refused = await respond(other, input=history)
    assert refused["status"] == 400 and refused["error"]["code"] == "item_not_found"
