"""packed JSON: large event payloads and conversation items deflated on SQLite

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24

From this revision on, ``chat_events.payload`` and ``conversation_items.item`` may hold,
on SQLite, a BLOB made by ``storage.packed_json.pack`` (the JSON deflated) instead of
JSON text (issue 21: bytes stored per turn). Rows written before stay text and read as
they did; PostgreSQL keeps JSONB, which it compresses itself.

``json_extract`` cannot read a packed item, so the one query that read an item's JSON in
SQL (the approved calls kept from a superseded turn, ``storage/session.py``) now reads
the new column ``conversation_items.call_id``, filled here from the existing rows.

Downgrade unpacks every packed value back to JSON text, which 0010's code reads.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMN, not a batch (table copy) on SQLite, as in 0010.
    op.add_column("conversation_items", sa.Column("call_id", sa.String(200), nullable=True))
    # Every row is JSON text here: only code at this revision packs.
    if op.get_bind().dialect.name == "postgresql":
        op.execute("UPDATE conversation_items SET call_id = item ->> 'call_id'")
    else:
        op.execute(
            "UPDATE conversation_items SET call_id = json_extract(item, '$.call_id') "
            "WHERE json_type(item, '$.call_id') = 'text'"
        )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        from storage.engine import json_dumps
        from storage.packed_json import unpack

        for table, key, column in (
            ("chat_events", "rowid", "payload"),
            ("conversation_items", "id", "item"),
        ):
            rows = bind.execute(
                sa.text(f"SELECT {key}, {column} FROM {table} WHERE typeof({column}) = 'blob'")
            ).all()
            if rows:
                bind.execute(
                    sa.text(f"UPDATE {table} SET {column} = :value WHERE {key} = :key"),
                    [{"key": row[0], "value": json_dumps(unpack(row[1]))} for row in rows],
                )
    op.drop_column("conversation_items", "call_id")
