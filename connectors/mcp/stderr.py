"""A stdio MCP server's standard error: passed on to the log line by line, and its last
lines kept to say why the server failed ("No module named 'mcp'" says more than "the
connection closed").

Those lines end up in ``GET /api/connectors`` and ``switchboard connectors list``, so they
are bounded and cleaned first: at most ``TAIL_LINES`` lines of at most ``LINE_CHARS``
characters, without terminal escapes or control characters, and with the entry's secret
values (its ``env``) blanked out. A server may still print other secrets of its own (a
token read from a file): only the operator configures a server, and its stderr went to
Switchboard's log before this too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import unicodedata
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TextIO

logger = logging.getLogger("switchboard.mcp")

TAIL_LINES = 5
LINE_CHARS = 300
# A line without its newline yet is passed on in pieces of this size: nothing unbounded
# is held for a server that writes without newlines.
MAX_PENDING_BYTES = 8192
# How long the server's last words may take to arrive once it has been stopped (only a
# process of its own that still holds the pipe makes this run out).
DRAIN_SECONDS = 1.0

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")


def clean(line: bytes, secrets: tuple[str, ...] = ()) -> str:
    """One line as it can be shown: decoded, escapes and control characters removed, the
    secrets blanked, at most ``LINE_CHARS`` characters."""
    text = _ANSI.sub("", line.decode("utf-8", "replace"))
    # Cc and Cf: control and format characters (a bidi override can reorder what is read).
    text = "".join(" " if char == "\t" else char for char in text if _shown(char))
    text = " ".join(text.split())
    for secret in secrets:
        text = text.replace(secret, "***")
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"


def _shown(char: str) -> bool:
    return char == "\t" or unicodedata.category(char) not in ("Cc", "Cf")


class StderrTail:
    """One stdio server's standard error, across its restarts: each start gets a new pipe
    (``capture``), and ``lines`` are the last lines of the latest start."""

    def __init__(self, server: str, secrets: tuple[str, ...] = ()) -> None:
        self.server = server
        self.secrets = secrets
        self._lines: deque[str] = deque(maxlen=TAIL_LINES)

    def lines(self) -> list[str]:
        return list(self._lines)

    def explain(self, reason: str) -> str:
        """``reason`` with the server's last stderr lines, when it wrote any."""
        if not self._lines:
            return reason
        return f"{reason}; its last lines on stderr: {' / '.join(self._lines)}"

    def _add(self, line: bytes) -> None:
        text = clean(line, self.secrets)
        if text:
            self._lines.append(text)
            logger.info(
                "MCP server %r stderr: %s", self.server, text, extra={"mcp_server": self.server}
            )

    @asynccontextmanager
    async def capture(self) -> AsyncIterator[TextIO]:
        """A new pipe for one start of the server: yields the file to give it as its
        stderr. On the way out, waits (briefly) for the last bytes it wrote."""
        self._lines.clear()
        read_fd, write_fd = os.pipe()
        reader = os.fdopen(read_fd, "rb", buffering=0)
        writer = os.fdopen(write_fd, "w")
        protocol = _Lines(self._add)
        try:
            transport, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: protocol, reader
            )
        except BaseException:
            reader.close()
            writer.close()
            raise
        try:
            yield writer
        finally:
            writer.close()  # ours: the server has its own copy, and EOF comes when it exits
            try:
                await asyncio.wait_for(protocol.closed.wait(), DRAIN_SECONDS)
            except TimeoutError:
                pass
            finally:
                transport.close()


class _Lines(asyncio.Protocol):
    """Bytes from the pipe → lines, each handed to ``add``."""

    def __init__(self, add: Callable[[bytes], None]) -> None:
        self.add = add
        self.pending = b""
        self.closed = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        *lines, self.pending = (self.pending + data).split(b"\n")
        while len(self.pending) > MAX_PENDING_BYTES:
            lines.append(self.pending[:MAX_PENDING_BYTES])
            self.pending = self.pending[MAX_PENDING_BYTES:]
        for line in lines:
            self.add(line)

    def eof_received(self) -> bool | None:
        if self.pending:
            self.add(self.pending)
            self.pending = b""
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
