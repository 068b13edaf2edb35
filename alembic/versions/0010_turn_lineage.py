"""turn lineage: regenerated and edited turns are superseded, continuations name their turn

Revision ID: 0010
Revises: 0006
Create Date: 2026-11-24

``turns.superseded_by`` names the turn that replaced a turn (a ``regenerate`` or an
``edit``, docs/protocol.md "Regenerate, edit and continue"); the superseded turn stays in
the log. ``turns.continues`` names the stopped turn a ``continue`` turn goes on from.
``conversation_items.turn_id`` says which turn wrote an item, so a superseded turn's items
can be left out of the model's history; older rows keep NULL and are always read.

Plain ADD/DROP COLUMN, not a batch (table copy) on SQLite: copying ``turns`` would drop
the search triggers migration 0006 put on it.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("turns", sa.Column("superseded_by", sa.String(64), nullable=True))
    op.add_column("turns", sa.Column("continues", sa.String(64), nullable=True))
    op.add_column("conversation_items", sa.Column("turn_id", sa.String(64), nullable=True))


def downgrade() -> None:
    op.drop_column("conversation_items", "turn_id")
    op.drop_column("turns", "continues")
    op.drop_column("turns", "superseded_by")
