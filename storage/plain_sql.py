"""Plain SQL on the bare driver for the statements every turn runs: its start and its
appends, opening its chat, reading its history and titling it, and a connector's account.

Through SQLAlchemy these cost more CPU than the database did (storage/drivers.py). Each
transaction is written once, as a plan: a generator that yields the statements to run and
receives their results. ``run_plan`` drives a plan on the SQLite thread in one hop or on
asyncpg; the SQL text is spelled per engine below. The statements, their order and so
the locks are those of the SQLAlchemy versions they replace (storage/events.py says why
the seqs come first). Everything else stays on SQLAlchemy.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any, Literal

from storage.engine import Database, json_dumps
from storage.errors import (
    CancelRequested,
    ChatNotFound,
    ClientMessageReused,
    TurnFenced,
    TurnInProgress,
)
from storage.models import item_call_id, utcnow
from storage.packed_json import pack, unpack
from storage.packed_time import pack_time, pack_ts
from storage.records import ChatRecord, EventRecord, NewEvent, TurnRecord, TurnUpdate

FINAL_STATUSES = frozenset({"completed", "cancelled", "failed"})

# "value": the first column of the first row (None without one); "row": the first row;
# "all": every row; "many": executemany, nothing back; "count": the rows changed.
Mode = Literal["value", "row", "all", "many", "count"]


@dataclass(frozen=True, slots=True)
class Statement:
    name: str  # a key of the engine's SQL (or "update_turn:<columns>")
    params: Any  # a tuple, or a list of tuples for "many"
    mode: Mode


Plan = Generator[Statement, Any, Any]


@dataclass(frozen=True, slots=True)
class Binding:
    """How an engine takes values the driver does not convert by itself."""

    time: Callable[[datetime], Any]
    # Event payloads, conversation items and usage: packed on SQLite
    # (storage/packed_json.py); JSON text on PostgreSQL.
    packed: Callable[[Any], str | bytes]
    # And back: a stored time as aware UTC, a stored payload or item as its value.
    read_time: Callable[[Any], datetime]
    unpacked: Callable[[Any], Any]
    # An event's ts, and the times no SQL compares (an item's created_at, a turn's
    # created_at and finished_at): a few bytes on SQLite (storage/packed_time.py).
    packed_ts: Callable[[str], str | bytes]
    packed_time: Callable[[datetime], Any]
    # PostgreSQL takes the seqs and inserts the events in one statement (one round trip
    # less per append); SQLite has no UPDATE inside WITH, and its statements cost no trip.
    one_statement_append: bool = False


@dataclass(frozen=True, slots=True)
class Append:
    chat_id: str
    events: Sequence[NewEvent]
    update: TurnUpdate | None
    fence_turn: str | None
    after_end: bool


def turn_update_values(change: TurnUpdate, finished_at: Any) -> dict[str, Any]:
    """The ``turns`` columns a ``TurnUpdate`` sets (JSON still as Python values)."""
    values: dict[str, Any] = {
        name: value
        for name in ("partial_text", "status", "final_text", "usage", "current_agent")
        if (value := getattr(change, name)) is not None
    }
    if change.status in FINAL_STATUSES:
        values["finished_at"] = finished_at
        # Nothing runs an ended turn: its runner and lease only fence and sweep running
        # ones (``status = 'running'`` in every query that reads them), so they go, as a
        # closed orphan's and a paused turn's do (~45 bytes a turn, issue 21).
        values["runner"] = None
        values["lease_until"] = None
    return values


def append_plan(append: Append, bind: Binding) -> Plan:
    """The statements of ``EventStore.append``."""
    chat_id, events, update = append.chat_id, append.events, append.update
    moment = utcnow()
    now = bind.time(moment)
    records: list[EventRecord] = []
    if events:
        # As stored: (turn_id, type, payload, ts) of each event.
        stored = [(e.turn_id, e.type, bind.packed(e.payload), bind.packed_ts(e.ts)) for e in events]
        if bind.one_statement_append:
            arrays = [list(column) for column in zip(*stored, strict=True)]
            last = yield Statement("allocate_insert", (len(events), now, chat_id, *arrays), "value")
        else:
            last = yield Statement("allocate", (len(events), now, chat_id), "value")
        if last is None:
            raise ChatNotFound(chat_id)
        first = int(last) - len(events) + 1
        records = [
            EventRecord(chat_id, first + i, e.turn_id, e.type, e.payload, e.ts)
            for i, e in enumerate(events)
        ]
        if not bind.one_statement_append:
            rows = [(chat_id, first + i, *row) for i, row in enumerate(stored)]
            yield Statement("insert_events", rows, "many")
    fence = append.fence_turn
    if fence is not None and append.after_end:
        if (yield Statement("latest_turn", (chat_id,), "value")) != fence:
            raise TurnFenced(fence)
    elif fence is not None:
        if not events:  # the chat row's lock, which the seqs would have taken
            yield Statement("lock_chat", (chat_id,), "value")
        turn = yield Statement("turn_status", (fence, chat_id), "row")
        if turn is None or turn[0] != "running":
            raise TurnFenced(fence)
        if turn[1] and update is not None and update.status == "completed":
            raise CancelRequested(fence)
    if update is not None:
        if update.items:
            created, turn_id = bind.packed_time(moment), update.turn_id
            yield Statement(
                "insert_items",
                [
                    (
                        chat_id,
                        bind.packed(dict(item)),
                        created,
                        turn_id,
                        chat_id,
                        item_call_id(item),
                    )
                    for item in update.items
                ],
                "many",
            )
        values = turn_update_values(update, bind.packed_time(moment))
        if values:
            if "usage" in values:
                values["usage"] = bind.packed(values["usage"])
            columns = ",".join(values)
            changed = yield Statement(
                f"update_turn:{columns}", (*values.values(), update.turn_id, chat_id), "count"
            )
            if changed == 0:
                raise ValueError(f"turn {update.turn_id!r} does not exist in chat {chat_id!r}")
    return records


@dataclass(frozen=True, slots=True)
class Start:
    chat_id: str
    prompt: str
    preview: str
    client_message_id: str | None
    event: EventRecord  # its user_prompt (its seq is the turn's, known once allocated)
    turn: TurnRecord  # as it starts: running, with its lease
    owner: str | None
    attachment_ids: Sequence[str]


class Repeated(Exception):
    """The prompt's ``client_message_id`` started ``turn_id`` before: nothing is written
    (the plan raises it so that its transaction is rolled back)."""

    def __init__(self, turn_id: str) -> None:
        super().__init__(turn_id)
        self.turn_id = turn_id


def start_plan(start: Start, bind: Binding) -> Plan:
    """The statements of ``EventStore.start_turn``: returns the turn's seq."""
    chat_id, cmid, turn = start.chat_id, start.client_message_id, start.turn
    now = bind.time(utcnow())
    if start.owner is None:
        last = yield Statement("allocate_preview", (1, now, start.preview, chat_id), "value")
    else:
        owned = (1, now, start.preview, chat_id, start.owner)
        last = yield Statement("allocate_owned", owned, "value")
    if last is None:
        raise ChatNotFound(chat_id)
    if cmid is None:
        existing = yield Statement("running_turns", (chat_id,), "all")
    else:
        existing = yield Statement("running_or_same_message", (chat_id, cmid), "all")
    for turn_id, client_message_id, prompt in existing:
        if cmid is not None and client_message_id == cmid:
            if prompt != start.prompt:
                raise ClientMessageReused(cmid)
            raise Repeated(turn_id)
    if existing:
        raise TurnInProgress(existing[0][0])
    seq = int(last)
    yield Statement("insert_turn", turn_row(turn, seq, bind), "count")
    event = start.event
    payload, ts = bind.packed(event.payload), bind.packed_ts(event.ts)
    row = (chat_id, seq, event.turn_id, event.type, payload, ts)
    yield Statement("insert_events", [row], "many")
    if start.attachment_ids:
        marked = [(turn.id, id_, chat_id) for id_ in start.attachment_ids]
        yield Statement("mark_attachments", marked, "many")
    return seq


