"""Node clients of a live server: the npm packages of ``tests/node`` (pinned by its
package-lock.json) and a way to run a script with them.

``make node-deps`` installs the packages before ``make test``; ``node_ready()`` does the same
when a test runs on its own, once, under a file lock so parallel workers do not race. With
no ``node`` on the machine the node tests are skipped, except under ``CI=true``, where
they fail: CI must run them.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
LOCK = NODE_DIR / "package-lock.json"
# npm ci writes this last, so one newer than the lock file means the install is whole.
INSTALLED = NODE_DIR / "node_modules" / ".package-lock.json"
INSTALL_TIMEOUT = 600


def _installed() -> bool:
    return INSTALLED.exists() and INSTALLED.stat().st_mtime >= LOCK.stat().st_mtime


def node_ready() -> str:
    """The ``node`` executable, with ``tests/node``'s packages installed; skips (or, in
    CI, fails) the test when there is no node."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        reason = (
            "node and npm are needed for the node client tests (Debian: apt-get install nodejs npm)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: the node tests must run)")
        pytest.skip(reason)
    if not _installed():
        with open(NODE_DIR / ".install.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be installing
            if not _installed():
                done = subprocess.run(
                    [npm, "ci", "--no-audit", "--no-fund"],
                    cwd=NODE_DIR,
                    capture_output=True,
                    text=True,
                    timeout=INSTALL_TIMEOUT,
                )
                if done.returncode != 0:
                    pytest.fail(f"npm ci in {NODE_DIR} failed:\n{done.stderr[-2000:]}")
    return node


async def run_node(node: str, script: Path, env: dict[str, str], within: float = 120) -> Any:
    """Run ``script`` with ``node`` (from ``node_ready``, called before the test's event
    loop serves anything: an install blocks); its imports resolve in ``tests/node``. Its
    stdout, as JSON when it is JSON, else as text."""
    process = await asyncio.create_subprocess_exec(
        node,
        str(script),
        cwd=NODE_DIR,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), within)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"{script.name} did not finish within {within} s") from None
    assert process.returncode == 0, f"{script.name} failed:\n{err.decode()[-3000:]}"
    text = out.decode()
    try:
        return json.loads(text)
    except ValueError:
        return text
