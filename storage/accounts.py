"""A user's connected service accounts (a mailbox, bank links, …) with encrypted credentials.

Credentials are a JSON object encrypted with the app's ``MultiFernet`` (first key
encrypts, every key decrypts, so keys can be rotated). They never reach the database,
logs or error messages in clear; ``meta`` (e.g. the account's e-mail address, for the UI)
is stored in clear.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from cryptography.fernet import InvalidToken, MultiFernet
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from storage.engine import Database, rowcount
from storage.models import connected_accounts, utcnow
from storage.plain_sql import credentials_plan, run_plan
from storage.records import ConnectedAccount

log = logging.getLogger("switchboard.storage")


class AccountRepository:
    def __init__(self, db: Database, user_id: str, fernet: MultiFernet) -> None:
        self._db = db
        self.user_id = user_id
        self._fernet = fernet

    async def connect(
        self, connector: str, credentials: dict[str, Any], meta: dict[str, Any] | None = None
    ) -> ConnectedAccount:
        """Store (or replace) the user's account for ``connector``."""
        if not connector:
            raise ValueError("connector name must not be empty")
        token = self._fernet.encrypt(json.dumps(credentials).encode("utf-8"))
        meta = dict(meta or {})
        now = utcnow()
        table = connected_accounts
        statement = self._db.insert(table).values(
            user_id=self.user_id,
            connector=connector,
            credentials=token,
            meta=meta,
            created_at=now,
            updated_at=now,
        )
        # Reconnecting replaces the credentials in place (a new OAuth grant, a new bank link).
        statement = statement.on_conflict_do_update(
            index_elements=[table.c.user_id, table.c.connector],
            set_={"credentials": token, "meta": meta, "updated_at": now},
        )
        async with self._db.session(write=True) as session:
            try:
                await session.execute(statement)
            except IntegrityError as exc:  # the only other constraint is the user FK
                raise ValueError(f"no user with id {self.user_id!r}") from exc
            await session.commit()
        return ConnectedAccount(connector=connector, meta=meta, connected_at=now)

    async def get(self, connector: str) -> dict[str, Any] | None:
        """The decrypted credentials, or None when the user has not connected it.

        Credentials that no configured key can decrypt (the secret key was replaced) also
        give None, so the connector asks the user to connect again.
        """
        # Plain SQL (storage/plain_sql.py): a connector's tools read it at every call.
        token = await run_plan(
            self._db, lambda _: credentials_plan(self.user_id, connector), write=False
        )
        if token is None:
            return None
        try:
            data: dict[str, Any] = json.loads(self._fernet.decrypt(bytes(token)))
        except InvalidToken:
            log.warning(
                "credentials of connector %s for user %s cannot be decrypted with the "
                "configured keys (was SWITCHBOARD_SECRET_KEY changed?); treating as not connected",
                connector,
                self.user_id,
            )
            return None
        return data

    async def list(self) -> list[ConnectedAccount]:
        table = connected_accounts
        query = (
            select(table.c.connector, table.c.meta, table.c.updated_at)
            .where(table.c.user_id == self.user_id)
            .order_by(table.c.connector)
        )
        async with self._db.session() as session:
            rows = (await session.execute(query)).all()
        return [
            ConnectedAccount(connector=row.connector, meta=row.meta, connected_at=row.updated_at)
            for row in rows
        ]

    async def disconnect(self, connector: str) -> bool:
        table = connected_accounts
        async with self._db.session(write=True) as session:
            result = await session.execute(
                delete(table).where(table.c.user_id == self.user_id, table.c.connector == connector)
            )
            await session.commit()
        return bool(rowcount(result))
