"""The test databases: where PostgreSQL is, whether it answers, and emptying or dropping
what a test session made there (the fixtures are in ``tests/conftest.py``)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from sqlalchemy import delete, text

from storage.engine import Database
from storage.models import Base

POSTGRES_URL = os.environ.get(
    "SWITCHBOARD_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)


@dataclass(frozen=True)
class MigratedDatabase:
    url: str
    # Kept open for the session, to empty the tables after each test.
    admin: Database


async def postgres_unreachable_reason() -> str | None:
    """Why PostgreSQL at ``POSTGRES_URL`` cannot be used, or None when it answers."""
    probe = Database(POSTGRES_URL)
    try:
        async with asyncio.timeout(5):
            async with probe.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
    except Exception as exc:
        return f"PostgreSQL not reachable at {POSTGRES_URL}: {type(exc).__name__}: {exc}"
    finally:
        await probe.dispose()
    return None


async def wipe(db: Database) -> None:
    """Delete every row of every table."""
    # Children before parents; DELETE is faster than TRUNCATE on tables this small.
    async with db.session(write=True) as session:
        for table in reversed(Base.metadata.sorted_tables):
            await session.execute(delete(table))
        await session.commit()


async def drop_schema(schema: str) -> None:
    """Drop a PostgreSQL schema a test made (``?schema=`` of its URL), with its tables."""
    owner = Database(POSTGRES_URL)
    try:
        async with owner.engine.begin() as conn:
            await conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await owner.dispose()
