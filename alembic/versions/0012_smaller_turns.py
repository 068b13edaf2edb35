"""smaller turns: an ended turn drops its lease; the SQLite search index keeps no positions

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24

Issue 21 (bytes stored per turn), no table's columns change:

- A turn that has ended no longer keeps its ``runner`` and ``lease_until`` (they fence and
  sweep running turns only); the ended turns stored before are cleared here.
- On SQLite the full-text index ``chat_search_fts`` is rebuilt with ``detail=none`` and
  ``columnsize=0``: it records which texts hold a word, not where nor how long each text
  is (a third of the index). Search only asks which texts hold every word as a prefix
  (``storage/search.py``), never a phrase or a ranking, so it finds exactly what it
  found. PostgreSQL's GIN index is unchanged.

From this revision on, SQLite also stores some values in fewer bytes, written by the
code, not by this upgrade (rows written before stay as they are and read as they did):
an event's ``ts`` and the times no SQL compares (``conversation_items.created_at``,
``turns.created_at``, ``turns.finished_at``) as short BLOBs (``storage/packed_time.py``),
and ``turns.usage`` deflated like the events' payloads (``storage/packed_json.py``).
``conversation_items.call_id`` is written by a turn's end only for a call an approval
asked about, the only calls the history's query looks for.

Downgrade writes those values back as the text 0011's code reads and rebuilds the index
with positions; the cleared leases stay cleared (0011's code reads them only on running
turns), and so do the call ids (0011 reads them only for approved calls).
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# 0006's table with its options; only the index's detail differs. The triggers of 0006
# name the table, not its options, so they keep feeding the new one.
_FTS = (
    "CREATE VIRTUAL TABLE chat_search_fts USING fts5("
    "body, content='chat_search', content_rowid='id', "
    "tokenize='porter unicode61 remove_diacritics 2'{detail})"
)


def _rebuild_fts(detail: str) -> None:
    op.execute(sa.text("DROP TABLE chat_search_fts"))
    op.execute(sa.text(_FTS.format(detail=detail)))
    # Indexes every row of the content table, chat_search, as it is now.
    op.execute(sa.text("INSERT INTO chat_search_fts (chat_search_fts) VALUES ('rebuild')"))


def upgrade() -> None:
    op.execute(
        sa.text(
            "UPDATE turns SET runner = NULL, lease_until = NULL "
            "WHERE status <> 'running' AND (runner IS NOT NULL OR lease_until IS NOT NULL)"
        )
    )
    if op.get_context().dialect.name == "sqlite":
        _rebuild_fts(", detail=none, columnsize=0")


def _unpack_sqlite_values() -> None:
    """Every value stored in a form 0011's code cannot read, back as the text it reads."""
    from storage.engine import json_dumps
    from storage.packed_json import unpack
    from storage.packed_time import unpack_time, unpack_ts
    from storage.plain_sql import sqlite_time

    def time(value: bytes) -> str:
        return sqlite_time(unpack_time(value))

    def usage(value: bytes) -> str:
        return json_dumps(unpack(value))

    bind = op.get_bind()
    for table, key, column, text in (
        ("chat_events", "rowid", "ts", unpack_ts),
        ("conversation_items", "id", "created_at", time),
        ("turns", "id", "created_at", time),
        ("turns", "id", "finished_at", time),
        ("turns", "id", "usage", usage),
    ):
        rows = bind.execute(
            sa.text(f"SELECT {key}, {column} FROM {table} WHERE typeof({column}) = 'blob'")
        ).all()
        if rows:
            bind.execute(
                sa.text(f"UPDATE {table} SET {column} = :value WHERE {key} = :key"),
                [{"key": row[0], "value": text(row[1])} for row in rows],
            )


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        _unpack_sqlite_values()
        _rebuild_fts("")