_TURN_COLUMNS = (
    "id, chat_id, client_message_id, prompt, status, partial_text, created_at, "
    "user_prompt_seq, runner, lease_until, continues"
)


def turn_row(turn: TurnRecord, seq: int, bind: Binding) -> tuple[Any, ...]:
    """A starting turn's ``turns`` row (``_TURN_COLUMNS``; the rest are their defaults)."""
    lease_until = bind.time(turn.lease_until) if turn.lease_until is not None else None
    return (
        turn.id,
        turn.chat_id,
        turn.client_message_id,
        turn.prompt,
        turn.status,
        turn.partial_text,
        bind.packed_time(turn.created_at),
        seq,
        turn.runner,
        lease_until,
        turn.continues,
    )


def chat_plan(chat_id: str, owner: str | None, bind: Binding) -> Plan:
    """The chat, created for ``owner`` first when it is given (None: only read)."""
    if owner is not None:
        now = bind.time(utcnow())
        yield Statement("insert_chat", (chat_id, owner, now, now), "count")
    row = yield Statement("chat", (chat_id,), "row")
    if row is None:
        return None
    id_, user_id, title, created_at, updated_at, last_seq, preview = row
    return ChatRecord(
        id_,
        user_id,
        title,
        bind.read_time(created_at),
        bind.read_time(updated_at),
        int(last_seq),
        preview,
    )


