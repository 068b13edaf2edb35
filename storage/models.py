"""SQLAlchemy table definitions: the one description of the schema.

Alembic migrations (``alembic/versions``) create and change the real schema; a test checks
that a freshly migrated database and these models agree. Change both together.

Repositories use the tables through Core statements (``Chat.__table__`` …): explicit SQL,
no identity-map surprises, and the same statements on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from storage.packed_json import PackedJSON
from storage.packed_time import PackedTimestamp, pack_time, unpack_time
from storage.sqlite_packed import PackedOnSqlite

# Deterministic constraint names, so migrations can refer to them on both engines.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# JSONB on PostgreSQL (indexable, compact), plain JSON text on SQLite. none_as_null: a
# Python None is SQL NULL (not the JSON text 'null'), so "IS NULL" means what it says.
JSONType = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
BigIntPK = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every engine.

    PostgreSQL stores ``timestamptz``; SQLite has no time zones, so values are stored as
    naive UTC and given ``tzinfo=UTC`` again when read. Naive input is refused: it is
    always a bug (local time mistaken for UTC).
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}; pass a timezone-aware datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class PackedDateTime(PackedOnSqlite, UTCDateTime):
    """``UTCDateTime``; on SQLite stored as ``pack_time``'s 9 bytes instead of 26 characters
    of text (storage/packed_time.py; rows written before stay text). Only for a column no
    SQL compares or orders."""

    cache_ok = True
    pack = staticmethod(pack_time)
    unpack = staticmethod(unpack_time)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    # sha256 hex of the token: a database leak does not leak usable tokens.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(200), server_default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class UserIdentity(Base):
    """Who a user is at an identity provider: ``subject`` (the JWT's ``sub``, or the proxy's
    user header) scoped by ``issuer`` (the provider's URL, or ``header:`` for a proxy), as
    two providers may hand out the same ``sub``."""

    __tablename__ = "user_identities"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    issuer: Mapped[str] = mapped_column(String(500))
    subject: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (UniqueConstraint("issuer", "subject"),)


class Chat(Base):
    __tablename__ = "chats"

    # Chosen by the client (it opens /ws/chats/{id}), hence a bounded string.
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), ForeignKey("users.id", ondelete="CASCADE"))
    title: Mapped[str | None] = mapped_column(Text, nullable=True)
    preview: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Highest seq handed out; bumped with UPDATE … RETURNING, which serialises writers.
    last_seq: Mapped[int] = mapped_column(Integer, server_default=text("0"))

    __table_args__ = (
        # Serves "my chats, newest first" and its keyset pagination: a backward scan of
        # (user_id, updated_at, id) is exactly ORDER BY updated_at DESC, id DESC, and plain
        # columns (unlike DESC expressions) let Alembic compare the index on SQLite too.
        Index("ix_chats_user_updated", "user_id", "updated_at", "id"),
    )


class Turn(Base):
    __tablename__ = "turns"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    chat_id: Mapped[str] = mapped_column(String(64), ForeignKey("chats.id", ondelete="CASCADE"))
    client_message_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    prompt: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    final_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    partial_text: Mapped[str] = mapped_column(Text, server_default="")
    current_agent: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # Deflated on SQLite (storage/packed_json.py): no query reads it in SQL.
    usage: Mapped[dict[str, Any] | None] = mapped_column(PackedJSON(), nullable=True)
    # Nine bytes each on SQLite (storage/packed_time.py): no SQL compares them.
    created_at: Mapped[datetime] = mapped_column(PackedDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(PackedDateTime(), nullable=True)
    user_prompt_seq: Mapped[int] = mapped_column(Integer)
    # The instance running the turn and its lease (renewed while it runs): another instance
    # may close the turn as orphaned only after the lease expired. Both are NULL while the
    # turn waits for approvals (no process runs it then) and once it has ended (cleared
    # with its final status; migration 0012 cleared the ended turns stored before).
    runner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # A stop asked on any instance; the runner sees it when it renews its lease.
    cancel_requested: Mapped[bool] = mapped_column(Boolean, server_default=false())
    # Lineage (migration 0010, docs/protocol.md "Regenerate, edit and continue"): the turn
    # that replaced this one (a regenerate or an edit; the turn stays in the log), and
    # the stopped turn this one continues.
    superseded_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    continues: Mapped[str | None] = mapped_column(String(64), nullable=True)

    __table_args__ = (
        # A retried prompt (same client_message_id) must not start a second turn.
        UniqueConstraint("chat_id", "client_message_id"),
        CheckConstraint("status IN ('running', 'completed', 'cancelled', 'failed')", name="status"),
        Index("ix_turns_chat_seq", "chat_id", "user_prompt_seq"),
        # At most one running turn per chat, enforced by the database as a last line of
        # defence behind start_turn's row lock; also serves running_turn() and the
        # orphan sweep of expired_turns().
        Index(
            "uq_turns_one_running",
            "chat_id",
            unique=True,
            sqlite_where=text("status = 'running'"),
            postgresql_where=text("status = 'running'"),
        ),
    )


class ChatEvent(Base):
    __tablename__ = "chat_events"

    chat_id: Mapped[str] = mapped_column(String(64), ForeignKey("chats.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    # No foreign key: events are only ever deleted with their chat, and an FK would need
    # an extra index on this column for PostgreSQL's cascade checks.
    turn_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    type: Mapped[str] = mapped_column(String(64))
    # Deflated on SQLite when large (storage/packed_json.py): no query reads it in SQL.
    payload: Mapped[dict[str, Any]] = mapped_column(PackedJSON())
    # Seven bytes on SQLite when it is now_ts()'s spelling (storage/packed_time.py).
    ts: Mapped[str] = mapped_column(PackedTimestamp())

    __table_args__ = (PrimaryKeyConstraint("chat_id", "seq"),)


def item_call_id(item: Any) -> str | None:
    """What ``conversation_items.call_id`` holds for ``item``."""
    call_id = item.get("call_id") if isinstance(item, dict) else None
    return call_id if isinstance(call_id, str) else None


def _item_call_id(context: Any) -> str | None:
    # A context-sensitive default: SQLAlchemy calls it once per inserted row.
    return item_call_id(context.get_current_parameters().get("item"))


class ConversationItem(Base):
    __tablename__ = "conversation_items"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    chat_id: Mapped[str] = mapped_column(String(64), ForeignKey("chats.id", ondelete="CASCADE"))
    # Deflated on SQLite when large (storage/packed_json.py), so SQL reads ``call_id``
    # below, never this column's JSON.
    item: Mapped[dict[str, Any]] = mapped_column(PackedJSON())
    # Nine bytes on SQLite (storage/packed_time.py): only the user's export reads it.
    created_at: Mapped[datetime] = mapped_column(PackedDateTime())
    # The turn that wrote the item (NULL for rows older than migration 0010, and for
    # writers outside a turn): a superseded turn's items are left out of the history.
    turn_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The item's ``call_id`` (migration 0011; NULL for an item without one): the calls
    # the person approved stay in the history of a superseded turn (storage/session.py).
    # Filled from ``item`` by every SQLAlchemy insert; a raw-driver insert must set it
    # at least for every call an approval asked about (a turn's end sets only those,
    # storage/plain_sql.py: the history's query looks for approved calls only).
    call_id: Mapped[str | None] = mapped_column(String(200), nullable=True, default=_item_call_id)

    __table_args__ = (Index("ix_conversation_items_chat", "chat_id", "id"),)


class ChatMemory(Base):
    """A chat's compacted history (storage/memory.py, docs/memory.md): the summary of its
    oldest conversation items, up to and including ``through_item_id``. The model reads
    this summary and the items after it, so a turn never reads the whole chat, and the
    summary is made once per compaction, not on every turn."""

    __tablename__ = "chat_memory"

    chat_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True
    )
    # No foreign key: the items stay (the transcript and the Open Responses replay read
    # them); this is only where the summary ends.
    through_item_id: Mapped[int] = mapped_column(BigInteger)
    summary: Mapped[str] = mapped_column(Text)
    summary_tokens: Mapped[int] = mapped_column(Integer)
    folded_items: Mapped[int] = mapped_column(Integer)  # items summarised, all compactions
    compactions: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ConnectedAccountRow(Base):
    __tablename__ = "connected_accounts"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(String(64), ForeignKey("users.id", ondelete="CASCADE"))
    connector: Mapped[str] = mapped_column(String(64))
    # Fernet token of the credentials JSON; never stored in clear.
    credentials: Mapped[bytes] = mapped_column(LargeBinary)
    meta: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (UniqueConstraint("user_id", "connector"),)


class RapSubscription(Base):
    """A RAP tool call that started a subscription (docs/rap.md: ``subscription: true``),
    kept in the chat's metadata so the agent or the user can later cancel it."""

    __tablename__ = "rap_subscriptions"

    chat_id: Mapped[str] = mapped_column(String(64), ForeignKey("chats.id", ondelete="CASCADE"))
    call_id: Mapped[str] = mapped_column(String(200))  # the invocation's ``id``
    connector: Mapped[str] = mapped_column(String(64))  # the SWITCHBOARD_RAP_TOOLS entry
    operation: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (PrimaryKeyConstraint("chat_id", "call_id"),)


class OpenResponse(Base):
    """An Open Responses ``Response`` (``POST /v1/responses``): the turn that produced it.

    ``last_item_id`` is the newest ``conversation_items.id`` of the chat once the turn
    ended, so a later ``previous_response_id`` replays exactly the conversation up to
    this response, even when the chat went on without it.
    """

    __tablename__ = "open_responses"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    chat_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("chats.id", ondelete="CASCADE"), index=True
    )
    turn_id: Mapped[str] = mapped_column(String(64))
    previous_response_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    status: Mapped[str] = mapped_column(String(16))
    last_item_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    body: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint("status IN ('completed', 'incomplete', 'failed')", name="status"),
    )


