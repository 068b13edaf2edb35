"""Re-encrypt stored credentials with the newest secret key (``switchboard rekey``).

``SWITCHBOARD_SECRET_KEY`` is a list, newest first: the first key encrypts, every key
decrypts. Rotating is: put a new key first, restart the instances, run this once, then
drop the old keys. Until it has run, credentials written under an old key need that key.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.fernet import InvalidToken, MultiFernet
from sqlalchemy import select, update

from storage.engine import Database, rowcount
from storage.models import connected_accounts

# Rows per transaction: short write transactions, whatever the table's size.
BATCH = 200


@dataclass(frozen=True)
class RekeyResult:
    reencrypted: int  # written under an older key, now under the newest one
    current: int  # already under the newest key: left alone
    undecryptable: int  # no configured key opens them: left alone (the user reconnects)


async def rekey_credentials(db: Database, fernet: MultiFernet, newest: MultiFernet) -> RekeyResult:
    """Re-encrypt every connected account's credentials that ``newest`` (the first key
    alone) cannot open but ``fernet`` (all keys) can.

    A row changed meanwhile (the user reconnected: it is under the newest key already)
    is not overwritten: each update is conditional on the token it read.
    """
    table = connected_accounts
    reencrypted = current = undecryptable = 0
    last_id = 0
    while True:
        async with db.session() as session:
            rows = (
                await session.execute(
                    select(table.c.id, table.c.credentials)
                    .where(table.c.id > last_id)
                    .order_by(table.c.id)
                    .limit(BATCH)
                )
            ).all()
        if not rows:
            return RekeyResult(reencrypted, current, undecryptable)
        last_id = rows[-1].id
        updates: list[tuple[int, bytes, bytes]] = []
        for row in rows:
            token = bytes(row.credentials)
            try:
                newest.decrypt(token)
            except InvalidToken:
                pass
            else:
                current += 1
                continue
            try:
                updates.append((row.id, token, fernet.rotate(token)))
            except InvalidToken:
                undecryptable += 1
        if not updates:
            continue
        async with db.session(write=True) as session:
            for row_id, old, new in updates:
                result = await session.execute(
                    update(table)
                    .where(table.c.id == row_id, table.c.credentials == old)
                    .values(credentials=new)
                )
                reencrypted += rowcount(result)
            await session.commit()
