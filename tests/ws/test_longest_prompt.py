"""The longest legal prompt is accepted in any script, however the client encodes it.

The prompt limit counts characters (code points); the frame limit counts bytes. With the
defaults, a 32,000-character prompt of '€', of CJK or of emoji, sent by Python's json.dumps
(ASCII-only: an emoji becomes a 12-byte surrogate escape pair), must start a turn rather
than close the socket with 1009.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from tests.support.clients import open_client
from tests.support.processes import ServerProcess
from tests.support.servers import serve
from websocket.protocol import MAX_CLIENT_MESSAGE_ID

SCRIPTS = {"euro": "€", "cjk": "漢", "emoji": "😀"}


def longest_frame(settings: Settings, char: str) -> str:
    """A prompt at the limit, with the longest client_message_id, escaped to pure ASCII."""
    frame = {
        "type": "prompt",
        "text": char * settings.max_prompt_chars,
        "client_message_id": char * MAX_CLIENT_MESSAGE_ID,
    }
    encoded = json.dumps(frame)  # ensure_ascii=True: the worst case in bytes
    assert encoded.isascii()
    return encoded


async def assert_accepted(url: str, settings: Settings, char: str) -> None:
    frame = longest_frame(settings, char)
    # The offline demo's web search echoes the query into its results (megabytes for this
    # prompt): no size limit on what the test client receives.
    async with open_client(url, max_size=None) as client:
        await client.send(frame)
        events = await client.until("end_of_stream", within=60)
    first = events[0]
    assert first["type"] == "user_prompt", first
    assert first["text"] == char * settings.max_prompt_chars
    assert first["client_message_id"] == char * MAX_CLIENT_MESSAGE_ID
    assert events[-1]["status"] == "completed"


@pytest.mark.parametrize("script", SCRIPTS)
async def test_the_longest_prompt_in_any_script_is_accepted_with_the_defaults(
    make_settings: Callable[..., Settings], script: str
) -> None:
    settings = make_settings()
    assert len(longest_frame(settings, SCRIPTS[script])) > 64 * 1024  # the old limit
    async with serve(settings) as live:
        await assert_accepted(live.ws_url(f"longest-{script}"), settings, SCRIPTS[script])
        async with live.client() as http:
            events = (await http.get(f"/api/chats/longest-{script}/events")).json()["events"]
        stored = [event for event in events if event["type"] == "user_prompt"]
        assert [event["text"] for event in stored] == [SCRIPTS[script] * settings.max_prompt_chars]


@pytest.fixture
def cli_server(database_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    env = {
        "SWITCHBOARD_DATABASE_URL": database_url,
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
    }
    server = ServerProcess(env, tmp_path / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_switchboard_serve_accepts_the_longest_prompt_at_its_own_socket_limit(
    cli_server: ServerProcess, make_settings: Callable[..., Any]
) -> None:
    # `switchboard serve` sets uvicorn's ws_max_size to the frame limit itself (the in-process
    # server above allows four times that), so this is the limit an operator really gets.
    settings = make_settings()
    await assert_accepted(cli_server.ws_url("longest-cli"), settings, SCRIPTS["emoji"])
