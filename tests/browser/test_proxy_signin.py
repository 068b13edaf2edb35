"""Header mode in the browser: the page is signed in by the proxy in front (here the
browser itself sends the proxy's header, from the trusted loopback address), asks for
nothing and offers no sign-out of its own."""

from __future__ import annotations

from collections.abc import Callable

from playwright.async_api import Browser

from app.settings import Settings
from tests.browser.pages import open_ui, send, wait_turns_ended
from tests.support.browser import DESKTOP, WAIT_MS
from tests.support.servers import serve


async def test_the_page_uses_the_proxy_s_user(
    ui_settings: Callable[..., Settings], browser: Browser
) -> None:
    settings = ui_settings(
        offline_delta_delay=0.002, auth_mode="header", trusted_proxies="127.0.0.1"
    )
    context = await browser.new_context(
        viewport=DESKTOP,
        bypass_csp=True,
        extra_http_headers={"X-Forwarded-User": "u-77", "X-Forwarded-Email": "lin@example.com"},
    )
    try:
        async with serve(settings) as live:
            page = await context.new_page()
            page.set_default_timeout(WAIT_MS)
            await open_ui(page, live.http)
            assert await page.text_content("#whoami") == "Signed in as lin@example.com"
            assert await page.is_hidden("#sign-out")
            assert await page.is_hidden("#token-dialog")
            await send(page, "What are my account balances?")
            await wait_turns_ended(page, 1)
    finally:
        await context.close()
