"""Honest floors: every direct dependency at the lowest version pyproject.toml allows, for
real, runs the fast tests.

uv (from the dev lock) installs the runtime dependencies and the ``testing`` extra with
``--resolution lowest-direct`` into a fresh virtualenv, then the project itself without
resolving again. Two things must hold there:

- each direct dependency got exactly its floor: a floor the other requirements make
  unreachable (pydantic>=2.7 beside an SDK that needs 2.12) is not a floor;
- the fast tests pass (``FAST_TESTS``; ``--strict-config``: a pytest plug-in too old for
  the settings in pyproject.toml fails too), so a floor below what the code uses fails.

It needs the package index (PyPI, through uv's cache); outside CI it skips when the index
cannot be reached.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.packaging.project import floor, requirements
from tests.support.processes import ROOT

UV = Path(sys.executable).parent / "uv"
# What a built distribution is made from (setup.py copies alembic/ into the package).
SOURCES = ("pyproject.toml", "setup.py", "README.md", "alembic")
PACKAGES = ("app", "connectors", "websocket", "storage", "wire")
# Fast tests: the unit tests (what they import covers every runtime package), and the few
# others that found a floor too low (starlette's host check, pytest-asyncio's loop, uvicorn's
# WebSocket implementation and its slow readers), plus the storage engine's (SQLAlchemy,
# aiosqlite); on SQLite only.
FAST_TESTS = [
    "tests/unit",
    "tests/app/test_origin_tokens.py",
    "tests/app/test_cli_commands.py",
    "tests/ws/test_invalid_utf8.py",
    "tests/ws/test_slow_readers.py",
    "tests/storage/test_storage_engine.py",
    "-k",
    "not postgresql",
]
INDEX = "https://pypi.org/simple/"


def run(
    command: list[str], cwd: Path, timeout: float = 600, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=clean_env() | env, capture_output=True, text=True, timeout=timeout
    )


def clean_env() -> dict[str, str]:
    """This run's environment without its venv, path or pytest-xdist worker variables."""
    dropped = ("VIRTUAL_ENV", "PYTHONPATH", "PYTEST_", "UV_")
    return {k: v for k, v in os.environ.items() if not k.startswith(dropped)}


def index_unreachable() -> str | None:
    try:
        httpx.head(INDEX, timeout=10).raise_for_status()
    except httpx.HTTPError as exc:
        return f"the package index is unreachable ({type(exc).__name__})"
    return None


def copy_sources(target: Path) -> Path:
    """The checkout's buildable part, so building it writes nothing into the checkout."""
    for name in (*SOURCES, *PACKAGES):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target / name)
    return target


def checked(done: subprocess.CompletedProcess[str], what: str) -> str:
    assert done.returncode == 0, f"{what} failed:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    return done.stdout


def test_the_lowest_allowed_versions_install_and_pass_the_fast_tests(tmp_path: Path) -> None:
    assert UV.exists(), f"{UV} is missing: the dev lock installs it (make test)"
    reason = index_unreachable()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)

    venv = tmp_path / "lowest"
    python = str(venv / "bin" / "python")
    checked(
        run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], tmp_path),
        "uv venv",
    )
    install = [str(UV), "pip", "install", "--quiet", "--python", python]
    checked(
        run(
            [*install, "--resolution", "lowest-direct", "-r", str(ROOT / "pyproject.toml")]
            + ["--extra", "testing"],
            tmp_path,
        ),
        "installing the lowest allowed versions",
    )
    checked(
        run([*install, "--no-deps", str(copy_sources(tmp_path / "src"))], tmp_path), "the build"
    )

    listed = checked(
        run([str(UV), "pip", "list", "--python", python, "--format", "json"], tmp_path),
        "uv pip list",
    )
    installed = {canonicalize_name(d["name"]): Version(d["version"]) for d in json.loads(listed)}
    declared = {
        canonicalize_name(r.name): Version(floor(r) or "0") for r in requirements("testing")
    }
    got = {name: installed.get(name) for name in declared}
    assert got == declared, "a floor no install can reach (the others require more): raise it"

    tests = run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--strict-config", *FAST_TESTS],
        ROOT,
        timeout=900,
        # Older Hypothesis keeps caches in the working directory: not in the checkout.
        HYPOTHESIS_STORAGE_DIRECTORY=str(tmp_path / "hypothesis"),
    )
    assert tests.returncode == 0, (
        "the fast tests fail at the lowest allowed versions (a floor is too low):\n"
        + tests.stdout[-8000:]
        + tests.stderr[-3000:]
    )
