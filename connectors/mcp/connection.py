"""One MCP server kept connected: connect, watch, reconnect with backoff, stop.

A ``McpConnection`` owns the Agents SDK's server object (``MCPServerStdio`` or
``MCPServerStreamableHttp``) and one supervising task that:

- connects and lists the tools (bounded by the entry's ``connect_timeout``); a failure is
  logged in one line and retried with exponential backoff, so a server that is down at
  start-up (or later) comes back by itself;
- keeps the tool list cached, refreshed when the server says it changed
  (``notifications/tools/list_changed``; on a 2026-07-28 session that notification only
  comes through a ``subscriptions/listen`` stream, which is opened for it) and on every
  reconnection;
- reconnects when the connection is lost: a call that finds it closed, a subscription
  stream that drops, or a server that no longer answers a ping after a call timed out.

A call made while the server is being (re)connected waits for it (within the call's own
timeout), so a crash between calls costs the next call the restart's time, not a failure;
a call the crash interrupted is made again once the server is back only when the tool says
it reads (or can be repeated), since another may have done its work before the crash. A
stdio server's stderr is logged, and its last lines join the reason it failed.

Nothing here raises into a turn: ``call`` raises ``Unavailable``, ``ServerLost`` or
``ToolRefused`` and the tool layer (``connectors.mcp.tools``) turns those into cards.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from agents.exceptions import UserError
from agents.mcp import (
    MCPServerStdio,
    MCPServerStdioParams,
    MCPServerStreamableHttp,
    MCPServerStreamableHttpParams,
)
from agents.mcp.server import MCPStreamTransport
from mcp.client.session import IncomingMessage, MessageHandlerFnT
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ListenNotSupportedError, listen
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, CallToolResult, Tool, ToolListChangedNotification
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from connectors.mcp.config import HttpServer, McpServerConfig, StdioServer
from connectors.mcp.stderr import StderrTail

logger = logging.getLogger("switchboard.mcp")

State = Literal["connecting", "connected", "reconnecting", "failed", "stopped"]
# How long a server has to answer a ping once a call to it timed out, before it is
# taken for hung and restarted (a slow tool on a live server answers at once).
PING_TIMEOUT = 5.0
# Closing a connection (the SDK ends a stdio server's process: EOF, SIGTERM, SIGKILL).
CLEANUP_TIMEOUT = 15.0
# What the streamable-HTTP client says for a 4xx/5xx answer that is not JSON-RPC.
_HTTP_ERROR = "Server returned an error response"
# A connection that lived this long was healthy: losing it does not count as a failure.
STABLE_SECONDS = 30.0


class Unavailable(Exception):
    """The server is not connected now (down, starting or reconnecting)."""


class ServerLost(Exception):
    """The connection broke during the call (the server crashed or closed it)."""


class ToolRefused(Exception):
    """The server answered the call with a JSON-RPC error (unknown tool, bad arguments…);
    the message is the server's own text."""


@dataclass(frozen=True)
class Backoff:
    """Waits between reconnection attempts: ``first``, doubling, at most ``most``."""

    first: float = 0.5
    most: float = 30.0

    def delay(self, failures: int) -> float:
        return float(min(self.most, self.first * 2 ** max(0, failures - 1)))


# Commands that mean "Python": run as the server's own interpreter, the one that has the
# mcp package (under `make run` the PATH's python is another, without it).
PYTHON_COMMANDS = ("python", "python3")


def stdio_command(command: str) -> str:
    return sys.executable if command in PYTHON_COMMANDS else command


class _StdioServer(MCPServerStdio):
    """The SDK's stdio server, with the process's stderr going to ``stderr``."""

    def __init__(self, params: MCPServerStdioParams, stderr: StderrTail, **options: Any) -> None:
        super().__init__(params, **options)
        self.stderr = stderr

    def create_streams(self) -> AbstractAsyncContextManager[MCPStreamTransport]:
        return self._streams()

    @asynccontextmanager
    async def _streams(self) -> AsyncIterator[MCPStreamTransport]:
        async with self.stderr.capture() as errlog:
            async with stdio_client(self.params, errlog=errlog) as streams:
                errlog.close()  # the process has its own copy: its exit is the pipe's end
                yield streams


