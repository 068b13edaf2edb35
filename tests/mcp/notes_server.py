"""A small real MCP server (the ``mcp`` package's ``MCPServer``) for the MCP tests.

    python notes_server.py stdio              # over stdin/stdout, as Switchboard starts it
    python notes_server.py http PORT          # streamable HTTP on 127.0.0.1:PORT/mcp

``NOTES_PID_FILE``: where it writes its process id (the tests kill it by that id).
``NOTES_TOKEN`` (HTTP): the bearer token every request must carry, else 401.
``NOTES_SECRET``: reported (only whether it is set) by ``whoami``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, ResourceLink, TextContent, ToolAnnotations
from starlette.types import ASGIApp, Receive, Scope, Send

READ_ONLY = ToolAnnotations(read_only_hint=True)
# A 1×1 transparent PNG.
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
STATS = {"notes": 3, "tags": ["ops", "release"]}

server = MCPServer("notes", instructions="Team notes: look up, add and delete notes.")


@server.tool(annotations=READ_ONLY)
def look_up(query: str) -> str:
    """Look up the team's notes about a topic."""
    return f"Notes about **{query}**:\n\n- Deploys happen on Tuesdays."


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_note(title: str) -> str:
    """Delete a note by its title."""
    return f"Deleted the note {title!r}."


@server.tool()
def add_note(title: str, body: str) -> str:
    """Add a note (no annotations: the client cannot know whether it writes)."""
    return f"Added the note {title!r}."


@server.tool(annotations=READ_ONLY)
def note_stats() -> CallToolResult:
    """How many notes there are, as structured content."""
    return CallToolResult(
        content=[TextContent(text=json.dumps(STATS))], structured_content=dict(STATS)
    )


@server.tool(annotations=READ_ONLY)
def show_chart() -> CallToolResult:
    """A chart of notes per week, with a link to the full report."""
    return CallToolResult(
        content=[
            TextContent(text="Notes per week: steady."),
            ImageContent(data=PIXEL, mime_type="image/png"),
            ResourceLink(
                uri="https://notes.example.com/report",
                name="report",
                title="Full report",
                description="Every note, by week",
            ),
        ]
    )


@server.tool(annotations=READ_ONLY)
def failing_tool() -> str:
    """Always fails, as a tool reports a failure (isError)."""
    raise ToolError("the notes database is locked; retry in 30 seconds")


@server.tool(annotations=READ_ONLY)
async def hang() -> str:
    """Never answers."""
    await anyio.sleep_forever()
    return "never"


@server.tool(annotations=READ_ONLY)
def crash() -> str:
    """Kills this server's process in the middle of the call."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "never"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def archive_all() -> str:
    """Archives every note, and kills this server's process in the middle of it."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "never"


@server.tool(annotations=READ_ONLY)
async def add_tool(ctx: Context, name: str = "archive_notes") -> str:
    """Adds the archive_notes tool (under another name if given) and says the tool list
    changed."""

    def archive_notes(title: str) -> str:
        """Archive a note."""
        return f"Archived {title!r}."

    server.add_tool(archive_notes, name=name, annotations=READ_ONLY)
    await ctx.notify_tools_changed()  # 2026-07-28 sessions: through subscriptions/listen
    return f"Added {name}."


@server.tool(annotations=READ_ONLY)
def whoami() -> dict[str, Any]:
    """What this process was given: whether NOTES_SECRET is set, and any SWITCHBOARD_*
    variable it inherited (there should be none)."""
    return {
        "secret_set": bool(os.environ.get("NOTES_SECRET")),
        "switchboard_variables": sorted(k for k in os.environ if k.startswith("SWITCHBOARD_")),
    }


class RequireToken:
    """Refuses every request without ``Authorization: Bearer <NOTES_TOKEN>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != (
            self.expected
        ):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing or wrong token"})
            return
        await self.app(scope, receive, send)


def main() -> None:
    pid_file = os.environ.get("NOTES_PID_FILE")
    if pid_file:
        Path(pid_file).write_text(str(os.getpid()))
    if sys.argv[1:2] == ["http"]:
        app: ASGIApp = server.streamable_http_app()
        token = os.environ.get("NOTES_TOKEN")
        if token:
            app = RequireToken(app, token)
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()


if __name__ == "__main__":
    main()
