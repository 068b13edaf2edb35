"""docs/mcp.md's five-minute tutorial, followed as written: its example server, started by
Switchboard over stdio from the documented setting, answers in a chat with the offline
demo model."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from app.settings import Settings
from tests.support.clients import open_client
from tests.support.mcp import python_without_mcp
from tests.support.servers import serve

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


def example_source() -> str:
    text = DOC.read_text()
    marker = text.index("<!-- tested by tests/mcp/test_mcp_docs.py")
    match = re.search(r"```python\n(.*?)```", text[marker:], re.S)
    assert match, "the tested example is the python block after the marker"
    return match.group(1)


def documented_setting() -> dict[str, dict[str, object]]:
    match = re.search(r"SWITCHBOARD_MCP_SERVERS='(\{.*?\})' \\", DOC.read_text())
    assert match, "step 2 sets SWITCHBOARD_MCP_SERVERS"
    servers: dict[str, dict[str, object]] = json.loads(match.group(1))
    return servers


async def test_the_documented_server_answers_in_a_chat(
    make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes_server.py").write_text(example_source())
    monkeypatch.chdir(tmp_path)  # where the operator saved it
    # The PATH's python has no mcp package, as under `make run` (its virtualenv is not
    # activated): "python" is the server's own interpreter.
    python_without_mcp(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    servers = documented_setting()
    assert servers == {"notes": {"command": "python", "args": ["notes_server.py"]}}
    settings = make_settings(mcp_servers=json.dumps(servers))
    async with serve(settings) as live:
        async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("ask Notes about deploys")

    [call] = [e for e in events if e["type"] == "tool_call"]
    assert call["name"] == "lookup_notes" and call["current_agent"] == "Notes"
    [shown] = [e for e in events if e["type"] == "tool_output"]
    assert shown["output"]["display_as"] == [
        {"type": "markdown", "content": "- Deploys happen on Tuesdays."}
    ]
    assert events[-2]["type"] == "end_of_stream" and events[-2]["status"] == "completed"
