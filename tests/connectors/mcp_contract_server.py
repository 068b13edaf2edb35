"""A small MCP server (the `mcp` package's MCPServer, over stdio) for the contract kit's
tests: `python mcp_contract_server.py good` serves two well-made tools, `... flawed` serves
tools that break the kit's rules one at a time."""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

READ_ONLY = ToolAnnotations(readOnlyHint=True)
NOTES = {"n1": "Buy milk and eggs", "n2": "Call the plumber about the sink"}


def good() -> MCPServer:
    server = MCPServer("notes")

    @server.tool(annotations=READ_ONLY)
    def find_notes(
        words: Annotated[str, Field(description="Words to look for, e.g. 'milk'.")],
    ) -> str:
        """Find the notes that contain any of the words."""
        wanted = words.lower().split()
        found = [text for text in NOTES.values() if any(w in text.lower() for w in wanted)]
        return "\n".join(found) or "No note matches."

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
    def add_note(text: Annotated[str, Field(description="What the note says.")]) -> str:
        """Add a note (kept while the server runs)."""
        NOTES[f"n{len(NOTES) + 1}"] = text
        return f"Added note n{len(NOTES)}."

    return server


def flawed() -> MCPServer:
    server = MCPServer("flawed-notes")

    @server.tool()
    def undocumented(text: str) -> str:
        return f"echo: {text}"

    @server.tool(annotations=READ_ONLY)
    def explodes(text: Annotated[str, Field(description="Anything.")]) -> str:
        """Fails on every call."""
        raise RuntimeError(f"the notes index is corrupt (asked for {text!r})")

    @server.tool(annotations=READ_ONLY)
    async def hangs() -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "unreachable"

    return server


if __name__ == "__main__":
    {"good": good, "flawed": flawed}[sys.argv[1]]().run("stdio")
