"""approvals and paused turns

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24

``approvals``: each tool call that waits for the person's decision, and the decision's
record (who, when, through what, why). ``paused_turns``: the serialised run of a turn
waiting for approvals. Explicit types, as in 0001.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def TIMESTAMP() -> sa.DateTime:  # noqa: N802 - reads like a type in the tables below
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("chat_id", sa.String(64), nullable=False),
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("call_id", sa.String(200), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("arguments", JSON, nullable=False),
        sa.Column("current_agent", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", TIMESTAMP(), nullable=False),
        sa.Column("expires_at", TIMESTAMP(), nullable=False),
        sa.Column("decided_at", TIMESTAMP(), nullable=True),
        sa.Column("decided_by", sa.String(64), nullable=True),
        sa.Column("decided_via", sa.String(100), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'approved', 'rejected', 'expired', 'superseded')",
            name="ck_approvals_status",
        ),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name="fk_approvals_chat_id_chats", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_approvals"),
    )
    op.create_index("ix_approvals_chat_turn", "approvals", ["chat_id", "turn_id"])
    op.create_index(
        "ix_approvals_pending",
        "approvals",
        ["expires_at"],
        sqlite_where=sa.text("status = 'pending'"),
        postgresql_where=sa.text("status = 'pending'"),
    )

    op.create_table(
        "paused_turns",
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("chat_id", sa.String(64), nullable=False),
        sa.Column("state", JSON, nullable=False),
        sa.Column("created_at", TIMESTAMP(), nullable=False),
        sa.ForeignKeyConstraint(
            ["turn_id"], ["turns.id"], name="fk_paused_turns_turn_id_turns", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name="fk_paused_turns_chat_id_chats", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("turn_id", name="pk_paused_turns"),
    )
    op.create_index("ix_paused_turns_chat_id", "paused_turns", ["chat_id"])


def downgrade() -> None:
    op.drop_index("ix_paused_turns_chat_id", table_name="paused_turns")
    op.drop_table("paused_turns")
    op.drop_index("ix_approvals_pending", table_name="approvals")
    op.drop_index("ix_approvals_chat_turn", table_name="approvals")
    op.drop_table("approvals")
