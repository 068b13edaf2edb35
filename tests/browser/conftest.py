"""Browser tests: Debian's chromium, driven by Playwright, against the real server.

Every test starts the real app in-process on a free loopback port (``serve`` of
``tests/support/servers.py``) and opens the bundled UI in a fresh browser context. The browser
is launched once per session. The tests run on SQLite only: what they check is the page,
and the socket and storage suites already run every server path on both engines. Each test
gets its own database, copied from one migrated template, so the chat list starts empty.

Pages run with ``bypass_csp=True`` (Playwright's waits evaluate JavaScript, which our
Content-Security-Policy forbids, rightly) — which also means the XSS tests prove the
sanitizer alone keeps payloads inert. ``test_security.py`` checks the policy itself in a
context that enforces it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright

from app.settings import Settings, load_settings
from storage.migrate import upgrade
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, DESKTOP, WAIT_MS
from tests.support.servers import LiveServer, serve


@pytest.fixture(scope="session")
def chromium() -> Path:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: run `make browser-deps` (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return CHROMIUM


@pytest.fixture(scope="session")
async def browser(chromium: Path) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(chromium), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("browser-template") / "template.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture
def ui_settings(migrated_template: Path, tmp_path: Path) -> Callable[..., Settings]:
    """Settings on a fresh copy of the migrated database (one per call)."""
    made = 0

    def make(**overrides: Any) -> Settings:
        nonlocal made
        made += 1
        database = tmp_path / f"ui-{made}.db"
        shutil.copyfile(migrated_template, database)
        values: dict[str, Any] = {
            "database_url": f"sqlite+aiosqlite:///{database}",
            "data_dir": tmp_path / "data",
        }
        values.update(overrides)
        return load_settings(**values)

    return make


@pytest.fixture
async def live(ui_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    async with serve(ui_settings(offline_delta_delay=0.002)) as server:
        yield server


@pytest.fixture
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:
    ctx = await browser.new_context(viewport=DESKTOP, bypass_csp=True)
    try:
        yield ctx
    finally:
        await ctx.close()


@pytest.fixture
async def page(context: BrowserContext) -> AsyncIterator[Page]:
    """A page that fails the test on any uncaught error in the UI's scripts."""
    opened = await context.new_page()
    opened.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    assert not errors, f"uncaught errors in the page: {errors}"
