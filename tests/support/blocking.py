"""The suite runs with blocking calls on the event loop made errors (blockbuster, as the
contract kit runs tools: ``connectors.testing.blocking``).

Scanned: our own packages. A blocking call (``time.sleep``, a blocking socket, a file read,
a SQLite call, a held ``threading.Lock``) made on a running event loop with any of our
modules on its stack raises ``BlockingError`` where it is made, and the test fails there:
the server's code, a connector's tools (theirs run under ``connectors.tooling``) and the
tools the kit calls. What a test does itself on the loop (reading a fixture file, starting
a subprocess) is not scanned, nor is the kit's own work around the calls (generating
arguments, finding a tool's source line: ``NOT_OURS``): that is test set-up, and blocks no
user.

Accepted as they are (``ACCEPTED``): reading the settings (``load_settings``: the time
zone's file, a secret key file; once, before the server starts), the app's making
(``create_app`` reads its page template) and its start-up and shutdown (``start_services``:
migrations checked, a data directory made, once per process, before any socket is served
or after the last is closed); the watchdog's ``stop``, which joins its thread (woken at
once by the stop, and bounded to a second); a ``Database`` made (its SQLite folder and
file path resolved: once per app, at start-up); asyncpg's look for ``~/.pgpass`` and
``~/.postgresql`` certificates (a ``stat`` or two) when it opens a pool connection; the
renderers' one look through the installed distributions' entry points, on the first tool
result a process renders (a known cost, once per process: loading them at start-up would
move it off the first turn).

``@pytest.mark.blocking_allowed`` turns the check off for a test that blocks the loop on
purpose (the watchdog's tests). ``CHECKED`` lists the test directories it runs in.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from connectors.testing.blocking import detector

ROOT = Path(__file__).resolve().parents[2]
OUR_PACKAGES = ("app", "websocket", "connectors", "storage", "wire")
NOT_OURS = ("connectors.testing",)
# Where our code may block the loop: (file, function), any frame of the stack.
ACCEPTED = (
    ("app/settings.py", "load_settings"),
    ("app/main.py", "create_app"),
    ("app/services.py", "start_services"),
    ("app/watchdog.py", "stop"),
    ("storage/engine.py", "__init__"),
    ("asyncpg/connect_utils.py", "_parse_connect_dsn_and_args"),
    ("connectors/rendering.py", "_connector_render_modules"),
)
# The test directories run with the check.
CHECKED = (
    "tests/unit",
    "tests/connectors",
    "tests/ws",
    "tests/app",
    "tests/auth",
    "tests/rap",
    "tests/api",
    "tests/agui",
    "tests/openresponses",
    "tests/mcp",
    "tests/llm",
)


def is_checked(path: Path) -> bool:
    relative = path.resolve().relative_to(ROOT).as_posix() if path.is_absolute() else str(path)
    return any(relative == d or relative.startswith(d + "/") for d in CHECKED)


@contextmanager
def no_blocking_in_our_code() -> Iterator[None]:
    """Within the block, our code's blocking calls on a running event loop raise."""
    found = detector(OUR_PACKAGES, excluded=NOT_OURS)
    for function in found.functions.values():
        for filename, name in ACCEPTED:
            function.can_block_in(filename, name)
    found.activate()
    try:
        yield
    finally:
        found.deactivate()
