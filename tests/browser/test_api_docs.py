"""``/docs`` in a browser that enforces the page's Content-Security-Policy: Swagger UI
renders every operation of /openapi.json and runs a call, with no violation reported."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from playwright.async_api import Browser

from app.settings import Settings
from tests.browser.pages import csp_violations
from tests.support.browser import DESKTOP, WAIT_MS
from tests.support.servers import LiveServer, serve


@pytest.fixture
async def live(ui_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    async with serve(ui_settings()) as server:
        yield server


async def test_swagger_ui_renders_the_document_under_its_policy(
    live: LiveServer, browser: Browser
) -> None:
    async with live.client() as http:
        document: dict[str, Any] = (await http.get("/openapi.json")).json()
    operations = sum(len(item) for item in document["paths"].values())
    context = await browser.new_context(viewport=DESKTOP)  # the policy is enforced
    try:
        page = await context.new_page()
        violations = csp_violations(page)
        outside: list[str] = []
        page.on(
            "request",
            lambda request: (
                outside.append(request.url) if not request.url.startswith(live.http) else None
            ),
        )
        await page.goto(live.http + "/docs")
        blocks = page.locator(".opblock")
        await blocks.nth(operations - 1).wait_for(timeout=WAIT_MS * 3)
        assert await blocks.count() == operations
        # Try it out: GET /healthz from the page, answered 200.
        health = page.locator("#operations-service-get_healthz")
        await health.locator(".opblock-summary").click()
        await health.get_by_role("button", name="Try it out").click(timeout=WAIT_MS)
        await health.get_by_role("button", name="Execute").click(timeout=WAIT_MS)
        status = health.locator(".live-responses-table tbody .response-col_status").first
        await status.wait_for(timeout=WAIT_MS)
        assert (await status.inner_text()).strip().startswith("200")
        assert violations == []
        assert outside == []
    finally:
        await context.close()
