"""Run and check Alembic migrations from code.

``upgrade(url)`` is synchronous and runs its own event loop (Alembic's async env uses
``asyncio.run``). From async code call it in a thread::

    await asyncio.to_thread(storage.migrate.upgrade, url)
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from alembic import command
from storage.engine import Database
from storage.models import Base
from storage.search import ENGINE_SPECIFIC_INDEXES, ENGINE_SPECIFIC_TABLES

# Where the migration scripts are: a wheel carries them inside the package (setup.py
# copies them there); a checkout has them in its top-level alembic/ folder.
PACKAGED = Path(__file__).resolve().parent / "migrations"
CHECKOUT = Path(__file__).resolve().parents[1] / "alembic"


def script_location() -> Path:
    for folder in (PACKAGED, CHECKOUT):
        if (folder / "env.py").is_file():
            return folder
    raise RuntimeError(
        f"Switchboard's migration scripts are missing: neither {PACKAGED} (an installed "
        f"package) nor {CHECKOUT} (a checkout) holds env.py; reinstall Switchboard"
    )


def alembic_config(url: str) -> Config:
    """An Alembic ``Config`` for ``url``, built in code (no alembic.ini: an installed
    package has none), that leaves the caller's logging alone."""
    config = Config()
    config.set_main_option("script_location", str(script_location()))
    config.set_main_option("path_separator", "os")
    # Passed as an attribute, not as an option: ConfigParser would treat a "%" in a
    # URL-encoded password as interpolation.
    config.attributes["url"] = url
    config.attributes["configure_logger"] = False
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` to ``revision`` (``alembic upgrade head``).

    Safe to call from any thread that is not running an event loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "storage.migrate.upgrade() blocks and runs its own event loop; from async code "
            "call it as `await asyncio.to_thread(upgrade, url)`"
        )
    command.upgrade(alembic_config(url), revision)


def _script_heads(url: str) -> set[str]:
    return set(ScriptDirectory.from_config(alembic_config(url)).get_heads())


def _current_heads(connection: Connection) -> set[str]:
    return set(MigrationContext.configure(connection).get_current_heads())


async def check_current(db: Database) -> bool:
    """True when the database is at the latest migration (``alembic current`` == head)."""
    # Reading the migration scripts touches the file system: keep it off the loop.
    heads = await asyncio.to_thread(_script_heads, db.url)
    async with db.engine.connect() as conn:
        current = await conn.run_sync(_current_heads)
    return current == heads


def modelled(name: str | None, type_: str, _parent: Mapping[str, str | None]) -> bool:
    """Whether the schema comparison looks at an object: not at the search index's
    engine-specific parts, which migration 0006 makes and storage.models cannot describe."""
    if type_ == "table":
        return name is None or not ENGINE_SPECIFIC_TABLES.match(name)
    if type_ == "index":
        return name not in ENGINE_SPECIFIC_INDEXES
    return True


def _diff(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "include_name": modelled}
    )
    return list(compare_metadata(context, Base.metadata))


async def schema_diff(db: Database) -> list[Any]:
    """Differences between the live schema and ``storage.models`` (empty when in step).

    The list holds Alembic autogenerate operations, as ``compare_metadata`` returns them.
    """
    async with db.engine.connect() as conn:
        return await conn.run_sync(_diff)
