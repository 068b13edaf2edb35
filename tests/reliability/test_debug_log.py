"""At DEBUG, no WebSocket frame reaches the log (issue 33, 11).

uvicorn hands the websockets library its ``uvicorn.error`` logger, and at DEBUG the
library logged every frame it sent or received there: the person's prompts and the
starts of tool outputs (162 lines for two turns). A real server process at DEBUG runs two
turns with tools; then no line of its log may hold a prompt or a tool's output, while
uvicorn's own DEBUG lines are still written.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.support.clients import open_client

pytestmark = pytest.mark.parametrize("_migrated_database", ["sqlite"], indirect=True)

# The demo connectors' tools answer both (the offline model calls them).
PROMPTS = ("find sushi in Boston", "what's in my inbox")


def texts_in(value: Any) -> list[str]:
    """The longer strings in a JSON value: the words a tool's output is made of."""
    if isinstance(value, str):
        return [value] if len(value) >= 12 else []
    if isinstance(value, dict):
        return [text for item in value.values() for text in texts_in(item)]
    if isinstance(value, list):
        return [text for item in value for text in texts_in(item)]
    return []


async def test_no_frame_is_logged_at_debug(servers: Any, database_url: str) -> None:
    server = servers(database_url, log_level="DEBUG", suggest_model="off")
    server.start()
    marker = uuid.uuid4().hex[:10]  # makes each prompt findable in the log
    events: list[dict[str, Any]] = []
    async with open_client(server.ws_url(uuid.uuid4().hex), auto_approve=True) as client:
        for prompt in PROMPTS:
            await client.send({"type": "prompt", "text": f"{prompt} {marker}"})
            events += await client.until("end_of_stream", within=30)
    outputs = [e["output"] for e in events if e["type"] == "tool_output"]
    assert len(outputs) >= 2, [e["type"] for e in events]
    server.stop()

    records = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    assert any(r["level"] == "DEBUG" for r in records), "not at DEBUG: the test would prove little"
    # uvicorn's own lines on the logger the library was given are still written.
    assert any(r["logger"] == "uvicorn.error" and "[accepted]" in r["message"] for r in records)
    lines = [json.dumps(r) for r in records]
    frames = [line for line in lines if marker in line or '"tool_output' in line]
    assert not frames, f"{len(frames)} lines with frames, e.g. {frames[0][:300]}"
    for output in outputs:
        for text in texts_in(output["response"]):
            quoted = [line for line in lines if json.dumps(text)[1:-1][:60] in line]
            assert not quoted, f"a tool's output in the log: {quoted[0][:300]}"
