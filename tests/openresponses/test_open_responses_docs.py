"""docs/open-responses.md's examples hold against a live server: the python examples run
as their own processes (HTTP with the openai client, and the WebSocket), the JavaScript
one with the AI SDK from tests/node, and the approval exchange has the shape the server
gives."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.openresponses.spec import check_resource
from tests.support.node import NODE_DIR, node_ready, run_node
from tests.support.servers import LiveServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "open-responses.md"


def after_marker(marker: str, language: str) -> list[str]:
    """The ``language`` code blocks after ``marker``, up to the next section."""
    text = DOC.read_text()
    start = text.index(f"<!-- {marker}")
    end = text.find("\n## ", start)
    return re.findall(rf"```{language}\n(.*?)```", text[start : end if end >= 0 else None], re.S)


def example_source(
    marker: str = "tested by tests/openresponses/test_open_responses_docs.py",
) -> str:
    blocks = after_marker(marker, "python")
    assert blocks, "the tested example is the python block after the marker"
    return blocks[0]


async def run_example(source: str, tmp_path: Path, **env: str) -> list[str]:
    script = tmp_path / "example.py"
    script.write_text(source)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return out.decode().splitlines()


def sent_mail(live: LiveServer) -> list[Any]:
    return list(live.services.demo.for_user("local").namespace("gmail").get("sent", []))


async def test_the_documented_example_holds_a_conversation(
    offline: LiveServer, tmp_path: Path
) -> None:
    lines = await run_example(example_source(), tmp_path, SWITCHBOARD_URL=offline.http)
    assert lines[0].startswith("tool: search_businesses_at_yelp {")
    assert "sushi" in lines[1].lower()
    assert lines[2] == "approve? send_google_email ['bob@example.com']"
    assert "bob@example.com" in lines[3]  # the streamed answer, once approved
    assert re.fullmatch(r"completed \d+ tokens", lines[4])
    assert lines[5] == 'you run: get_weather {"location":"Paris"}'
    assert "18 °C, sunny" in lines[6]  # the answer read the result the client sent
    assert len(sent_mail(offline)) == 1
    async with offline.client() as http:
        chats = (await http.get("/api/chats")).json()["chats"]
        turns = {
            chat["id"]: (await http.get(f"/api/chats/{chat['id']}")).json()["turns"]
            for chat in chats
        }
    # The approved turn is the one that paused: two prompts, both answered; the weather
    # chat's second turn goes on from the result.
    assert sorted([(t["prompt"], t["status"]) for t in chat] for chat in turns.values()) == [
        [
            ("What's the weather like in Paris?", "completed"),
            ("(results of get_weather)", "completed"),
        ],
        [
            ("find sushi in Boston", "completed"),
            ("email that list to bob@example.com", "completed"),
        ],
    ]


async def test_the_documented_websocket_example_chains_without_storage(
    offline: LiveServer, tmp_path: Path
) -> None:
    source = example_source(
        "websocket example: run by tests/openresponses/test_open_responses_docs.py"
    )
    ws = offline.http.replace("http://", "ws://")
    lines = await run_example(source, tmp_path, SWITCHBOARD_WS=ws)
    assert lines == ["OK", "The code word is cobalt."]


def shape(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Each output item's type and fields."""
    return [(item["type"], sorted(item)) for item in body["output"]]


