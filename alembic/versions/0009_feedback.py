"""feedback: a person's thumbs up or down, with an optional comment, on an answer

Revision ID: 0009
Revises: 0006
Create Date: 2026-11-24

One row per (turn, user): rating again replaces it, clearing deletes it. The row goes
with its turn, its chat or its user.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "feedback",
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("chat_id", sa.String(64), nullable=False),
        sa.Column("rating", sa.String(8), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("rating IN ('up', 'down')", name="ck_feedback_rating"),
        sa.ForeignKeyConstraint(
            ["turn_id"], ["turns.id"], name="fk_feedback_turn_id_turns", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_feedback_user_id_users", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name="fk_feedback_chat_id_chats", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("turn_id", "user_id", name="pk_feedback"),
    )
    op.create_index("ix_feedback_chat", "feedback", ["chat_id"])


def downgrade() -> None:
    op.drop_index("ix_feedback_chat", table_name="feedback")
    op.drop_table("feedback")