def title_plan(chat_id: str, owner: str, title: str) -> Plan:
    """Title the chat unless it has a title: whether it did."""
    changed = yield Statement("title_if_untitled", (title, chat_id, owner), "count")
    return bool(changed)


def history_plan(chat_id: str, bind: Binding) -> Plan:
    """The chat's compaction row (or None) and the ``(id, item)`` rows after it that the
    model still reads, oldest first."""
    compaction = yield from compaction_plan(chat_id)
    after = int(compaction[0]) if compaction is not None else 0
    rows = yield from items_plan(chat_id, after, bind)
    return compaction, rows


def credentials_plan(user_id: str, connector: str) -> Plan:
    """A connected account's encrypted credentials (read at every call of its tools)."""
    token = yield Statement("credentials", (user_id, connector), "value")
    return token


def compaction_plan(chat_id: str) -> Plan:
    """The chat's ``chat_memory`` row as ``(through_item_id, summary, summary_tokens,
    folded_items, compactions)``, or None."""
    row = yield Statement("compaction", (chat_id,), "row")
    return row


def items_plan(chat_id: str, after: int, bind: Binding) -> Plan:
    """The ``(id, item)`` rows after ``after`` that the model still reads, oldest first."""
    rows = yield Statement("items_after", (chat_id, chat_id, chat_id, after), "all")
    unpacked = bind.unpacked
    return [(int(id_), unpacked(item)) for id_, item in rows]


def newest_items_plan(chat_id: str, limit: int, bind: Binding) -> Plan:
    """The latest ``limit`` items the model still reads, oldest first."""
    rows = yield Statement("items_newest", (chat_id, chat_id, chat_id, limit), "all")
    unpacked = bind.unpacked
    return [unpacked(item) for _, item in reversed(rows)]


# The items the model still reads: a superseded turn's (regenerated or edited,
# docs/protocol.md "Regenerate, edit and continue") are left out, except the calls the
# person approved and their outputs: what a side-effecting tool did (an email sent) stays a
# fact of the conversation, whichever answer replaced the one that did it.
_MODEL_READS = (
    "chat_id = ? AND (turn_id IS NULL "
    "OR turn_id NOT IN (SELECT id FROM turns WHERE chat_id = ? AND superseded_by IS NOT NULL) "
    "OR call_id IN (SELECT call_id FROM approvals WHERE chat_id = ? AND status = 'approved'))"
)