async def test_the_documented_approval_exchange_matches_the_server(offline: LiveServer) -> None:
    marker = "approval exchange: checked by tests/openresponses/test_open_responses_docs.py"
    [command] = after_marker(marker, "sh")
    paused_doc, answer_doc, resumed_doc = (json.loads(b) for b in after_marker(marker, "json"))
    [asked_doc] = [i for i in paused_doc["output"] if i["type"] == "switchboard:approval_request"]
    # The example is consistent with itself.
    assert answer_doc["previous_response_id"] == paused_doc["id"]
    assert answer_doc["input"][0]["approval_id"] == asked_doc["approval_id"]
    assert resumed_doc["previous_response_id"] == paused_doc["id"]
    assert resumed_doc["output"][0]["call_id"] == asked_doc["call_id"]
    assert json.loads(resumed_doc["output"][0]["arguments"]) == json.loads(asked_doc["arguments"])

    request = json.loads(command[command.index("-d '") + 4 : command.rindex("'")])
    async with httpx.AsyncClient(base_url=offline.http, timeout=30) as http:
        paused = (await http.post("/v1/responses", json=request)).json()
        [asked] = [i for i in paused["output"] if i["type"] == "switchboard:approval_request"]
        answer = {
            **answer_doc,
            "previous_response_id": paused["id"],
            "input": [{**answer_doc["input"][0], "approval_id": asked["approval_id"]}],
        }
        resumed = (await http.post("/v1/responses", json=answer)).json()
    for documented, real in ((paused_doc, paused), (resumed_doc, resumed)):
        check_resource(real)
        assert shape(documented) == shape(real)
        assert {
            key: real[key]
            for key in documented
            if key not in ("id", "output", "previous_response_id")
        } == {
            key: value
            for key, value in documented.items()
            if key not in ("id", "output", "previous_response_id")
        }
    # The paused response's message is the server's, up to where the example cuts it.
    said_doc = paused_doc["output"][-1]["content"][0]["text"].removesuffix("...")
    said_doc = said_doc.replace(asked_doc["approval_id"], asked["approval_id"])
    said_doc = said_doc.replace(paused_doc["id"], paused["id"])
    assert paused["output"][-1]["content"][0]["text"].startswith(said_doc)
    assert resumed["previous_response_id"] == paused["id"]
    assert json.loads(asked["arguments"])["to"] == json.loads(asked_doc["arguments"])["to"]
    assert "bob@example.com" in resumed["output"][-1]["content"][0]["text"]
    assert len(sent_mail(offline)) == 1


@pytest.fixture
def node() -> str:
    return node_ready()  # before the server's event loop: an install blocks


async def test_the_documented_ai_sdk_example_runs_both_kinds_of_tool(
    offline: LiveServer, node: str, tmp_path: Path
) -> None:
    [source] = after_marker("AI SDK example", "js")
    script = tmp_path / "open_responses_ai_sdk.mjs"
    script.write_text(source)
    # "npm install ai @ai-sdk/open-responses zod": the tests' own install.
    (tmp_path / "node_modules").symlink_to(NODE_DIR / "node_modules")
    out = await run_node(node, script, {"SWITCHBOARD_URL": offline.http})
    answer, ran = out.splitlines()
    assert "18 °C and sunny in Boston" in answer and "sushi" in answer
    assert ran == "tools the SDK ran: [ 'get_weather' ]"


async def test_the_documented_ai_sdk_openai_example_generates_two_turns(
    offline: LiveServer, node: str, tmp_path: Path
) -> None:
    [source] = after_marker("AI SDK openai example", "js")
    script = tmp_path / "open_responses_ai_sdk_openai.mjs"
    script.write_text(source)
    (tmp_path / "node_modules").symlink_to(NODE_DIR / "node_modules")
    out = await run_node(node, script, {"SWITCHBOARD_URL": offline.http})
    ran_yelp, ran_weather, answer, ran_bank, balance = out.splitlines()
    # generateText read both responses: it ran its own tool, and was told which tools
    # Switchboard ran (the second step did not run Yelp again: its result went back by
    # reference).
    assert ran_yelp == "Switchboard ran: mcp.search_businesses_at_yelp"
    assert ran_weather == "you ran: get_weather"
    assert "18 °C and sunny in Boston" in answer and "sushi" in answer
    assert ran_bank == "Switchboard ran: mcp.get_accounts_at_plaid"
    assert "$56,842.74" in balance
