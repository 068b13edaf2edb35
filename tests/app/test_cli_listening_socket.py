"""The socket ``switchboard serve`` listens on: connections accepted from it send small
frames at once (TCP_NODELAY) on asyncio's own loop too, not only on uvloop."""

from __future__ import annotations

import asyncio
import socket

from app.cli import bind_port


def test_connections_accepted_on_asyncios_own_loop_have_nagle_off() -> None:
    listening = bind_port("127.0.0.1", 0)

    async def accepted_nodelay() -> int:
        flag: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_connection(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted = writer.get_extra_info("socket")
            flag.set_result(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connection, sock=listening)
        try:
            _, writer = await asyncio.open_connection(*listening.getsockname()[:2])
            try:
                return await asyncio.wait_for(flag, 10)
            finally:
                writer.close()
        finally:
            server.close()

    loop = asyncio.new_event_loop()  # the default policy's loop: asyncio's, not uvloop
    try:
        assert not type(loop).__module__.startswith("uvloop")
        assert loop.run_until_complete(accepted_nodelay()) == 1
    finally:
        loop.close()
        listening.close()
