"""The build's one step pyproject.toml cannot say: ship the migrations inside the package.

The repository keeps Alembic's scripts in the top-level ``alembic/`` folder (where
Alembic's own commands and the layout expect them); a built wheel carries a copy as
``storage/migrations/``, which ``storage.migrate`` finds first, so an installed
Switchboard migrates its database from anywhere.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SOURCE = Path(__file__).resolve().parent / "alembic"


class BuildWithMigrations(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # an editable install reads the checkout's alembic/ folder itself
        target = Path(self.build_lib) / "storage" / "migrations"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(SOURCE, target, ignore=shutil.ignore_patterns("__pycache__"))


setup(cmdclass={"build_py": BuildWithMigrations})