SdkServer = _StdioServer | MCPServerStreamableHttp


def sdk_server(
    config: McpServerConfig,
    call_timeout: float,
    on_message: MessageHandlerFnT,
) -> SdkServer:
    """The Agents SDK's server object for ``config``. No read timeout of its own: every
    request is bounded here (``connect_timeout``, the call's timeout, ``PING_TIMEOUT``)."""
    if isinstance(config, StdioServer):
        stdio: MCPServerStdioParams = {
            "command": stdio_command(config.command),
            "args": list(config.args),
            "env": {name: value.get_secret_value() for name, value in config.env.items()},
        }
        if config.cwd:
            stdio["cwd"] = config.cwd
        return _StdioServer(
            stdio,
            StderrTail(config.name, config.secrets()),
            name=config.name,
            client_session_timeout_seconds=None,
            message_handler=on_message,
        )
    assert isinstance(config, HttpServer)
    # The HTTP client's own timeouts sit above ours, so a slow tool is ours to give up on.
    slack = max(call_timeout, config.connect_timeout) + 5
    http: MCPServerStreamableHttpParams = {
        "url": config.url,
        "headers": {name: value.get_secret_value() for name, value in config.headers.items()},
        "timeout": slack,
        "sse_read_timeout": slack,
    }
    return MCPServerStreamableHttp(
        http,
        name=config.name,
        client_session_timeout_seconds=None,
        message_handler=on_message,
    )


