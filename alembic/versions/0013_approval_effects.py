"""approval effects: what an action will do, resolved before the person is asked

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06

``approvals.effect``: the effect a connector resolved for the call before asking (a
reply's recipients, subject and thread; docs/protocol.md, "What an approval will do"),
shown on the approval card and executed exactly after approval. Null for a call whose
arguments say it all, and for the approvals stored before this revision.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("effect", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("effect")
