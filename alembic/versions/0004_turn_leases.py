"""turn leases: who runs a turn, until when, and whether someone asked it to stop

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24

A running turn names the instance that runs it (``runner``) and holds a lease
(``lease_until``) that the runner renews while the turn is alive. Another instance may
close the turn as orphaned only once that lease has expired: the database, not a guess
about being alone, decides. ``cancel_requested`` carries a stop to the runner from any
instance, with or without Redis. Turns already running when this migration runs have no
live runner any more (the schema changed under them): they get an expired lease.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("runner", sa.String(64), nullable=True))
        batch.add_column(sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    # Paused turns (a paused_turns row) have no runner; every other running turn gets an
    # expired lease, so the first sweep closes it.
    op.execute(
        sa.text(
            "UPDATE turns SET runner = 'before-0004', lease_until = created_at "
            "WHERE status = 'running' AND NOT EXISTS "
            "(SELECT 1 FROM paused_turns WHERE paused_turns.turn_id = turns.id)"
        )
    )


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("cancel_requested")
        batch.drop_column("lease_until")
        batch.drop_column("runner")