APPROVAL_STATUSES = ("pending", "approved", "rejected", "expired", "superseded")


class Approval(Base):
    """A tool call waiting for (or decided by) the person: docs/protocol.md §3a.

    The row is the record of the decision too: who (``decided_by``, a user id, or None
    when the server decided: expiry, a new prompt), when, through what (``decided_via``:
    ``socket:<id>``, ``rest``, ``responses``, ``expiry``, ``prompt``, ``cancel``) and why.
    The first decision wins: deciding is ``UPDATE … WHERE status = 'pending'``.
    """

    __tablename__ = "approvals"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    chat_id: Mapped[str] = mapped_column(String(64), ForeignKey("chats.id", ondelete="CASCADE"))
    turn_id: Mapped[str] = mapped_column(String(64))
    call_id: Mapped[str] = mapped_column(String(200))
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text)
    arguments: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # What the call will do, resolved before asking (``connectors.effects``); None when
    # the arguments say it all.
    effect: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    current_agent: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    decided_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    decided_via: Mapped[str | None] = mapped_column(String(100), nullable=True)

    __table_args__ = (
        CheckConstraint(
            "status IN ('pending', 'approved', 'rejected', 'expired', 'superseded')", name="status"
        ),
        Index("ix_approvals_chat_turn", "chat_id", "turn_id"),
        # The pending ones: GET /api/approvals and the expiry sweep read only these.
        Index(
            "ix_approvals_pending",
            "expires_at",
            sqlite_where=text("status = 'pending'"),
            postgresql_where=text("status = 'pending'"),
        ),
    )


