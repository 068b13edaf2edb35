"""Alembic environment: async engines (aiosqlite, asyncpg) through storage.engine.Database.

The URL comes from, in order: ``config.attributes["url"]`` (what storage.migrate passes),
``-x url=...`` on the command line, then ``sqlalchemy.url`` in alembic.ini. Using
``Database`` means migrations see exactly the connection set-up the app uses (SQLite
pragmas, the ``?schema=`` parameter on PostgreSQL).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from logging.config import fileConfig

from sqlalchemy import text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.pool import NullPool

from alembic import context
from storage.engine import OUR_PARAMS, WRITE_OPTION, Database
from storage.migrate import modelled
from storage.models import Base

config = context.config

# storage.migrate turns this off: reconfiguring logging inside a running app would
# clobber the app's own logging set-up.
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _database_url() -> str:
    url = config.attributes.get("url") or context.get_x_argument(as_dictionary=True).get("url")
    url = url or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL: pass -x url=... or set sqlalchemy.url")
    return url


def _configure(**kwargs: object) -> None:
    url = make_url(_database_url())
    is_sqlite = url.get_backend_name() == "sqlite"
    context.configure(
        target_metadata=target_metadata,
        compare_type=True,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=is_sqlite,
        # Our engine emits BEGIN itself on SQLite, so DDL is transactional there too.
        transactional_ddl=True,
        # `alembic revision --autogenerate` leaves the search index's engine parts alone.
        include_name=modelled,
        **kwargs,  # type: ignore[arg-type]
    )


def run_migrations_offline() -> None:
    """``alembic upgrade head --sql``: print the SQL instead of running it."""
    url = make_url(_database_url()).difference_update_query(OUR_PARAMS)
    _configure(url=url, literal_binds=True, dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def _run_with_connection(connection: Connection) -> None:
    _configure(connection=connection)
    with context.begin_transaction():
        context.run_migrations()


async def _run_async_migrations() -> None:
    # NullPool: a migration is a one-off; keep no connections around afterwards.
    db = Database(_database_url(), poolclass=NullPool)
    try:
        async with _one_migration_at_a_time(db):
            if db.schema is not None:
                async with db.engine.begin() as conn:
                    await conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{db.schema}"')
            # On SQLite the write engine's BEGIN IMMEDIATE makes a second migrator wait
            # for the first instead of failing to upgrade its read to a write.
            async with db.engine.execution_options(**{WRITE_OPTION: True}).connect() as conn:
                await conn.run_sync(_run_with_connection)
    finally:
        await db.dispose()


@asynccontextmanager
async def _one_migration_at_a_time(db: Database) -> AsyncIterator[None]:
    """Instances started together each migrate on start: on PostgreSQL the later ones
    wait here for the first, then find nothing to do (unserialised, two CREATE TABLEs of
    the same name block each other). A session lock on its own connection, so it spans
    the migration's transactions. SQLite's ``BEGIN IMMEDIATE`` serialises by itself."""
    if db.engine.dialect.name != "postgresql":
        yield
        return
    key = f"switchboard-migrations:{db.schema or 'public'}"
    async with db.engine.connect() as holder:
        await holder.execute(text("SELECT pg_advisory_lock(hashtext(:key))"), {"key": key})
        await holder.commit()
        try:
            yield
        finally:
            await holder.execute(text("SELECT pg_advisory_unlock(hashtext(:key))"), {"key": key})
            await holder.commit()


if context.is_offline_mode():
    run_migrations_offline()
else:
    # storage.migrate.upgrade refuses to run inside an event loop, so this is safe.
    asyncio.run(_run_async_migrations())
