"""docs/ag-ui.md's examples hold against a live server: the JavaScript example runs with the
official ``@ag-ui/client`` and prints what the page says, the Python one runs as its own
process, and the documented interrupt and resume have the server's shapes."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import RunAgentInput

from tests.support.agui import MULTI, new_thread, post, prompt_input, sent_mail
from tests.support.node import NODE_DIR, node_ready, run_node
from tests.support.servers import LiveServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "ag-ui.md"
MARKER = "<!-- tested by tests/agui/test_agui_docs.py"


def blocks(language: str, after: str | None = None) -> list[str]:
    """The ``language`` code blocks of the page (after the heading ``after``, up to the
    next one)."""
    text = DOC.read_text()
    if after is not None:
        start = text.index(after)
        end = text.find("\n## ", start + 1)
        text = text[start : end if end >= 0 else None]
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def example_source(language: str) -> str:
    text = DOC.read_text()
    found = re.findall(rf"{re.escape(MARKER)}.*?-->\n```{language}\n(.*?)```", text, re.S)
    assert len(found) == 1, f"one tested {language} example after the marker"
    return found[0]


@pytest.fixture
def node() -> str:
    return node_ready()


async def test_the_javascript_example_prints_what_the_page_says(
    offline: LiveServer, node: str, tmp_path: Path
) -> None:
    script = tmp_path / "agui_demo.mjs"
    script.write_text(example_source("js"))
    # "from a folder where npm install @ag-ui/client has run": the tests' own install.
    (tmp_path / "node_modules").symlink_to(NODE_DIR / "node_modules")
    out = await run_node(node, script, {"SWITCHBOARD_URL": offline.http})
    lines = out.splitlines()
    [printed] = blocks("text", after="It prints:")
    documented = printed.splitlines()
    assert lines[:-1] == documented[:-1]
    assert "bob@example.com" in lines[-1]
    assert len(sent_mail(offline)) == 1


async def test_the_python_example_holds_a_thread(offline: LiveServer, tmp_path: Path) -> None:
    script = tmp_path / "agui_demo.py"
    script.write_text(example_source("python"))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        env={**os.environ, "SWITCHBOARD_URL": offline.http},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert out.decode().splitlines() == [
        "tool: search_businesses_at_yelp",
        "card: yelp_search_results",
        "tool: send_google_email",
        "approve? ['bob@example.com']",
        "card: send_google_email",
        "RUN_FINISHED success",
    ]
    assert len(sent_mail(offline)) == 1
    async with offline.client() as http:
        [chat] = (await http.get("/api/chats")).json()["chats"]
        [turn] = (await http.get(f"/api/chats/{chat['id']}")).json()["turns"]
    assert (turn["prompt"], turn["status"]) == (MULTI, "completed")


def shape(value: Any) -> Any:
    """Keys all the way down (lists by their first item); leaves as their type."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


async def test_the_documented_interrupt_and_resume_match_the_server(offline: LiveServer) -> None:
    finished_doc, resume_doc = (json.loads(b) for b in blocks("json", "## Approvals"))
    RunAgentInput.model_validate(resume_doc)
    [asked_doc] = finished_doc["outcome"]["interrupts"]
    assert resume_doc["resume"][0]["interruptId"] == asked_doc["id"]

    thread = new_thread()
    run = await post(offline, prompt_input(thread, MULTI))
    finished = run.last
    [asked] = finished["outcome"]["interrupts"]
    assert shape(finished) == shape(finished_doc)
    assert asked["responseSchema"] == asked_doc["responseSchema"]
    assert asked["message"] == asked_doc["message"]
    assert asked["metadata"]["switchboard"]["arguments"]["to"] == ["bob@example.com"]

    answer = {**resume_doc, "threadId": thread}
    answer["resume"] = [{**resume_doc["resume"][0], "interruptId": asked["id"]}]
    resumed = await post(offline, answer)
    assert resumed.last["outcome"] == {"type": "success"}
    assert len(sent_mail(offline)) == 1
