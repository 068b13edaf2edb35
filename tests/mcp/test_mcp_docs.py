"""docs/mcp.md's five-minute tutorial, followed as written: its example server, started by
Switchboard over stdio from the documented setting, answers in a chat with the offline
demo model."""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

from app.settings import Settings
from tests.support.clients import open_client
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
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    script = tmp_path / "notes_server.py"
    script.write_text(example_source())
    servers = documented_setting()
    assert servers == {"notes": {"command": "python", "args": ["notes_server.py"]}}
    # As documented, but with this interpreter and where the file was written.
    servers["notes"].update(command=sys.executable, args=[str(script)])
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
