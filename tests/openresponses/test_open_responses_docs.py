"""docs/open-responses.md's example runs, as its own process, against a live server."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from tests.ws.conftest import LiveServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "open-responses.md"


def example_source() -> str:
    text = DOC.read_text()
    marker = text.index("<!-- tested by tests/openresponses/test_open_responses_docs.py")
    match = re.search(r"```python\n(.*?)```", text[marker:], re.S)
    assert match, "the tested example is the python block after the marker"
    return match.group(1)


async def test_the_documented_example_holds_a_conversation(offline: LiveServer,
                                                           tmp_path: Path) -> None:
    script = tmp_path / "open_responses_demo.py"
    script.write_text(example_source())
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), env={**os.environ, "SWITCHBOARD_URL": offline.http},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0].startswith("tool: search_businesses_at_yelp {")
    assert "sushi" in lines[1].lower()
    assert "bob@example.com" in lines[2]  # the streamed second answer
    assert re.fullmatch(r"completed \d+ tokens", lines[3])
    async with offline.client() as http:
        [chat] = (await http.get("/api/chats")).json()["chats"]
        turns = (await http.get(f"/api/chats/{chat['id']}")).json()["turns"]
    assert [t["prompt"] for t in turns] == ["find sushi in Boston",
                                            "email that list to bob@example.com"]
