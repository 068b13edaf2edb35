"""The peer Switchboard is measured against: OpenAI's ChatKit server SDK (``openai-chatkit``).

    python -m bench.chatkit_peer --port P --db PATH [--delay SECONDS]

What a Python developer would build with ChatKit's documentation: one ``ChatKitServer``
whose ``respond`` loads the thread's recent items, turns them into model input
(``simple_to_agent_input``) and streams ``Runner.run_streamed`` through
``stream_agent_response``; one ``POST /chatkit`` endpoint answering with Server-Sent
Events; a SQLite ``Store`` in the shape of ChatKit's own SQLite sample store (a threads
table and an items table, each row the item's pydantic JSON, written with the standard
``sqlite3`` module from the async methods). The agent and the model are ours, imported
as the bare-SDK benchmark imports them (``bench.turn_overhead.BareTurns``): the same
orchestrator, its connectors and the offline model with the same delay.

Where this is not like for like (docs/benchmarks.md says it too):

- the store runs synchronous ``sqlite3`` calls on the event loop (as ChatKit's sample
  does): cheap in CPU, but every commit blocks the loop, which our rules forbid;
- it keeps one connection in WAL mode with ``synchronous=NORMAL``, as Switchboard's
  SQLite does (the sample opens a connection per call, which would cost it more);
- ChatKit stores a turn's items when each is done (user message, tool calls, the answer):
  a kill -9 mid-answer loses the whole answer, where Switchboard keeps all but the last
  250 ms of text; there is no resume of a stream, no turn lease, no cancel across
  processes, no title or suggestions after the turn;
- the tools get our ``ChatContext`` as the run context (they need it), so ChatKit's
  ``AgentContext`` only drives the stream conversion; no tool streams widgets.
"""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from agents import Runner
from chatkit.agents import AgentContext, simple_to_agent_input, stream_agent_response
from chatkit.server import ChatKitServer, StreamingResult
from chatkit.store import NotFoundError, Store
from chatkit.types import (
    Attachment,
    Page,
    ThreadItem,
    ThreadMetadata,
    ThreadStreamEvent,
    UserMessageItem,
)
from pydantic import BaseModel, TypeAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from connectors.context import ChatContext

Context = dict[str, Any]  # the request context: {"user_id": ...}
HISTORY_ITEMS = 20  # what ChatKit's guide passes the model


class _ThreadRow(BaseModel):
    thread: ThreadMetadata


_ITEM = TypeAdapter(ThreadItem)