_SQL = {
    "allocate": (
        "UPDATE chats SET last_seq = last_seq + ?, updated_at = ? WHERE id = ? RETURNING last_seq"
    ),
    "insert_events": (
        "INSERT INTO chat_events (chat_id, seq, turn_id, type, payload, ts) "
        "VALUES (?, ?, ?, ?, ?, ?)"
    ),
    "latest_turn": ("SELECT id FROM turns WHERE chat_id = ? ORDER BY user_prompt_seq DESC LIMIT 1"),
    "lock_chat": "SELECT id FROM chats WHERE id = ?",
    "turn_status": "SELECT status, cancel_requested FROM turns WHERE id = ? AND chat_id = ?",
    "allocate_preview": (
        "UPDATE chats SET last_seq = last_seq + ?, updated_at = ?, preview = ? WHERE id = ? "
        "RETURNING last_seq"
    ),
    "allocate_owned": (
        "UPDATE chats SET last_seq = last_seq + ?, updated_at = ?, preview = ? "
        "WHERE id = ? AND user_id = ? RETURNING last_seq"
    ),
    "running_turns": (
        "SELECT id, client_message_id, prompt FROM turns WHERE chat_id = ? AND status = 'running'"
    ),
    "running_or_same_message": (
        "SELECT id, client_message_id, prompt FROM turns "
        "WHERE chat_id = ? AND (status = 'running' OR client_message_id = ?)"
    ),
    "insert_turn": (
        f"INSERT INTO turns ({_TURN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ),
    "mark_attachments": (
        "UPDATE attachments SET turn_id = ? WHERE id = ? AND chat_id = ? AND turn_id IS NULL"
    ),
    "chat": (
        "SELECT id, user_id, title, created_at, updated_at, last_seq, preview FROM chats "
        "WHERE id = ?"
    ),
    "insert_chat": (
        "INSERT INTO chats (id, user_id, created_at, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (id) DO NOTHING"
    ),
    "title_if_untitled": (
        "UPDATE chats SET title = ? WHERE id = ? AND user_id = ? AND (title IS NULL OR title = '')"
    ),
    "credentials": (
        "SELECT credentials FROM connected_accounts WHERE user_id = ? AND connector = ?"
    ),
    "compaction": (
        "SELECT through_item_id, summary, summary_tokens, folded_items, compactions "
        "FROM chat_memory WHERE chat_id = ?"
    ),
    "items_after": (
        f"SELECT id, item FROM conversation_items WHERE {_MODEL_READS} AND id > ? ORDER BY id"
    ),
    "items_newest": (
        f"SELECT id, item FROM conversation_items WHERE {_MODEL_READS} ORDER BY id DESC LIMIT ?"
    ),
    # call_id only for a call that an approval asked about (issue 21: ~230 bytes a turn):
    # the one query that reads it (_MODEL_READS) looks for approved calls, and a call's
    # approval is always stored before its items (asked at the pause, items at the end).
    "insert_items": (
        "INSERT INTO conversation_items (chat_id, item, created_at, turn_id, call_id) "
        "VALUES (?, ?, ?, ?, (SELECT call_id FROM approvals WHERE chat_id = ? AND call_id = ? "
        "LIMIT 1))"
    ),
}


# PostgreSQL only, spelled with its own placeholders: "allocate" and "insert_events" as one
# statement. The UPDATE takes the chat row's lock first, as "allocate" does; without the
# chat it returns nothing and nothing is inserted.
_POSTGRES_ONLY = {
    "allocate_insert": (
        "WITH s AS (UPDATE chats SET last_seq = last_seq + $1, updated_at = $2 WHERE id = $3 "
        "RETURNING last_seq), "
        "i AS (INSERT INTO chat_events (chat_id, seq, turn_id, type, payload, ts) "
        "SELECT $3, s.last_seq - $1 + e.n, e.turn_id, e.type, e.payload, e.ts FROM s, "
        "unnest($4::varchar[], $5::varchar[], $6::jsonb[], $7::varchar[]) WITH ORDINALITY "
        "AS e(turn_id, type, payload, ts, n)) "
        "SELECT last_seq FROM s"
    ),
}


@cache
def sqlite_sql(name: str) -> str:
    if name.startswith("update_turn:"):
        columns = name.split(":", 1)[1].split(",")
        assigned = ", ".join(f"{column} = ?" for column in columns)
        return f"UPDATE turns SET {assigned} WHERE id = ? AND chat_id = ?"
    return _SQL[name]


@cache
def postgres_sql(name: str) -> str:
    if name in _POSTGRES_ONLY:
        return _POSTGRES_ONLY[name]
    sql = sqlite_sql(name)
    if name == "lock_chat":
        sql += " FOR UPDATE"
    pieces = sql.split("?")
    return pieces[0] + "".join(f"${i}{piece}" for i, piece in enumerate(pieces[1:], 1))


def sqlite_time(value: datetime) -> str:
    """A time as SQLAlchemy stores ``UTCDateTime`` on SQLite: naive UTC text."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _sqlite_read_time(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def _aware(value: datetime) -> datetime:
    return value


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _as_is(value: Any) -> Any:
    return value


# asyncpg takes aware datetimes as they are, and JSON text for JSONB, which it decodes when
# read (the codecs SQLAlchemy's dialect sets on every connection).
BINDINGS: Mapping[str, Binding] = {
    "sqlite": Binding(sqlite_time, pack, _sqlite_read_time, unpack, pack_ts, pack_time),
    "postgresql": Binding(
        _aware, json_dumps, _utc, _as_is, _as_is, _aware, one_statement_append=True
    ),
}


async def run_plan(db: Database, plan: Callable[[Binding], Plan], *, write: bool = True) -> Any:
    """A plan as one transaction; not ``write``: a read, which takes no write lock on
    SQLite and runs without BEGIN and COMMIT on PostgreSQL (storage/drivers.py)."""
    span = db.plain_sql_span
    if span is None:
        return await _run_plan(db, plan, write, None)
    with span() as statements:  # traced: the transaction's SQL goes on its span
        return await _run_plan(db, plan, write, statements)


async def _run_plan(
    db: Database, plan: Callable[[Binding], Plan], write: bool, record: list[str] | None
) -> Any:
    bind = BINDINGS[db.dialect]
    if db.dialect == "sqlite":
        return await db.sqlite_run(
            lambda connection: run_sqlite(connection, plan(bind), record), write
        )
    return await db.postgres_run(
        lambda connection: run_postgres(connection, plan(bind), record), write
    )


def run_sqlite(connection: sqlite3.Connection, steps: Plan, record: list[str] | None = None) -> Any:
    """Run a plan on a connection in a transaction (on the SQLite write thread); each
    statement's SQL is added to ``record`` when given."""
    result: Any = None
    while True:
        try:
            statement = steps.send(result)
        except StopIteration as done:
            return done.value
        sql = sqlite_sql(statement.name)
        if record is not None:
            record.append(sql)
        if statement.mode == "many":
            connection.executemany(sql, statement.params)
            result = None
        elif statement.mode == "all":
            result = connection.execute(sql, statement.params).fetchall()
        else:
            cursor = connection.execute(sql, statement.params)
            if statement.mode == "count":
                result = cursor.rowcount
            else:
                row = cursor.fetchone()
                result = row if statement.mode == "row" or row is None else row[0]
            cursor.close()


async def run_postgres(connection: Any, steps: Plan, record: list[str] | None = None) -> Any:
    """Run a plan on an asyncpg connection (inside its transaction, for a write); each
    statement's SQL is added to ``record`` when given."""
    result: Any = None
    while True:
        try:
            statement = steps.send(result)
        except StopIteration as done:
            return done.value
        sql = postgres_sql(statement.name)
        if record is not None:
            record.append(sql)
        if statement.mode == "many":
            await connection.executemany(sql, statement.params)
            result = None
        elif statement.mode == "count":
            status: str = await connection.execute(sql, *statement.params)
            result = int(status.rsplit(" ", 1)[-1])
        elif statement.mode == "row":
            result = await connection.fetchrow(sql, *statement.params)
        elif statement.mode == "all":
            result = await connection.fetch(sql, *statement.params)
        else:
            result = await connection.fetchval(sql, *statement.params)
