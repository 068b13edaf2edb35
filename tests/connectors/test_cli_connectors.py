"""`switchboard connectors list` and `switchboard connectors new NAME`: the scaffold's own
tests pass at once, run by pytest in a separate process as the author would run them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from connectors.scaffold import files_for, names_for, write_package
from tests.support.mcp import NOTES_SERVER, python_without_mcp

REPO = Path(__file__).resolve().parents[2]


def test_list_shows_each_connector_with_its_mode(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWITCHBOARD_CONNECTOR_MODES", "yelp=live")
    monkeypatch.setenv("SWITCHBOARD_YELP_API_KEY", "cli-test-key-123456")
    assert main(["connectors", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "NAME\tAGENT\tMODE\tACCOUNT\tTOOLS\tSTATUS"
    rows = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    assert list(rows)[:4] == ["gmail", "plaid", "yelp", "search"]
    assert rows["yelp"][1:4] == ["Yelp", "live", "server"]
    assert rows["gmail"][2:4] == ["demo", "per-user"]
    assert "send_google_email" in rows["gmail"][4]
    assert {row[5] for row in rows.values()} == {"ok"}
    assert "cli-test-key-123456" not in "\n".join(lines)


def test_live_mode_without_its_keys_shows_it_failed_with_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWITCHBOARD_CONNECTOR_MODES", "plaid=live")
    monkeypatch.delenv("SWITCHBOARD_PLAID_SECRET", raising=False)
    monkeypatch.setenv("SWITCHBOARD_PLAID_CLIENT_ID", "abc")
    # The server starts without it, so listing is not an error; the row says why.
    assert main(["connectors", "list"]) == 0
    rows = {line.split("\t")[0]: line for line in capsys.readouterr().out.splitlines()}
    assert rows["plaid"].endswith(
        "failed (the built-in connectors): SWITCHBOARD_PLAID_SECRET must be set when plaid "
        "runs in live mode (SWITCHBOARD_CONNECTOR_MODES=plaid=live)"
    )
    assert "abc" not in rows["plaid"]
    assert rows["gmail"].endswith("\tok")


def test_list_checks_the_mcp_servers_and_names_the_rap_servers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    servers = {
        "notes": {"command": sys.executable, "args": [str(NOTES_SERVER), "stdio"]},
        "missing": {"command": "notes-server"},
        # The PATH's python, under `make run`, has no mcp package: its reason says so.
        "broken": {
            "command": str(python_without_mcp(tmp_path / "bin")),
            "args": ["-c", "import mcp"],
        },
    }
    monkeypatch.setenv("SWITCHBOARD_MCP_SERVERS", json.dumps(servers))
    monkeypatch.setenv("SWITCHBOARD_RAP_TOOLS", "tracker=http://127.0.0.1:9/rap")
    assert main(["connectors", "list"]) == 0
    rows = {line.split("\t")[0]: line.split("\t") for line in capsys.readouterr().out.splitlines()}
    assert rows["notes"][1:4] == ["Notes", "live", "server"]
    assert "look_up" in rows["notes"][4] and rows["notes"][5] == "ok"
    assert rows["missing"][5] == (
        "failed (SWITCHBOARD_MCP_SERVERS): the command was not found (notes-server)"
    )
    assert rows["broken"][5].startswith(
        "failed (SWITCHBOARD_MCP_SERVERS): the connection closed (the server exited or "
        "crashed); its last lines on stderr: Traceback (most recent call last): / "
    )
    assert rows["broken"][5].endswith("ModuleNotFoundError: No module named 'mcp'")
    assert rows["tracker"][5].startswith("configured in SWITCHBOARD_RAP_TOOLS")


def test_new_refuses_bad_names_and_existing_directories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in ("Weather", "w" * 33, "1abc", "has-dash", "gmail", "switchboard"):
        assert main(["connectors", "new", bad, "--dir", str(tmp_path)]) == 1, bad
        assert capsys.readouterr().err.startswith("switchboard: ")
    assert list(tmp_path.iterdir()) == []
    assert main(["connectors", "new", "notes", "--dir", str(tmp_path)]) == 0
    assert main(["connectors", "new", "notes", "--dir", str(tmp_path)]) == 1
    assert "already exists" in capsys.readouterr().err


def test_the_scaffold_has_the_layout_of_the_builtins() -> None:
    files = files_for(names_for("bird_watch"))
    assert set(files) == {
        "pyproject.toml",
        "README.md",
        ".gitignore",
        "switchboard_bird_watch/__init__.py",
        "switchboard_bird_watch/agent.py",
        "switchboard_bird_watch/tools.py",
        "switchboard_bird_watch/client.py",
        "switchboard_bird_watch/demo.py",
        "switchboard_bird_watch/options.py",
        "switchboard_bird_watch/offline.py",
        "switchboard_bird_watch/card.js",
        "switchboard_bird_watch/card.css",
        "tests/test_contract.py",
        "tests/test_demo.py",
        "tests/test_flows.py",
    }
    assert 'bird_watch = "switchboard_bird_watch:connector"' in files["pyproject.toml"]
    assert "class TestBirdWatchContract(ConnectorContract)" in files["tests/test_contract.py"]
    assert "class BirdWatchOptions(ConnectorOptions)" in files["switchboard_bird_watch/options.py"]
    assert not any("[[" in text for text in files.values())


@pytest.mark.parametrize("name", ["x", "bird_watch", "abcdefghij_klmnopqrst_uvwxyz_abc"])
def test_the_package_is_lint_clean_whatever_the_name_s_length(tmp_path: Path, name: str) -> None:
    # The author's own `ruff check` and `ruff format --check` (the package's pyproject
    # settings) pass on the fresh package, from a one-letter name to the longest allowed.
    root = write_package(name, tmp_path)
    for command in (["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]):
        run = subprocess.run(
            [sys.executable, "-m", "ruff", *command],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stdout + run.stderr


def test_a_new_connector_s_tests_pass_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["connectors", "new", "recipes", "--dir", str(tmp_path)]) == 0
    root = tmp_path / "switchboard-recipes"
    out = capsys.readouterr().out
    assert f"created {root}" in out
    # The next steps install with the server's own interpreter, where the server finds it.
    assert f"  {sys.executable} -m pip install -e ." in out
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env = {k: v for k, v in env.items() if not k.startswith("SWITCHBOARD_")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # The contract kit's 5 tests, 3 demo tests and 2 approval flows (approved, declined).
    assert "10 passed" in run.stdout and "skipped" not in run.stdout, run.stdout
