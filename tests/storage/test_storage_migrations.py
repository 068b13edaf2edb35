"""Migrations: they build exactly the schema the models describe, on both engines."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from alembic import command
from storage.engine import Database
from storage.migrate import alembic_config, check_current, schema_diff, upgrade
from storage.models import Base
from tests.support.db import POSTGRES_URL, drop_schema


@pytest.fixture
async def fresh_url(database_url: str, tmp_path: Path) -> AsyncIterator[str]:
    """An empty, unmigrated database on the same engine as ``database_url``."""
    if database_url.startswith("sqlite"):
        yield f"sqlite+aiosqlite:///{tmp_path}/fresh.db"
        return
    schema = f"sb_fresh_{secrets.token_hex(4)}"
    yield f"{POSTGRES_URL}?schema={schema}"
    await drop_schema(schema)


async def test_fixture_database_is_at_head(db: Database) -> None:
    assert await check_current(db) is True


async def test_upgrade_builds_the_models_schema(fresh_url: str) -> None:
    db = Database(fresh_url)
    try:
        assert await check_current(db) is False
        await asyncio.to_thread(upgrade, fresh_url)
        assert await check_current(db) is True
        assert await schema_diff(db) == []
        # Idempotent: a second upgrade is a no-op.
        await asyncio.to_thread(upgrade, fresh_url)
        assert await check_current(db) is True
    finally:
        await db.dispose()


async def test_schema_diff_notices_a_missing_index(fresh_url: str) -> None:
    """Guards the test above: an empty diff must mean something."""
    await asyncio.to_thread(upgrade, fresh_url)
    db = Database(fresh_url)
    try:
        async with db.engine.begin() as conn:
            await conn.exec_driver_sql("DROP INDEX ix_turns_chat_seq")
        diff = await schema_diff(db)
        assert any(op[0] == "add_index" and op[1].name == "ix_turns_chat_seq" for op in diff)
    finally:
        await db.dispose()


async def test_downgrade_to_base_and_back(fresh_url: str) -> None:
    await asyncio.to_thread(upgrade, fresh_url)
    await asyncio.to_thread(command.downgrade, alembic_config(fresh_url), "base")
    db = Database(fresh_url)
    try:
        assert await check_current(db) is False
        diff = await schema_diff(db)
        # Everything is gone: the diff only adds (every table and its indexes).
        assert {op[0] for op in diff} == {"add_table", "add_index"}
        assert len([op for op in diff if op[0] == "add_table"]) == len(Base.metadata.tables)
        await asyncio.to_thread(upgrade, fresh_url)
        assert await schema_diff(db) == []
    finally:
        await db.dispose()


async def test_upgrade_refuses_to_block_a_running_loop(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="asyncio.to_thread"):
        upgrade(f"sqlite+aiosqlite:///{tmp_path}/x.db")


async def test_instances_migrating_one_database_at_once_all_succeed(fresh_url: str) -> None:
    """Servers started together each run ``serve``'s migration: the later ones must wait
    for the first and then find nothing to do, not fail creating the same tables (or, on
    PostgreSQL, block each other for good). Processes, as in a deployment: Alembic's
    context is process-global, so threads could not show it."""
    env = {**os.environ, "SWITCHBOARD_DATABASE_URL": fresh_url}
    migrators = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "app.cli",
            "migrate",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        for _ in range(3)
    ]
    outputs = [(await process.communicate())[0].decode() for process in migrators]
    assert [process.returncode for process in migrators] == [0, 0, 0], outputs
    db = Database(fresh_url)
    try:
        assert await check_current(db) is True
        assert await schema_diff(db) == []
    finally:
        await db.dispose()