def describe_failure(error: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """One line saying what went wrong, with the entry's secret values blanked out."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, TimeoutError):
        text = "it did not answer in time"
    elif isinstance(error, FileNotFoundError):
        text = f"the command was not found ({error.filename or error})"
    elif isinstance(error, MCPError) and error.code == CONNECTION_CLOSED:
        text = "the connection closed (the server exited or crashed)"
    elif isinstance(error, MCPError) and error.message == _HTTP_ERROR:
        # The MCP client keeps no status code: say where to look instead.
        text = "it answered with an HTTP error status (check its url and headers, e.g. a token)"
    elif isinstance(error, UserError | MCPError):
        text = str(error)
    else:
        detail = str(error).strip()
        text = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
    line = " ".join(text.split())[:300]
    for secret in secrets:
        line = line.replace(secret, "***")
    return line


class McpConnection:
    """One configured server, kept connected by a task of its own (``start``/``aclose``)."""

    def __init__(
        self,
        config: McpServerConfig,
        call_timeout: float,
        *,
        backoff: Backoff | None = None,
    ) -> None:
        self.config = config
        self.call_timeout = call_timeout
        self.backoff = backoff or Backoff()
        self.server = sdk_server(config, call_timeout, self._on_message)
        self.stderr = self.server.stderr if isinstance(self.server, _StdioServer) else None
        self.tools: tuple[Tool, ...] = ()
        self.state: State = "connecting"
        self.reason: str | None = None  # why it is not connected, one line
        self._changed = asyncio.Event()  # set (and replaced) at every change of state
        self.generation = 0  # connections made so far: a lost one is not taken for a new one
        self._on_tools: list[Callable[[], None]] = []
        self._wake = asyncio.Event()
        self._stopping = False
        self._attempted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._refreshing = False

    @property
    def name(self) -> str:
        return self.config.name

    def on_tools_changed(self, callback: Callable[[], None]) -> None:
        self._on_tools.append(callback)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._task = asyncio.create_task(self._supervise(), name=f"mcp-{self.name}")

    async def first_attempt(self) -> None:
        """Return once the first connection attempt has succeeded or failed."""
        await self._attempted.wait()

    def stop(self) -> None:
        """Ask the supervisor to close the connection and end (``aclose`` waits for it)."""
        self._stopping = True
        self._wake.set()

    def _set_state(self, state: State, reason: str | None) -> None:
        self.state, self.reason = state, reason
        self._changed.set()
        self._changed = asyncio.Event()

    async def usable(self) -> None:
        """Return once the server is connected; wait while it is being (re)connected, and
        raise ``Unavailable`` when it failed to start or is stopped."""
        while self.state in ("connecting", "reconnecting"):
            await self._changed.wait()
        if self.state != "connected" or self.server.session is None:
            raise Unavailable(self.reason or "it is stopped")

    def _explain(self, reason: str) -> str:
        """``reason`` with a stdio server's last stderr lines (read once it has stopped)."""
        return self.stderr.explain(reason) if self.stderr is not None else reason

    async def aclose(self) -> None:
        self.stop()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), CLEANUP_TIMEOUT + 5)
            except TimeoutError:
                task.cancel()
                logger.warning("MCP server %r did not close in time", self.name)
        for job in list(self._background):
            job.cancel()
        self._set_state("stopped", self.reason)

    async def _supervise(self) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
        while not self._stopping:
            try:
                await self._connect()
            except Exception as exc:
                failures += 1
                reason = describe_failure(exc, self.config.secrets())
                await self._cleanup()  # the process has stopped: its last words are in
                self._failed(self._explain(reason), failures)
                self._attempted.set()
                await self._pause(self.backoff.delay(failures))
                continue
            self._attempted.set()
            since = loop.time()
            watcher = asyncio.create_task(self._watch_changes(), name=f"mcp-{self.name}-listen")
            await self._wake.wait()
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            await self._cleanup()
            if self._stopping:
                break
            # A connection that held is simply re-made; one that keeps dying backs off.
            failures = 0 if loop.time() - since >= STABLE_SECONDS else failures + 1
            self._set_state("reconnecting", self._explain(self.reason or "it was lost"))
            logger.warning(
                "MCP server %r lost (%s); reconnecting", self.name, self.reason,
                extra={"mcp_server": self.name},
            )  # fmt: skip
            await self._pause(self.backoff.delay(failures) if failures else 0)
        self._set_state("stopped", self.reason)

    async def _connect(self) -> None:
        self._wake.clear()
        async with asyncio.timeout(self.config.connect_timeout):
            await self.server.connect()  # type: ignore[no-untyped-call]  # the SDK's, unannotated
            tools = await self.server.list_tools()
        self.generation += 1
        self._set_state("connected", None)
        self._set_tools(tools)
        logger.info(
            "MCP server %r connected",
            self.name,
            extra={"mcp_server": self.name, "tools": [tool.name for tool in tools]},
        )

    def _failed(self, reason: str, failures: int) -> None:
        self._set_state("failed", reason)
        wait = self.backoff.delay(failures)
        # One line for the first failure of a run; the retries after it are quieter.
        log = logger.error if failures == 1 else logger.debug
        log(
            "MCP server %r unavailable: %s (retrying in %gs)", self.name, reason, wait,
            extra={"mcp_server": self.name},
        )  # fmt: skip

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` unless asked to stop first."""
        if seconds <= 0 or self._stopping:
            return
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except TimeoutError:
            pass

    async def _cleanup(self) -> None:
        try:
            async with asyncio.timeout(CLEANUP_TIMEOUT):
                await self.server.cleanup()  # type: ignore[no-untyped-call]
        except Exception as exc:
            logger.debug("MCP server %r: cleanup failed: %s", self.name, describe_failure(exc))

    # ------------------------------------------------------------------ losing it

    def lost(self, generation: int, reason: str) -> None:
        """The connection made as ``generation`` broke: reconnect (once, whoever says it)."""
        if generation != self.generation or self.state != "connected":
            return
        self._set_state("reconnecting", reason)
        self._wake.set()

    def suspect(self) -> None:
        """A call timed out: ping the server, and restart it if it does not answer."""
        generation = self.generation
        session = self.server.session
        if session is None or self.state != "connected":
            return

        async def ping() -> None:
            try:
                async with asyncio.timeout(PING_TIMEOUT):
                    await session.send_ping()
            except MCPError as exc:
                if exc.code == CONNECTION_CLOSED:
                    self.lost(generation, describe_failure(exc))
                # Any other answer (2026-07-28 servers have no ping) shows it is alive.
            except Exception as exc:
                self.lost(generation, f"it stopped answering ({describe_failure(exc)})")

        self._spawn(ping())

    # ------------------------------------------------------------------ tools

    async def call(
        self, tool: str, arguments: dict[str, Any], *, repeatable: bool = False
    ) -> CallToolResult:
        """Call ``tool`` on the server once it is usable (the caller bounds all of it with
        the call's timeout). When the server stops during the call, a ``repeatable`` tool
        (one that only reads, or says repeating it changes nothing) is called again once
        the server is back; any other raises ``ServerLost``: it may have done its work."""
        await self.usable()
        try:
            return await self._call_once(tool, arguments)
        except ServerLost:
            if not repeatable:
                raise
        await self.usable()
        return await self._call_once(tool, arguments)

    async def _call_once(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        generation = self.generation
        try:
            return await self.server.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:
                raise ToolRefused(exc.message) from None
            reason = describe_failure(exc)
        except Exception as exc:  # transport failures: the SDK maps them to UserError
            reason = describe_failure(exc, self.config.secrets())
        self.lost(generation, reason)
        raise ServerLost(reason)

    def _set_tools(self, tools: list[Tool]) -> None:
        changed = [tool.model_dump() for tool in tools] != [t.model_dump() for t in self.tools]
        self.tools = tuple(tools)
        if changed:
            for callback in self._on_tools:
                callback()

    async def _on_message(self, message: IncomingMessage) -> None:
        # Both protocol eras deliver the notification here (2026-07-28: a copy of what the
        # subscription stream carries). Never block the session's reader: refresh apart.
        if isinstance(message, ToolListChangedNotification):
            self._spawn(self._refresh())
        elif isinstance(message, Exception):
            logger.warning(
                "MCP server %r: transport error: %s", self.name,
                describe_failure(message, self.config.secrets()),
            )  # fmt: skip

    async def _refresh(self) -> None:
        if self._refreshing or self.state != "connected":
            return
        self._refreshing = True
        generation = self.generation
        try:
            async with asyncio.timeout(self.config.connect_timeout):
                tools = await self.server.list_tools()
        except Exception as exc:
            logger.warning(
                "MCP server %r: could not refresh its tools: %s", self.name,
                describe_failure(exc, self.config.secrets()),
            )  # fmt: skip
            return
        finally:
            self._refreshing = False
        if generation == self.generation:
            self._set_tools(tools)
            logger.info(
                "MCP server %r changed its tools",
                self.name,
                extra={"mcp_server": self.name, "tools": [tool.name for tool in tools]},
            )

    async def _watch_changes(self) -> None:
        """On a 2026-07-28 session, hold a ``subscriptions/listen`` stream open for tool
        changes; its dropping is how a crash is noticed before the next call."""
        session = self.server.session
        if session is None or session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return  # older sessions get the notification unasked
        generation = self.generation
        try:
            async with AsyncExitStack() as stack:
                try:
                    async with asyncio.timeout(self.config.connect_timeout):
                        subscription = await stack.enter_async_context(
                            listen(session, tools_list_changed=True)
                        )
                except (MCPError, TimeoutError, ListenNotSupportedError) as exc:
                    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
                        raise
                    # Not offered: the tools are still refreshed on every reconnection.
                    logger.info(
                        "MCP server %r: no change subscription (%s)", self.name,
                        describe_failure(exc, self.config.secrets()),
                    )  # fmt: skip
                    return
                async for _event in subscription:
                    pass  # the notification's copy reaches _on_message
        except Exception as exc:
            self.lost(generation, describe_failure(exc, self.config.secrets()))
            return
        self.lost(generation, "it ended its change subscription (it is shutting down)")

    def _spawn(self, job: Any) -> None:
        task = asyncio.ensure_future(job)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
