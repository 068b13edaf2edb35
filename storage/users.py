"""Users, their API tokens and their identities at an identity provider.

Tokens are ``sb_`` + 32 random bytes (URL-safe base64). Only their SHA-256 is stored:
tokens are high-entropy, so a plain fast hash is enough and lets a lookup be one indexed
equality query (no per-user salt to try).
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from storage.engine import Database
from storage.errors import DuplicateName
from storage.models import api_tokens, user_identities, users, utcnow
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


# users.name is String(200); a provider's display name is cut to leave room for a suffix.
MAX_NAME = 200
_NAME_ROOM = MAX_NAME - 20


@dataclass(frozen=True)
class TokenInfo:
    """An API token as the admin CLI lists it: never the token, nor its hash."""

    id: int
    user_name: str
    label: str
    created_at: datetime
    last_used_at: datetime | None


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

    async def user_for_identity(self, issuer: str, subject: str, display: str) -> UserRecord:
        """The user ``subject`` is at ``issuer``, created on first sign-in.

        The new user's name is ``display`` (the provider's username or e-mail) when free,
        else ``display`` with a short digest of the identity: names stay unique without
        letting a provider's display name take over someone else's account.
        """
        found = await self._identity_user(issuer, subject)
        if found is not None:
            return found
        display = " ".join(display.split())[:_NAME_ROOM] or subject[:_NAME_ROOM]
        digest = hashlib.sha256(f"{issuer}\0{subject}".encode()).hexdigest()[:10]
        for name in (display, f"{display}#{digest}"):
            if name == LOCAL_USER_ID:
                continue
            user_id = uuid.uuid4().hex
            now = utcnow()
            try:
                async with self._db.session(write=True) as session:
                    await session.execute(
                        insert(users).values(id=user_id, name=name, created_at=now)
                    )
                    await session.execute(
                        insert(user_identities).values(
                            user_id=user_id, issuer=issuer, subject=subject, created_at=now
                        )
                    )
                    await session.commit()
                return UserRecord(id=user_id, name=name)
            except IntegrityError:
                # The name is taken, or another request created this identity meanwhile.
                found = await self._identity_user(issuer, subject)
                if found is not None:
                    return found
        raise DuplicateName(display)

    async def _identity_user(self, issuer: str, subject: str) -> UserRecord | None:
        async with self._db.session() as session:
            row = (
                await session.execute(
                    select(users.c.id, users.c.name)
                    .join(user_identities, user_identities.c.user_id == users.c.id)
                    .where(user_identities.c.issuer == issuer)
                    .where(user_identities.c.subject == subject)
                )
            ).one_or_none()
        return UserRecord(id=row.id, name=row.name) if row is not None else None

    async def list_tokens(self, user_name: str | None = None) -> list[TokenInfo]:
        """Every token (or one user's), by user then age: ids for ``revoke``/``rotate``."""
        query = (
            select(
                api_tokens.c.id,
                users.c.name,
                api_tokens.c.label,
                api_tokens.c.created_at,
                api_tokens.c.last_used_at,
            )
            .join(users, users.c.id == api_tokens.c.user_id)
            .order_by(users.c.name, api_tokens.c.id)
        )
        if user_name is not None:
            query = query.where(users.c.name == user_name)
        async with self._db.session() as session:
            rows = (await session.execute(query)).all()
        return [
            TokenInfo(
                id=row.id,
                user_name=row.name,
                label=row.label,
                created_at=row.created_at,
                last_used_at=row.last_used_at,
            )
            for row in rows
        ]

    async def revoke_token(self, token_id: int) -> bool:
        """Delete a token; False when there is none with that id."""
        async with self._db.session(write=True) as session:
            result = await session.execute(delete(api_tokens).where(api_tokens.c.id == token_id))
            await session.commit()
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def rotate_token(self, token_id: int) -> tuple[TokenInfo, str] | None:
        """Replace a token by a new one for the same user and label, in one transaction.

        The old token stops working at once (a running server may still accept it from
        its cache for ``TokenCache.ttl`` seconds). None when there is no such token.
        """
        token = new_token()
        now = utcnow()
        async with self._db.session(write=True) as session:
            row = (
                await session.execute(
                    select(api_tokens.c.user_id, api_tokens.c.label, users.c.name)
                    .join(users, users.c.id == api_tokens.c.user_id)
                    .where(api_tokens.c.id == token_id)
                )
            ).one_or_none()
            if row is None:
                return None
            await session.execute(delete(api_tokens).where(api_tokens.c.id == token_id))
            new_id = (
                await session.execute(
                    insert(api_tokens)
                    .values(
                        user_id=row.user_id,
                        token_hash=hash_token(token),
                        label=row.label,
                        created_at=now,
                    )
                    .returning(api_tokens.c.id)
                )
            ).scalar_one()
            await session.commit()
        return TokenInfo(new_id, row.name, row.label, now, None), token