class SQLiteStore(Store[Context]):
    """ChatKit's SQLite store pattern: one row of pydantic JSON per thread and per item."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS threads (id TEXT PRIMARY KEY, user_id TEXT NOT NULL,"
            " created_at TEXT NOT NULL, data TEXT NOT NULL)"
        )
        self.conn.execute(
            # Keyed within the thread: the offline model gives the same answer the same
            # response item id every time (a real model's ids are unique).
            "CREATE TABLE IF NOT EXISTS items (id TEXT NOT NULL, thread_id TEXT NOT NULL,"
            " user_id TEXT NOT NULL, created_at TEXT NOT NULL, data TEXT NOT NULL,"
            " PRIMARY KEY (thread_id, id))"
        )
        self.conn.execute(
            "CREATE INDEX IF NOT EXISTS items_thread ON items (thread_id, created_at)"
        )

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with self.conn:  # one transaction per call
            self.conn.execute("BEGIN")
            self.conn.execute(sql, params)

    async def load_thread(self, thread_id: str, context: Context) -> ThreadMetadata:
        row = self.conn.execute(
            "SELECT data FROM threads WHERE id = ? AND user_id = ?",
            (thread_id, context["user_id"]),
        ).fetchone()
        if row is None:
            raise NotFoundError(f"Thread {thread_id} not found")
        return _ThreadRow.model_validate_json(row[0]).thread

    async def save_thread(self, thread: ThreadMetadata, context: Context) -> None:
        self._write(
            "INSERT OR REPLACE INTO threads (id, user_id, created_at, data) VALUES (?, ?, ?, ?)",
            (
                thread.id,
                context["user_id"],
                thread.created_at.isoformat(),
                _ThreadRow(thread=thread).model_dump_json(),
            ),
        )

    async def load_thread_items(
        self, thread_id: str, after: str | None, limit: int, order: str, context: Context
    ) -> Page[ThreadItem]:
        direction = "DESC" if order == "desc" else "ASC"
        params: list[Any] = [thread_id, context["user_id"]]
        where = ""
        if after:
            anchor = self.conn.execute(
                "SELECT created_at FROM items WHERE id = ? AND thread_id = ?", (after, thread_id)
            ).fetchone()
            if anchor is None:
                raise NotFoundError(f"Item {after} not found")
            where = " AND created_at " + ("<" if direction == "DESC" else ">") + " ?"
            params.append(anchor[0])
        rows = self.conn.execute(
            "SELECT id, data FROM items WHERE thread_id = ? AND user_id = ?"
            f"{where} ORDER BY created_at {direction} LIMIT ?",
            (*params, limit + 1),
        ).fetchall()
        has_more = len(rows) > limit
        data = [_ITEM.validate_json(row[1]) for row in rows[:limit]]
        return Page(data=data, has_more=has_more, after=rows[limit - 1][0] if has_more else None)

    async def add_thread_item(self, thread_id: str, item: ThreadItem, context: Context) -> None:
        self._write(
            "INSERT INTO items (id, thread_id, user_id, created_at, data) VALUES (?, ?, ?, ?, ?)",
            (
                item.id,
                thread_id,
                context["user_id"],
                item.created_at.isoformat(),
                _ITEM.dump_json(item).decode(),
            ),
        )

    async def save_item(self, thread_id: str, item: ThreadItem, context: Context) -> None:
        self._write(
            "INSERT OR REPLACE INTO items (id, thread_id, user_id, created_at, data)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                item.id,
                thread_id,
                context["user_id"],
                item.created_at.isoformat(),
                _ITEM.dump_json(item).decode(),
            ),
        )

    async def load_item(self, thread_id: str, item_id: str, context: Context) -> ThreadItem:
        row = self.conn.execute(
            "SELECT data FROM items WHERE id = ? AND thread_id = ? AND user_id = ?",
            (item_id, thread_id, context["user_id"]),
        ).fetchone()
        if row is None:
            raise NotFoundError(f"Item {item_id} not found")
        return _ITEM.validate_json(row[0])

    async def load_threads(
        self, limit: int, after: str | None, order: str, context: Context
    ) -> Page[ThreadMetadata]:
        raise NotImplementedError("the benchmark never lists threads")

    async def delete_thread(self, thread_id: str, context: Context) -> None:
        self._write("DELETE FROM items WHERE thread_id = ?", (thread_id,))
        self._write("DELETE FROM threads WHERE id = ?", (thread_id,))

    async def delete_thread_item(self, thread_id: str, item_id: str, context: Context) -> None:
        self._write("DELETE FROM items WHERE id = ? AND thread_id = ?", (item_id, thread_id))

    async def save_attachment(self, attachment: Attachment, context: Context) -> None:
        raise NotImplementedError("the benchmark sends no attachments")

    async def load_attachment(self, attachment_id: str, context: Context) -> Attachment:
        raise NotImplementedError("the benchmark sends no attachments")

    async def delete_attachment(self, attachment_id: str, context: Context) -> None:
        raise NotImplementedError("the benchmark sends no attachments")


class PeerServer(ChatKitServer[Context]):
    """``respond`` as ChatKit's guide writes it, with our orchestrator and offline model."""

    def __init__(self, store: SQLiteStore, delay: float) -> None:
        super().__init__(store=store)
        from bench.turn_overhead import BareTurns

        self.bare = BareTurns(delay)  # the orchestrator, connectors and model of the bench

    async def respond(
        self, thread: ThreadMetadata, input_user_message: UserMessageItem | None, context: Context
    ) -> AsyncIterator[ThreadStreamEvent]:
        page = await self.store.load_thread_items(thread.id, None, HISTORY_ITEMS, "desc", context)
        input_items = await simple_to_agent_input(list(reversed(page.data)))
        agent_context = AgentContext(thread=thread, store=self.store, request_context=context)
        run_context = ChatContext(
            user_id=context["user_id"],
            chat_id=thread.id,
            turn_id=input_user_message.id if input_user_message else thread.id,
            settings=self.bare.settings,
            demo=self.bare.demo.for_user(context["user_id"]),
        )
        result = Runner.run_streamed(
            self.bare.orchestrator,
            input_items,
            context=run_context,
            run_config=self.bare.run_config,
        )
        async for event in stream_agent_response(agent_context, result):
            yield event


def create_app(db: str, delay: float) -> Starlette:
    server = PeerServer(SQLiteStore(db), delay)

    async def chatkit(request: Request) -> Response:
        result = await server.process(await request.body(), context={"user_id": "bench"})
        if isinstance(result, StreamingResult):
            return StreamingResponse(result, media_type="text/event-stream")
        return Response(content=result.json, media_type="application/json")

    return Starlette(routes=[Route("/chatkit", chatkit, methods=["POST"])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True, help="the SQLite file of the store")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between words")
    args = parser.parse_args()
    # As ``switchboard serve`` runs: one uvicorn worker, uvloop and httptools when present.
    uvicorn.run(
        create_app(args.db, args.delay),
        host="127.0.0.1",
        port=args.port,
        log_config=None,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
