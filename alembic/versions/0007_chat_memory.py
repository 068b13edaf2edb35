"""chat memory: the stored compaction of a chat's oldest conversation items

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24

A long chat's model input is its stored summary plus the conversation items after it
(storage/memory.py, docs/memory.md), so a turn reads a bounded history and the summary is
made once per compaction rather than on every turn. One row per chat, gone with the chat.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chat_memory",
        sa.Column("chat_id", sa.String(64), nullable=False),
        sa.Column("through_item_id", sa.BigInteger(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("summary_tokens", sa.Integer(), nullable=False),
        sa.Column("folded_items", sa.Integer(), nullable=False),
        sa.Column("compactions", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name="fk_chat_memory_chat_id_chats", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("chat_id", name="pk_chat_memory"),
    )


def downgrade() -> None:
    op.drop_table("chat_memory")
