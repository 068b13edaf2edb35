"""How the browser tests run Debian's chromium: its path and flags, the window size, and
how long a wait on the page may take."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 900}
# Fail fast: every wait in these tests is for something a healthy page does in well under
# a second or two.
WAIT_MS = 10_000
