"""RAP subscriptions and Open Responses ids

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

``rap_subscriptions``: RAP tool calls that started a subscription, per chat.
``open_responses``: each ``POST /v1/responses`` → its chat, turn and final Response object,
so ``previous_response_id`` continues the right conversation. Explicit types, as in 0001.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def TIMESTAMP() -> sa.DateTime:  # noqa: N802 - reads like a type in the tables below
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "rap_subscriptions",
        sa.Column("chat_id", sa.String(64), nullable=False),
        sa.Column("call_id", sa.String(200), nullable=False),
        sa.Column("connector", sa.String(64), nullable=False),
        sa.Column("operation", sa.String(200), nullable=False),
        sa.Column("created_at", TIMESTAMP(), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"],
            ["chats.id"],
            name="fk_rap_subscriptions_chat_id_chats",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("chat_id", "call_id", name="pk_rap_subscriptions"),
    )

    op.create_table(
        "open_responses",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("chat_id", sa.String(64), nullable=False),
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("previous_response_id", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("last_item_id", sa.BigInteger(), nullable=True),
        sa.Column("body", JSON, nullable=True),
        sa.Column("created_at", TIMESTAMP(), nullable=False),
        sa.CheckConstraint(
            "status IN ('completed', 'incomplete', 'failed')",
            name="ck_open_responses_status",
        ),
        sa.ForeignKeyConstraint(
            ["chat_id"],
            ["chats.id"],
            name="fk_open_responses_chat_id_chats",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_open_responses"),
    )
    op.create_index("ix_open_responses_chat_id", "open_responses", ["chat_id"])


def downgrade() -> None:
    op.drop_index("ix_open_responses_chat_id", table_name="open_responses")
    op.drop_table("open_responses")
    op.drop_table("rap_subscriptions")
