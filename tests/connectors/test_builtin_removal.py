"""A built-in connector is its folder and its entry point: with both gone, the server
starts, serves the others and mentions it nowhere, as the issue's "one folder" asks.

The app's packages are copied without ``connectors/gmail`` and served from that copy, with
a copy of this distribution's metadata (pyproject.toml's name) whose entry points lack
``gmail`` first on the path (the first distribution of a name is the one
``importlib.metadata`` reads)."""

from __future__ import annotations

import shutil
import tomllib
import uuid
from pathlib import Path

import httpx

from tests.support.clients import open_client
from tests.support.processes import ROOT, ServerProcess

PACKAGES = ("app", "connectors", "websocket", "storage", "wire", "alembic")


def without_gmail(tmp_path: Path) -> tuple[Path, Path]:
    """(a copy of the app's packages without Gmail, a directory holding its metadata)."""
    tree = tmp_path / "tree"
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "alembic.ini", tree / "alembic.ini")
    shutil.rmtree(tree / "connectors" / "gmail")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    points = dict(project["entry-points"]["switchboard.connectors"])
    del points["gmail"]
    dist, version = project["name"], project["version"]
    meta = tmp_path / "meta" / f"{dist.replace('-', '_')}-{version}.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = [f"{name} = {target}" for name, target in points.items()]
    (meta / "entry_points.txt").write_text("[switchboard.connectors]\n" + "\n".join(lines) + "\n")
    return tree, meta.parent


async def test_a_built_in_removed_with_its_entry_point_leaves_no_trace(
    database_url: str, tmp_path: Path
) -> None:
    tree, meta = without_gmail(tmp_path)
    server = ServerProcess(
        {
            "SWITCHBOARD_DATABASE_URL": database_url,
            "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
            "SWITCHBOARD_OFFLINE_DELTA_DELAY": "0",
            "PYTHONPATH": str(meta),
            "PYTHONDONTWRITEBYTECODE": "",  # (empty: unset) its bytecode shows what ran
        },
        tmp_path / "server.log",
        cwd=tree,
    )
    server.start()
    try:
        async with httpx.AsyncClient(base_url=server.http, timeout=10) as http:
            listed = (await http.get("/api/connectors")).json()
            page = await http.get("/")
        async with open_client(server.ws_url(uuid.uuid4().hex)) as client:
            sushi = await client.turn("find sushi in Boston")
            mail = await client.turn("check my inbox")
    finally:
        server.stop()

    assert [c["name"] for c in listed["connectors"]] == ["plaid", "yelp", "search"]
    assert listed["failed"] == []
    assert page.status_code == 200
    # The copy was served, not the checkout: Python compiled the app's modules there.
    assert (tree / "app" / "__pycache__").is_dir()
    assert (tree / "connectors" / "yelp" / "__pycache__").is_dir()
    [shown] = [e for e in sushi if e["type"] == "tool_output"]
    assert shown["output"]["response_type"] == "yelp_search_results"
    assert sushi[-2]["status"] == "completed" and mail[-2]["status"] == "completed"
    assert not [e for e in mail if e["type"] == "error"]
    assert {e["current_agent"] for e in mail if e["type"] == "tool_call"} <= {
        "Plaid",
        "Yelp",
        "Search",
    }
    assert "gmail" not in str(listed).lower()
    assert " ERROR " not in server.log() and '"level": "ERROR"' not in server.log()
