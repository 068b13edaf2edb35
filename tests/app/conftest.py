"""Fixtures for the app tests; the helpers live in ``apptest.py``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from apptest import Running, User, create_user, make_settings, running

from app.settings import Settings
from storage.engine import Database


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, tmp_path)


@pytest.fixture
async def alice(db: Database) -> User:
    return await create_user(db, "alice")


@pytest.fixture
async def bob(db: Database) -> User:
    return await create_user(db, "bob")


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Running]:
    async with running(settings) as server:
        yield server
