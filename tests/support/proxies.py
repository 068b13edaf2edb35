"""A loopback TCP proxy that can cut every connection, to drop a browser's socket for real.

The browser talks to the proxy as if it were the server (same origin for the page and the
socket); ``drop()`` aborts every open connection, and while ``refusing`` is set new
connections are closed at once, like a server that is unreachable for a moment.
``silence()`` makes the open connections die without a word (a server gone, a NAT entry
expired): nothing reaches the client until it sends something, which resets it.
``hold_closes()`` holds back a server's close that follows its own last words (a
farewell, not the answer to a client's goodbye) until the client sends on that connection
again, or ``release_closes()``: a FIN that lags behind (``held`` counts them).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

CHUNK = 65536


class _Silenced(Exception):
    pass


class DroppingProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.refusing = False
        self.accepted = 0
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._silenced: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._server: asyncio.Server | None = None
        self._holding = False
        self._held: set[asyncio.Event] = set()  # per connection: its client spoke last

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self.release_closes()
        self.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def drop(self) -> None:
        """Abort every open connection (no close handshake: the peer sees a reset)."""
        for client, upstream in list(self._pairs):
            client.transport.abort()
            upstream.transport.abort()
        self._pairs.clear()

    @property
    def held(self) -> int:
        return len(self._held)

    def hold_closes(self) -> None:
        self._holding = True

    def release_closes(self) -> None:
        self._holding = False
        for spoke in self._held:
            spoke.set()

    def silence(self) -> None:
        """The open connections are dead from now on, and their clients not told."""
        self._silenced |= self._pairs

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            writer.transport.abort()
            return
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", self.target_port), 5
            )
        except (OSError, TimeoutError):
            writer.transport.abort()
            return
        pair = (writer, up_writer)
        self._pairs.add(pair)

        client_spoke_last = asyncio.Event()

        def alive() -> bool:
            return pair not in self._silenced

        async def client_ended() -> None:
            client_spoke_last.set()

        async def server_ended() -> None:
            if not self._holding or client_spoke_last.is_set():
                return
            self._held.add(client_spoke_last)
            try:
                await client_spoke_last.wait()
            finally:
                self._held.discard(client_spoke_last)

        try:
            await asyncio.gather(
                self._pipe(reader, up_writer, alive, client_spoke_last.set, client_ended),
                self._pipe(up_reader, writer, alive, client_spoke_last.clear, server_ended),
            )
        except _Silenced:
            pass
        finally:
            self._pairs.discard(pair)
            self._silenced.discard(pair)
            writer.transport.abort()
            up_writer.transport.abort()

    @staticmethod
    async def _pipe(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        alive: Callable[[], bool],
        on_data: Callable[[], None] | None = None,
        before_eof: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(CHUNK):
                if not alive():
                    raise _Silenced  # _handle resets both ends
                if on_data is not None:
                    on_data()
                writer.write(data)
                await writer.drain()
        if before_eof is not None:
            await before_eof()
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            writer.write_eof()


@asynccontextmanager
async def dropping_proxy(target_port: int) -> AsyncIterator[DroppingProxy]:
    proxy = DroppingProxy(target_port)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()
