"""Users and their API tokens.

Tokens are ``sb_`` + 32 random bytes (URL-safe base64). Only their SHA-256 is stored:
tokens are high-entropy, so a plain fast hash is enough and lets a lookup be one indexed
equality query (no per-user salt to try).
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import timedelta

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from storage.engine import Database
from storage.errors import DuplicateName
from storage.models import api_tokens, users, utcnow
from storage.records import UserRecord, user_from_row

LOCAL_USER_ID = "local"
TOKEN_PREFIX = "sb_"
# last_used_at is informational; refreshing it at most this often keeps authentication
# a read (no write lock per request) almost every time.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class UserRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def ensure_local_user(self) -> UserRecord:
        """The single user of local (loopback, no token) mode, created on first use."""
        async with self._db.session() as session:
            row = (
                await session.execute(select(users).where(users.c.id == LOCAL_USER_ID))
            ).one_or_none()
        if row is not None:
            return user_from_row(row)
        async with self._db.session(write=True) as session:
            # Several workers may start at once: let the database pick one winner.
            await session.execute(
                self._db.insert(users)
                .values(id=LOCAL_USER_ID, name=LOCAL_USER_ID, created_at=utcnow())
                .on_conflict_do_nothing()
            )
            row = (await session.execute(select(users).where(users.c.id == LOCAL_USER_ID))).one()
            await session.commit()
        return user_from_row(row)

    async def create_user(self, name: str) -> tuple[UserRecord, str]:
        """Create a user and a first token; the token is returned once and never again."""
        name = name.strip()
        if not name:
            raise ValueError("user name must not be empty")
        if name == LOCAL_USER_ID:
            # Reserved for ensure_local_user(), which may run later on the same database.
            raise DuplicateName(name)
        user = UserRecord(id=uuid.uuid4().hex, name=name)
        token = new_token()
        now = utcnow()
        async with self._db.session(write=True) as session:
            exists = await session.scalar(select(users.c.id).where(users.c.name == name))
            if exists is not None:
                raise DuplicateName(name)
            try:
                await session.execute(insert(users).values(id=user.id, name=name, created_at=now))
                await session.execute(
                    insert(api_tokens).values(
                        user_id=user.id,
                        token_hash=hash_token(token),
                        label="initial",
                        created_at=now,
                    )
                )
                await session.commit()
            except IntegrityError as exc:
                # Lost a race with another create_user of the same name (PostgreSQL).
                raise DuplicateName(name) from exc
        return user, token

    async def create_token(self, user_id: str, label: str) -> str:
        """Another token for an existing user (e.g. one per device)."""
        token = new_token()
        async with self._db.session(write=True) as session:
            if await session.scalar(select(users.c.id).where(users.c.id == user_id)) is None:
                raise ValueError(f"no user with id {user_id!r}")
            await session.execute(
                insert(api_tokens).values(
                    user_id=user_id, token_hash=hash_token(token), label=label, created_at=utcnow()
                )
            )
            await session.commit()
        return token

    async def user_for_token(self, token: str) -> UserRecord | None:
        """The token's user, or None for an unknown token."""
        if not token:
            return None
        digest = hash_token(token)
        async with self._db.session() as session:
            row = (
                await session.execute(
                    select(users.c.id, users.c.name, api_tokens.c.last_used_at)
                    .join(api_tokens, api_tokens.c.user_id == users.c.id)
                    .where(api_tokens.c.token_hash == digest)
                )
            ).one_or_none()
        if row is None:
            return None
        now = utcnow()
        if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
            async with self._db.session(write=True) as session:
                await session.execute(
                    update(api_tokens)
                    .where(api_tokens.c.token_hash == digest)
                    .values(last_used_at=now)
                )
                await session.commit()
        return UserRecord(id=row.id, name=row.name)

    async def get_by_name(self, name: str) -> UserRecord | None:
        async with self._db.session() as session:
            row = (await session.execute(select(users).where(users.c.name == name))).one_or_none()
        return user_from_row(row) if row is not None else None

    async def list_users(self) -> list[UserRecord]:
        """Every user, by name (for the admin CLI)."""
        async with self._db.session() as session:
            rows = (await session.execute(select(users).order_by(users.c.name))).all()
        return [user_from_row(row) for row in rows]