class PausedTurn(Base):
    """A turn waiting for approvals: the serialised Agents SDK ``RunState`` and the turn's
    unsaved conversation items. A paused turn is this row, not a task: it holds no memory,
    socket or lease. Deleting the row (in the transaction that takes the last decision)
    is what lets exactly one instance resume it."""

    __tablename__ = "paused_turns"

    turn_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("turns.id", ondelete="CASCADE"), primary_key=True
    )
    chat_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("chats.id", ondelete="CASCADE"), index=True
    )
    state: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ChatSearchEntry(Base):
    """One searchable text of a chat: its title, a prompt, or a turn's final answer
    (never a tool's output). Written only by database triggers (migration 0006) on
    ``chats.title``, ``turns.prompt`` and ``turns.final_text``, so every writer keeps it in
    step without a round trip of its own. The full-text index over ``body`` is engine
    specific and lives beside this table (storage/search.py): an FTS5 table on SQLite, a
    GIN index on ``to_tsvector('english', body)`` on PostgreSQL."""

    __tablename__ = "chat_search"

    # INTEGER PRIMARY KEY on SQLite: a stable rowid, which the FTS5 index refers to.
    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    chat_id: Mapped[str] = mapped_column(String(64), ForeignKey("chats.id", ondelete="CASCADE"))
    turn_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    kind: Mapped[str] = mapped_column(String(16))
    body: Mapped[str] = mapped_column(Text)

    __table_args__ = (
        CheckConstraint("kind IN ('title', 'prompt', 'answer')", name="kind"),
        # The triggers replace a chat's title or a turn's answer through it; the chat's
        # cascade delete uses it too.
        Index("ix_chat_search_chat_turn", "chat_id", "turn_id"),
    )


