"""deploy/docker-entrypoint.sh, the image's entrypoint: secrets from files, then exec."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.deploy.topology import ENTRYPOINT

# A database URL with the characters a shell could mangle.
URL = "postgresql+asyncpg://sb:p%40ss$word 'x'@db:5432/switchboard"


def entrypoint(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(ENTRYPOINT), *command],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_file_secrets_become_variables_exactly(tmp_path: Path) -> None:
    (tmp_path / "url").write_text(URL + "\n")  # as an editor saves it
    (tmp_path / "key").write_text("k" * 44)
    done = entrypoint(
        {
            "SWITCHBOARD_DATABASE_URL_FILE": str(tmp_path / "url"),
            "SWITCHBOARD_SECRET_KEY_FILE": str(tmp_path / "key"),
            "SWITCHBOARD_PORT": "8000",
        },
        "env",
    )
    assert done.returncode == 0, done.stderr
    variables = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert variables["SWITCHBOARD_DATABASE_URL"] == URL
    assert variables["SWITCHBOARD_SECRET_KEY"] == "k" * 44
    assert variables["SWITCHBOARD_PORT"] == "8000"
    assert not [name for name in variables if name.endswith("_FILE")]


def test_the_command_replaces_the_script_so_signals_reach_it(tmp_path: Path) -> None:
    process = subprocess.Popen(
        ["sh", str(ENTRYPOINT), "sh", "-c", "echo $$"],
        env={"PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        text=True,
    )
    out, _ = process.communicate(timeout=30)
    assert int(out) == process.pid  # exec: no shell left in between to swallow SIGTERM


def test_a_secret_set_twice_or_unreadable_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "key").write_text("from-file")
    both = entrypoint(
        {"SWITCHBOARD_SECRET_KEY": "inline", "SWITCHBOARD_SECRET_KEY_FILE": str(tmp_path / "key")},
        "true",
    )
    assert both.returncode == 2
    assert "both SWITCHBOARD_SECRET_KEY and SWITCHBOARD_SECRET_KEY_FILE" in both.stderr
    assert "from-file" not in both.stderr + both.stdout and "inline" not in both.stderr

    missing = entrypoint({"SWITCHBOARD_SECRET_KEY_FILE": str(tmp_path / "nope")}, "true")
    assert missing.returncode == 2
    assert f"SWITCHBOARD_SECRET_KEY_FILE names {tmp_path / 'nope'}" in missing.stderr
