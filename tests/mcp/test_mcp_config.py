"""``SWITCHBOARD_MCP_SERVERS``: what it accepts, and the error each mistake gets (naming the
server and the field, never showing a secret)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.settings import SettingsError, load_settings
from connectors.mcp.config import HttpServer, StdioServer

SECRET = "sk-notes-7c1e9a4b2d"


def load(servers: Any) -> Any:
    value = servers if isinstance(servers, str) else json.dumps(servers)
    return load_settings(mcp_servers=value)


def problem(servers: Any) -> str:
    with pytest.raises(SettingsError) as caught:
        load(servers)
    message = str(caught.value)
    assert SECRET not in message
    return message


def test_a_stdio_server_and_an_http_server() -> None:
    settings = load(
        {
            "notes": {
                "command": "python",
                "args": ["notes_server.py", "stdio"],
                "env": {"NOTES_TOKEN": SECRET},
                "timeout": 5,
            },
            "issue_tracker": {
                "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": f"Bearer {SECRET}"},
                "display_name": "Tracker",
            },
        }
    )

    notes, tracker = settings.mcp_servers["notes"], settings.mcp_servers["issue_tracker"]
    assert isinstance(notes, StdioServer) and isinstance(tracker, HttpServer)
    assert (notes.command, notes.args, notes.timeout) == ("python", ["notes_server.py", "stdio"], 5)
    assert notes.env["NOTES_TOKEN"].get_secret_value() == SECRET
    assert tracker.headers["Authorization"].get_secret_value() == f"Bearer {SECRET}"
    assert (notes.agent_name, tracker.agent_name) == ("Notes", "Tracker")
    assert notes.secrets() == (SECRET,) and tracker.secrets() == (f"Bearer {SECRET}",)
    assert SECRET not in repr(settings) and SECRET not in str(settings.model_dump())


def test_unset_or_empty_means_no_servers() -> None:
    assert load_settings().mcp_servers == {}
    assert load("  ").mcp_servers == {}
    assert load({}).mcp_servers == {}


@pytest.mark.parametrize(
    ("servers", "expected"),
    [
        ('{"notes": ', "SWITCHBOARD_MCP_SERVERS: Value error, is not valid JSON"),
        (
            [{"name": "notes", "command": "python"}],
            "expected a JSON object mapping each server's name to its settings",
        ),
        ({"Notes-1": {"command": "python"}}, "server 'Notes-1': the name must be a lowercase"),
        ({"notes": ["python"]}, "server 'notes': expected an object with a command"),
        ({"notes": {}}, "server 'notes': needs a command"),
        (
            {"notes": {"command": "python", "url": "https://x.example.com"}},
            "server 'notes': has both command and url",
        ),
        ({"notes": {"command": "python", "argz": []}}, "server 'notes': argz: unknown field"),
        ({"notes": {"command": "python", "args": "a b"}}, "server 'notes': args: Input should be"),
        ({"notes": {"command": "  "}}, "server 'notes': command: String should have at least"),
        (
            {"notes": {"command": "python", "env": {"BAD-NAME": SECRET}}},
            "server 'notes': env: 'BAD-NAME' is not an environment variable name",
        ),
        ({"notes": {"url": "ftp://x.example.com"}}, "server 'notes': url: must be an http://"),
        (
            {"notes": {"url": "https://x.example.com", "headers": {"Bad Header": SECRET}}},
            "server 'notes': headers: 'Bad Header' is not an HTTP header name",
        ),
        (
            {"notes": {"url": "https://x.example.com", "headers": {"X-Key": 42}}},
            "server 'notes': headers.X-Key: Input should be a valid string",
        ),
        ({"notes": {"command": "python", "timeout": 0}}, "server 'notes': timeout: Input should"),
        ({"notes": {"command": "python", "name": "x"}}, "server 'notes': name: the key of the"),
    ],
)
def test_each_mistake_is_refused_naming_the_server_and_the_field(
    servers: Any, expected: str
) -> None:
    message = problem(servers)
    assert message.startswith("invalid configuration:\n  SWITCHBOARD_MCP_SERVERS: ")
    assert expected in message