FEEDBACK_RATINGS = ("up", "down")


class Feedback(Base):
    """A person's rating of one answer (a turn): thumbs up or down, with an optional
    comment, stored as plain text. One current rating per (turn, user): rating again
    replaces it, clearing deletes the row."""

    __tablename__ = "feedback"

    turn_id: Mapped[str] = mapped_column(String(64), ForeignKey("turns.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(String(64), ForeignKey("users.id", ondelete="CASCADE"))
    # Redundant with the turn's, so a chat's ratings are read (and exported, deleted with
    # the chat) without a join.
    chat_id: Mapped[str] = mapped_column(String(64), ForeignKey("chats.id", ondelete="CASCADE"))
    rating: Mapped[str] = mapped_column(String(8))
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        PrimaryKeyConstraint("turn_id", "user_id"),
        CheckConstraint("rating IN ('up', 'down')", name="rating"),
        Index("ix_feedback_chat", "chat_id"),
    )


class Attachment(Base):
    """A file uploaded into a chat (storage.attachments): its metadata, as sniffed from
    its bytes; the bytes are in the blob store under ``blob_key``. ``turn_id`` is the
    first turn that sent it (NULL: uploaded, never sent)."""

    __tablename__ = "attachments"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    chat_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("chats.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(100))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    width: Mapped[int | None] = mapped_column(Integer, nullable=True)
    height: Mapped[int | None] = mapped_column(Integer, nullable=True)
    blob_key: Mapped[str] = mapped_column(String(200))
    turn_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


# Core tables for the repositories' statements (cast: the ORM types them as FromClause).
users = cast(Table, User.__table__)
api_tokens = cast(Table, ApiToken.__table__)
user_identities = cast(Table, UserIdentity.__table__)
chats = cast(Table, Chat.__table__)
turns = cast(Table, Turn.__table__)
chat_events = cast(Table, ChatEvent.__table__)
conversation_items = cast(Table, ConversationItem.__table__)
chat_memory = cast(Table, ChatMemory.__table__)
connected_accounts = cast(Table, ConnectedAccountRow.__table__)
rap_subscriptions = cast(Table, RapSubscription.__table__)
open_responses = cast(Table, OpenResponse.__table__)
approvals = cast(Table, Approval.__table__)
paused_turns = cast(Table, PausedTurn.__table__)
chat_search = cast(Table, ChatSearchEntry.__table__)
feedback = cast(Table, Feedback.__table__)
attachments = cast(Table, Attachment.__table__)
