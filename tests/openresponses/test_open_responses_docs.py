"""docs/open-responses.md's examples hold against a live server: the python example runs
as its own process, and the approval exchange has the shape the server gives."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.openresponses.spec import check_resource
from tests.support.servers import LiveServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "open-responses.md"


def after_marker(marker: str, language: str) -> list[str]:
    """The ``language`` code blocks after ``marker``, up to the next section."""
    text = DOC.read_text()
    start = text.index(f"<!-- {marker}")
    end = text.find("\n## ", start)
    return re.findall(rf"```{language}\n(.*?)```", text[start : end if end >= 0 else None], re.S)


def example_source() -> str:
    blocks = after_marker("tested by tests/openresponses/test_open_responses_docs.py", "python")
    assert blocks, "the tested example is the python block after the marker"
    return blocks[0]


def sent_mail(live: LiveServer) -> list[Any]:
    return list(live.services.demo.for_user("local").namespace("gmail").get("sent", []))


async def test_the_documented_example_holds_a_conversation(
    offline: LiveServer, tmp_path: Path
) -> None:
    script = tmp_path / "open_responses_demo.py"
    script.write_text(example_source())
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        env={**os.environ, "SWITCHBOARD_URL": offline.http},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0].startswith("tool: search_businesses_at_yelp {")
    assert "sushi" in lines[1].lower()
    assert lines[2] == "approve? send_google_email ['bob@example.com']"
    assert "bob@example.com" in lines[3]  # the streamed answer, once approved
    assert re.fullmatch(r"completed \d+ tokens", lines[4])
    assert len(sent_mail(offline)) == 1
    async with offline.client() as http:
        [chat] = (await http.get("/api/chats")).json()["chats"]
        turns = (await http.get(f"/api/chats/{chat['id']}")).json()["turns"]
    # The approved turn is the one that paused: two prompts, both answered.
    assert [(t["prompt"], t["status"]) for t in turns] == [
        ("find sushi in Boston", "completed"),
        ("email that list to bob@example.com", "completed"),
    ]


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
    assert resumed["previous_response_id"] == paused["id"]
    assert json.loads(asked["arguments"])["to"] == json.loads(asked_doc["arguments"])["to"]
    assert "bob@example.com" in resumed["output"][-1]["content"][0]["text"]
    assert len(sent_mail(offline)) == 1
