"""The wheel as an operator installs it: built from this checkout, installed into a fresh
virtualenv outside it, and served from another directory — migrations included."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.support.clients import open_client
from tests.support.processes import ROOT, ServerProcess


def run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_wheel(out: Path) -> Path:
    out.mkdir()
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)], out)
    [wheel] = out.glob("switchboard_server-*.whl")
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
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    version = run([str(venv / "bin" / "switchboard"), "--version"], elsewhere)
    assert version.strip() == f"switchboard {wheel.name.split('-')[1]}"

    # Nothing of the checkout on the path, no setting of ours inherited: the package alone.
    for name in [key for key in os.environ if key.startswith("SWITCHBOARD_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    where = run([str(venv / "bin" / "python"), "-c", "import app; print(app.__file__)"], elsewhere)
    assert Path(where.strip()).is_relative_to(venv)
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
