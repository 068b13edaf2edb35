"""A loopback TCP proxy that a test can take down and bring back on the same port.

Put it between the app and a real service (PostgreSQL) to cause an outage without
touching the service itself, which other tests use at the same time:

- ``stop()``: every proxied connection is reset and the port stops listening, so new
  connections are refused at once, as when a database server is down;
- ``start()``: listening again on the same port, forwarding to the same upstream.
"""

from __future__ import annotations

import asyncio
import contextlib

from tests.support.servers import loopback_socket

CONNECT_TIMEOUT = 5.0
CHUNK = 64 * 1024


class TcpProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0  # chosen by the first start()
        self.accepted = 0  # connections accepted over the proxy's life
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def open_connections(self) -> int:
        return len(self._pipes)

    async def start(self) -> None:
        if self._server is not None:
            return
        # Nagle off on what it accepts, and the port may be ours from a moment ago (its
        # closed connections in TIME_WAIT): loopback_socket sees to both.
        sock = loopback_socket(self.port)
        self.port = sock.getsockname()[1]
        self._server = await asyncio.start_server(self._serve, sock=sock)

    async def stop(self) -> None:
        """Refuse new connections and reset every open one."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()  # RST, not a polite FIN: the peer vanished
        # Not cancelled: asyncio.start_server's tasks log an error when cancelled (3.11);
        # with both sockets reset each pipe ends on its own.
        pipes = list(self._pipes)
        if pipes:
            await asyncio.wait(pipes, timeout=CONNECT_TIMEOUT + 1)

    async def __aenter__(self) -> TcpProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _serve(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._pipes.add(task)
        self._writers.add(client_writer)
        self.accepted += 1
        upstream_writer: asyncio.StreamWriter | None = None
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(*self.upstream), CONNECT_TIMEOUT
            )
            self._writers.add(upstream_writer)
            await asyncio.gather(
                _pump(client_reader, upstream_writer), _pump(upstream_reader, client_writer)
            )
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            for writer in (client_writer, upstream_writer):
                if writer is not None:
                    self._writers.discard(writer)
                    writer.transport.abort()
            self._pipes.discard(task)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    # The other direction ends when its own peer closes; end ours the same way.
    with contextlib.suppress(OSError, RuntimeError):
        writer.write_eof()
