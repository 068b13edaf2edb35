"""Shared fixtures: a real, migrated database on SQLite and on PostgreSQL.

- ``database_url`` (function scope, parametrized ``sqlite`` / ``postgresql``): the URL of a
  migrated database. Every test that uses it, directly or through ``db``, runs once per
  engine (ids ``[sqlite]`` and ``[postgresql]``; select one with ``-k sqlite``). Each
  engine is migrated once per test session; after every test all rows are deleted, so
  tests start empty. Pass the URL as is to ``Database(url)`` or to the app settings: the
  PostgreSQL one carries ``?schema=sb_<random>`` (a schema created for this test session
  and dropped at its end), which ``storage.engine.Database`` turns into the
  ``search_path``.
- ``db``: a ``storage.engine.Database`` on ``database_url``, disposed after the test.
- ``fernet``: a ``MultiFernet`` with a fresh key, for ``AccountRepository``.
- ``make_settings``: ``make_settings(**overrides)`` makes app ``Settings`` on
  ``database_url``, with a data directory under ``tmp_path``.
- ``postgres_proxy``: a ``DroppingProxy`` (``tests/support/proxies.py``) in front of the
  test PostgreSQL, for a test to cut or delay what passes between it and the database.
- every test in ``tests/support/blocking.py``'s ``CHECKED`` directories runs with our
  code's blocking calls on the event loop made errors, unless it is marked
  ``@pytest.mark.blocking_allowed``.

Helpers the tests share (servers, clients, waiting on a condition) are in
``tests/support/``; conftest files hold only fixtures and hooks.

PostgreSQL is expected at ``postgresql+asyncpg://postgres@127.0.0.1:5432/test``
(override with ``SWITCHBOARD_TEST_POSTGRES_URL``). When it cannot be reached the
``[postgresql]`` tests are skipped with the reason, except with ``CI=true``, where they
fail: CI must test both engines.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet, MultiFernet
from sqlalchemy.engine import make_url

from app.settings import Settings, load_settings
from storage.engine import Database
from storage.migrate import upgrade
from tests.support.blocking import is_checked, no_blocking_in_our_code
from tests.support.db import (
    POSTGRES_URL,
    MigratedDatabase,
    drop_schema,
    postgres_unreachable_reason,
    wipe,
)
from tests.support.proxies import DroppingProxy, dropping_proxy

# Turns with the offline model are instant unless a test asks for a pace of its own; the
# setting is read from the environment, so subprocess servers inherit this too.
os.environ.setdefault("SWITCHBOARD_OFFLINE_DELTA_DELAY", "0")

ENGINES = ["sqlite", "postgresql"]

# The files holding the longest tests (30-50 s each on an idle 2-core machine), longest
# first. They run first: pytest-xdist hands tests out in collection order, so one of them
# collected late (tests/ws sorts last) would leave a worker alone at the end of
# `make test -n 2` while the other idles. Any order is correct; this one is quicker.
SLOW_FIRST = (
    "tests/packaging/test_lowest_versions.py",
    "tests/llm/test_long_chat_memory.py",
    "tests/api/test_schemathesis.py",
    "tests/packaging/test_wheel.py",
    "tests/reliability/test_torture.py",
    "tests/deploy/test_topology.py",
    "tests/reliability/test_scale_out.py",
    "tests/reliability/test_scale_out_shared_pair.py",
    "tests/reliability/test_one_turn_per_chat.py",
    "tests/storage/test_storage_migrations.py",
    "tests/connectors/test_contract_kit_fails.py",
    "tests/reliability/test_approval_faults.py",
    "tests/reliability/test_faults.py",
    "tests/mcp/test_mcp_failures.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: n for n, path in enumerate(SLOW_FIRST)}
    # A stable sort: within a file, and for every other file, the collected order stays.
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(SLOW_FIRST)))


@pytest.fixture(autouse=True)
def _no_blocking_on_the_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("blocking_allowed") or not is_checked(request.path):
        yield
        return
    with no_blocking_in_our_code():
        yield


@pytest.fixture(scope="session", params=ENGINES)
async def _migrated_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[MigratedDatabase]:
    if request.param == "sqlite":
        path: Path = tmp_path_factory.mktemp("sqlite") / "switchboard.db"
        url = f"sqlite+aiosqlite:///{path}"
        await asyncio.to_thread(upgrade, url)
        admin = Database(url)
        try:
            yield MigratedDatabase(url, admin)
        finally:
            await admin.dispose()
        return

    reason = await postgres_unreachable_reason()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: PostgreSQL tests must run)")
        pytest.skip(reason)
    schema = f"sb_{secrets.token_hex(6)}"
    url = f"{POSTGRES_URL}?schema={schema}"
    await asyncio.to_thread(upgrade, url)  # also creates the schema
    admin = Database(url)
    try:
        yield MigratedDatabase(url, admin)
    finally:
        await admin.dispose()
        await drop_schema(schema)


@pytest.fixture
async def database_url(_migrated_database: MigratedDatabase) -> AsyncIterator[str]:
    """URL of a migrated, empty database (see the module docstring)."""
    yield _migrated_database.url
    await wipe(_migrated_database.admin)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    try:
        yield database
    finally:
        await database.dispose()


@pytest.fixture
def fernet() -> MultiFernet:
    return MultiFernet([Fernet(Fernet.generate_key())])


@pytest.fixture
def make_settings(database_url: str, tmp_path: Path) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {"database_url": database_url, "data_dir": tmp_path / "data"}
        values.update(overrides)
        return load_settings(**values)

    return make


@pytest.fixture
async def postgres_proxy(database_url: str) -> AsyncIterator[DroppingProxy]:
    async with dropping_proxy(make_url(database_url).port or 5432) as proxy:
        yield proxy
