"""docs/rap.md's example tool server, run as its own process, joins a chat through RAP
(with the offline demo model, as the page says), unsigned and signed."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from app.settings import Settings
from tests.support.clients import open_client
from tests.support.processes import free_port
from tests.support.servers import loopback_socket, serve
from tests.support.waiting import wait_until

DOC = Path(__file__).resolve().parents[2] / "docs" / "rap.md"
SECRET = "the-secret-shared-by-both-sides"


def example_source() -> str:
    text = DOC.read_text()
    marker = text.index("<!-- tested by tests/rap/test_rap_docs.py")
    match = re.search(r"```python\n(.*?)```", text[marker:], re.S)
    assert match, "the tested example is the python block after the marker"
    return match.group(1)


@asynccontextmanager
async def example_server(tmp_path: Path, secret: str | None) -> AsyncIterator[str]:
    script = tmp_path / "notes_tool.py"
    script.write_text(example_source())
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    if secret:
        env["RAP_SECRET"] = secret
    process = await asyncio.create_subprocess_exec(sys.executable, str(script), env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as http:

            async def serving() -> bool:
                if process.returncode is not None:
                    raise AssertionError(f"the example tool server exited ({process.returncode})")
                try:
                    return (await http.get(f"{url}/.well-known/rap-toolset")).status_code == 200
                except httpx.TransportError:
                    return False  # not listening yet

            await wait_until(serving, what="the example tool server to answer")
        yield url
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 10)


@pytest.mark.parametrize("secret", [None, SECRET], ids=["unsigned", "signed"])
async def test_the_documented_tool_server_answers_in_a_chat(
    make_settings: Callable[..., Settings], tmp_path: Path, secret: str | None
) -> None:
    async with example_server(tmp_path, secret) as url:
        server: dict[str, str] = {"name": "notes", "url": url}
        if secret:
            server["secret"] = secret
        sock = loopback_socket()
        settings = make_settings(
            rap_tools=json.dumps([server]),
            suggest_model="offline",
            rap_callback_url=f"http://127.0.0.1:{sock.getsockname()[1]}",
        )
        async with serve(settings, sock=sock) as live:
            async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
                events = await client.turn("ask Notes about deploys")
    [call] = [e for e in events if e["type"] == "tool_call"]
    assert call["name"] == "lookup_notes" and call["current_agent"] == "Notes"
    [shown] = [e for e in events if e["type"] == "tool_output"]
    assert shown["output"]["response"].startswith("Deploys happen on Tuesdays")
    assert shown["output"]["display_as"] == [{"type": "text", "content": "1 note(s) found"}]
    assert events[-2]["type"] == "end_of_stream" and events[-2]["status"] == "completed"
