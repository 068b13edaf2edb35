"""chat search: the searchable texts of every chat, with a full-text index per engine

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24

``chat_search`` holds a chat's title, its prompts and its turns' final answers (never a
tool's output). Triggers on ``chats`` and ``turns`` keep it in step with every writer,
inside the writer's own transaction: no extra round trip on the path from a prompt to
the model. The full-text index is the engine's own: on SQLite an external-content FTS5
table (``chat_search_fts``, porter stemming) kept in step by triggers on ``chat_search``;
on PostgreSQL a GIN index on ``to_tsvector('english', body)``. Existing chats are
indexed by the upgrade.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIGINT_PK = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

# The backfill: what the triggers below would have written for the rows already there.
BACKFILL = (
    "INSERT INTO chat_search (chat_id, turn_id, kind, body) "
    "SELECT id, NULL, 'title', title FROM chats WHERE coalesce(title, '') <> ''",
    "INSERT INTO chat_search (chat_id, turn_id, kind, body) "
    "SELECT chat_id, id, 'prompt', prompt FROM turns",
    "INSERT INTO chat_search (chat_id, turn_id, kind, body) "
    "SELECT chat_id, id, 'answer', final_text FROM turns WHERE coalesce(final_text, '') <> ''",
)

SQLITE_UP = (
    "CREATE VIRTUAL TABLE chat_search_fts USING fts5("
    "body, content='chat_search', content_rowid='id', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    # chat_search rows are only ever inserted and deleted (never updated).
    "CREATE TRIGGER chat_search_fts_insert AFTER INSERT ON chat_search BEGIN "
    "INSERT INTO chat_search_fts (rowid, body) VALUES (new.id, new.body); END",
    "CREATE TRIGGER chat_search_fts_delete AFTER DELETE ON chat_search BEGIN "
    "INSERT INTO chat_search_fts (chat_search_fts, rowid, body) "
    "VALUES ('delete', old.id, old.body); END",
    "CREATE TRIGGER turns_search_insert AFTER INSERT ON turns BEGIN "
    "INSERT INTO chat_search (chat_id, turn_id, kind, body) "
    "VALUES (new.chat_id, new.id, 'prompt', new.prompt); "
    "INSERT INTO chat_search (chat_id, turn_id, kind, body) "
    "SELECT new.chat_id, new.id, 'answer', new.final_text "
    "WHERE coalesce(new.final_text, '') <> ''; END",
    # OF final_text: the many updates of a streaming turn (partial_text, leases) do not
    # fire it; only the turn's end does.
    "CREATE TRIGGER turns_search_answer AFTER UPDATE OF final_text ON turns "
    "WHEN new.final_text IS NOT old.final_text BEGIN "
    "DELETE FROM chat_search WHERE chat_id = new.chat_id AND turn_id = new.id "
    "AND kind = 'answer'; "
    "INSERT INTO chat_search (chat_id, turn_id, kind, body) "
    "SELECT new.chat_id, new.id, 'answer', new.final_text "
    "WHERE coalesce(new.final_text, '') <> ''; END",
    "CREATE TRIGGER chats_search_title_insert AFTER INSERT ON chats "
    "WHEN coalesce(new.title, '') <> '' BEGIN "
    "INSERT INTO chat_search (chat_id, turn_id, kind, body) "
    "VALUES (new.id, NULL, 'title', new.title); END",
    "CREATE TRIGGER chats_search_title AFTER UPDATE OF title ON chats "
    "WHEN new.title IS NOT old.title BEGIN "
    "DELETE FROM chat_search WHERE chat_id = new.id AND turn_id IS NULL AND kind = 'title'; "
    "INSERT INTO chat_search (chat_id, turn_id, kind, body) "
    "SELECT new.id, NULL, 'title', new.title WHERE coalesce(new.title, '') <> ''; END",
)
SQLITE_DOWN = (
    "DROP TRIGGER IF EXISTS chats_search_title",
    "DROP TRIGGER IF EXISTS chats_search_title_insert",
    "DROP TRIGGER IF EXISTS turns_search_answer",
    "DROP TRIGGER IF EXISTS turns_search_insert",
    "DROP TRIGGER IF EXISTS chat_search_fts_delete",
    "DROP TRIGGER IF EXISTS chat_search_fts_insert",
    "DROP TABLE IF EXISTS chat_search_fts",
)

# SET search_path FROM CURRENT: the functions find chat_search in the schema they were
# created in (?schema= deployments), whatever the calling session's path.
POSTGRES_UP = (
    "CREATE INDEX ix_chat_search_body ON chat_search "
    "USING gin (to_tsvector('english'::regconfig, body))",
    """CREATE FUNCTION chat_search_from_turn() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO chat_search (chat_id, turn_id, kind, body)
            VALUES (NEW.chat_id, NEW.id, 'prompt', NEW.prompt);
        ELSE
            DELETE FROM chat_search
            WHERE chat_id = NEW.chat_id AND turn_id = NEW.id AND kind = 'answer';
        END IF;
        IF coalesce(NEW.final_text, '') <> '' THEN
            INSERT INTO chat_search (chat_id, turn_id, kind, body)
            VALUES (NEW.chat_id, NEW.id, 'answer', NEW.final_text);
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION chat_search_from_chat() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
        IF TG_OP = 'UPDATE' THEN
            DELETE FROM chat_search
            WHERE chat_id = NEW.id AND turn_id IS NULL AND kind = 'title';
        END IF;
        IF coalesce(NEW.title, '') <> '' THEN
            INSERT INTO chat_search (chat_id, turn_id, kind, body)
            VALUES (NEW.id, NULL, 'title', NEW.title);
        END IF;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER turns_search_insert AFTER INSERT ON turns "
    "FOR EACH ROW EXECUTE FUNCTION chat_search_from_turn()",
    # OF final_text: the many updates of a streaming turn (partial_text, leases) do not
    # fire it; only the turn's end does.
    "CREATE TRIGGER turns_search_answer AFTER UPDATE OF final_text ON turns FOR EACH ROW "
    "WHEN (OLD.final_text IS DISTINCT FROM NEW.final_text) "
    "EXECUTE FUNCTION chat_search_from_turn()",
    "CREATE TRIGGER chats_search_title_insert AFTER INSERT ON chats FOR EACH ROW "
    "WHEN (coalesce(NEW.title, '') <> '') EXECUTE FUNCTION chat_search_from_chat()",
    "CREATE TRIGGER chats_search_title AFTER UPDATE OF title ON chats FOR EACH ROW "
    "WHEN (OLD.title IS DISTINCT FROM NEW.title) EXECUTE FUNCTION chat_search_from_chat()",
)
POSTGRES_DOWN = (
    "DROP TRIGGER IF EXISTS chats_search_title ON chats",
    "DROP TRIGGER IF EXISTS chats_search_title_insert ON chats",
    "DROP TRIGGER IF EXISTS turns_search_answer ON turns",
    "DROP TRIGGER IF EXISTS turns_search_insert ON turns",
    "DROP FUNCTION IF EXISTS chat_search_from_chat()",
    "DROP FUNCTION IF EXISTS chat_search_from_turn()",
    "DROP INDEX IF EXISTS ix_chat_search_body",
)


def _run(statements: Sequence[str]) -> None:
    for statement in statements:
        op.execute(sa.text(statement))


def upgrade() -> None:
    op.create_table(
        "chat_search",
        sa.Column("id", BIGINT_PK, autoincrement=True, nullable=False),
        sa.Column("chat_id", sa.String(64), nullable=False),
        sa.Column("turn_id", sa.String(64), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.CheckConstraint("kind IN ('title', 'prompt', 'answer')", name="ck_chat_search_kind"),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name="fk_chat_search_chat_id_chats", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_chat_search"),
    )
    op.create_index("ix_chat_search_chat_turn", "chat_search", ["chat_id", "turn_id"])
    sqlite = op.get_context().dialect.name == "sqlite"
    _run(SQLITE_UP if sqlite else POSTGRES_UP)
    _run(BACKFILL)


def downgrade() -> None:
    sqlite = op.get_context().dialect.name == "sqlite"
    _run(SQLITE_DOWN if sqlite else POSTGRES_DOWN)
    op.drop_index("ix_chat_search_chat_turn", table_name="chat_search")
    op.drop_table("chat_search")
