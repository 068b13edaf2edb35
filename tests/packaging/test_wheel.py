"""The wheel as an operator installs it: built from this checkout, installed into a fresh
virtualenv outside it (the runtime lock's versions, no extras), and served from another
directory — migrations included. There, without any dev or testing distribution, every
runtime module imports, and the contract kit says which extra it needs."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import uuid
import zipfile
from pathlib import Path

import httpx
import pytest

from connectors.names import DISTRIBUTION
from tests.packaging.project import RUNTIME_LOCK
from tests.support.clients import open_client
from tests.support.processes import ROOT, ServerProcess


def run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


# Run by the installed wheel's Python: import every runtime module (all but the contract
# kit, which is the testing extra's, the tracer, the otel extra's: app.telemetry imports it
# only when tracing is configured, and the S3 blob store, the s3 extra's: imported only
# when SWITCHBOARD_ATTACHMENT_STORE=s3), then those, which must miss only their extra's
# packages.
IMPORT_EVERYTHING = """
import importlib, pkgutil
EXTRAS = {"app.telemetry_otel": "otel", "storage.blobs_s3": "s3"}
for top in ("app", "connectors", "websocket", "storage", "wire"):
    package = importlib.import_module(top)
    for module in pkgutil.walk_packages(package.__path__, top + "."):
        if not module.name.startswith("connectors.testing") and module.name not in EXTRAS:
            importlib.import_module(module.name)
print("imported")
for name, extra in EXTRAS.items():
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        print(f"{extra}:", name, "misses", exc.name)
try:
    import connectors.testing
except ModuleNotFoundError as exc:
    print("kit:", exc)
"""


def build_wheel(out: Path) -> Path:
    out.mkdir()
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)], out)
    [wheel] = out.glob(f"{DISTRIBUTION.replace('-', '_')}-*.whl")
    return wheel


async def test_the_wheel_installs_and_serves_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = build_wheel(tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    assert "storage/migrations/env.py" in names
    assert any(name.startswith("storage/migrations/versions/0001_") for name in names)
    assert not [name for name in names if name.startswith(("tests/", "alembic/", "bench/"))]

    venv = tmp_path / "venv"
    python = str(venv / "bin" / "python")
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    # As `make run` does: the locked versions, hash-checked; then the wheel, whose own
    # requirements pip checks against them (it fetches nothing when they agree).
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    run([*pip, "--require-hashes", "-r", str(RUNTIME_LOCK)], tmp_path)
    run([*pip, str(wheel)], tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    version = run([str(venv / "bin" / "switchboard"), "--version"], elsewhere)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["name"] == DISTRIBUTION  # the name connectors.registry finds built-ins by
    assert version.strip() == f"switchboard {project['version']}"  # the one place it is set

    # Nothing of the checkout on the path, no setting of ours inherited: the package alone.
    for name in [key for key in os.environ if key.startswith("SWITCHBOARD_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    where = run([str(venv / "bin" / "python"), "-c", "import app; print(app.__file__)"], elsewhere)
    assert Path(where.strip()).is_relative_to(venv)
    assert run([python, "-c", IMPORT_EVERYTHING], elsewhere).splitlines() == [
        "imported",
        "otel: app.telemetry_otel misses openinference",
        "s3: storage.blobs_s3 misses obstore",
        "kit: connectors.testing (the connector contract kit) needs the 'testing' extra, "
        "which is not installed here (missing: pytest, pytest-asyncio, hypothesis, "
        f"hypothesis-jsonschema, blockbuster): pip install '{DISTRIBUTION}[testing]'",
    ]
    data = elsewhere / "data"
    server = ServerProcess(
        {
            "SWITCHBOARD_DATA_DIR": str(data),
            "SWITCHBOARD_DATABASE_URL": f"sqlite+aiosqlite:///{data / 'switchboard.db'}",
            "SWITCHBOARD_OFFLINE_DELTA_DELAY": "0",
        },
        tmp_path / "server.log",
        cwd=elsewhere,
        command=[str(venv / "bin" / "switchboard"), "serve"],  # migrates at start
    )
    server.start()
    try:
        async with httpx.AsyncClient(base_url=server.http, timeout=10) as http:
            ready = (await http.get("/readyz")).json()
            page = await http.get("/")
        async with open_client(server.ws_url(uuid.uuid4().hex)) as client:
            events = await client.turn("find sushi in Boston")
    finally:
        server.stop()

    assert ready == {"status": "ok", "database": "ok"}
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert events[-2]["type"] == "end_of_stream" and events[-2]["status"] == "completed"
    [shown] = [e for e in events if e["type"] == "tool_output"]
    assert shown["output"]["response_type"] == "yelp_search_results"
    assert "Running upgrade  -> 0001" in server.log()  # the packaged migrations ran
