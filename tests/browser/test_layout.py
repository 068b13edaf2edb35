"""Phone width, light and dark, token sign-in, and the reconnect schedule."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.async_api import Browser, Page

from app.settings import Settings
from storage.users import UserRepository
from tests.browser.pages import approval_card, approve, body_items, open_ui, send, wait_chips
from tests.support.browser import WAIT_MS
from tests.support.servers import LiveServer, serve

PHONE = {"width": 390, "height": 844}


async def overflow(page: Page) -> dict[str, object]:
    """How far the page and the conversation run past the phone's width (0: not at all)."""
    return await page.evaluate(
        """w => {
        const scroller = document.getElementById('scroller');
        const wide = [...document.querySelectorAll(
                '#transcript .card, #transcript .approval, #transcript .approval button, '
                + '#transcript .approval input, #transcript .message, .composer')]
            .filter(el => el.getBoundingClientRect().right > w + 0.5).map(el => el.className);
        return {page: document.documentElement.scrollWidth,
                scroller: scroller.scrollWidth - scroller.clientWidth, wide};
    }""",
        PHONE["width"],
    )


async def test_phone_width_layout(live: LiveServer, browser: Browser) -> None:
    context = await browser.new_context(viewport=PHONE, bypass_csp=True, has_touch=True)
    try:
        page = await context.new_page()
        page.set_default_timeout(WAIT_MS)
        await open_ui(page, live.http)
        # The chat list is tucked away behind the menu button.
        assert not await page.locator("#sidebar").is_visible()
        menu = page.locator("#open-sidebar")
        assert await menu.is_visible()

        await send(page, "find sushi in Boston and email the list to bob@example.com")
        # The approval card, its buttons and its reason field fit the phone too.
        card = approval_card(page, "pending")
        await card.wait_for()
        assert await overflow(page) == {"page": PHONE["width"], "scroller": 0, "wide": []}
        await card.get_by_role("button", name="Reject").click()
        assert await overflow(page) == {"page": PHONE["width"], "scroller": 0, "wide": []}
        await card.get_by_role("button", name="Back").click()
        await approve(page)
        await wait_chips(page)
        assert await body_items(page) == [
            "agent:Yelp",
            "card:yelp_search_results",
            "agent:GMail",
            "approval:send_google_email",
            "card:send_google_email",
            "text",
        ]
        assert await overflow(page) == {"page": PHONE["width"], "scroller": 0, "wide": []}
        composer = await page.locator("#composer").bounding_box()
        assert composer is not None and composer["y"] + composer["height"] <= PHONE["height"]

        await menu.click()
        sidebar = page.locator("#sidebar")
        await sidebar.wait_for(state="visible")
        assert await menu.get_attribute("aria-expanded") == "true"
        assert await page.locator("#chat-list a.chat-link").count() == 1
        await page.keyboard.press("Escape")
        await sidebar.wait_for(state="hidden")
        assert await menu.get_attribute("aria-expanded") == "false"
    finally:
        await context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_light_and_dark_follow_the_system(
    live: LiveServer, browser: Browser, scheme: str
) -> None:
    context = await browser.new_context(color_scheme=scheme, bypass_csp=True)
    try:
        page = await context.new_page()
        await open_ui(page, live.http)
        colours = await page.evaluate("""() => {
            const lum = c => {
                const [r, g, b] = c.match(/\\d+/g).map(Number).map(v => v / 255);
                return 0.2126 * r + 0.7152 * g + 0.0722 * b;
            };
            const style = getComputedStyle(document.body);
            return {bg: lum(style.backgroundColor), fg: lum(style.color)};
        }""")
    finally:
        await context.close()
    if scheme == "dark":
        assert colours["bg"] < 0.15 < 0.75 < colours["fg"]
    else:
        assert colours["fg"] < 0.15 < 0.75 < colours["bg"]


async def test_token_mode_asks_for_a_token_and_keeps_it_in_the_browser(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    async with serve(ui_settings(auth_mode="token")) as live:
        _, token = await UserRepository(live.services.db).create_user("ann")
        await page.goto(live.http + "/")
        dialog = page.locator("#token-dialog")
        await dialog.wait_for()
        await page.fill("#token-input", "sb_not-a-real-token")
        await page.press("#token-input", "Enter")
        await page.get_by_text("That token was not accepted.").wait_for()
        # Escape does not get past the sign-in.
        await page.keyboard.press("Escape")
        assert await dialog.is_visible()

        await page.fill("#token-input", token)
        await page.press("#token-input", "Enter")
        await dialog.wait_for(state="hidden")
        assert await page.locator("#whoami").inner_text() == "Signed in as ann"
        assert await page.evaluate("() => ({...localStorage})") == {"switchboard.token": token}

        # The socket and the API both carry the token.
        await send(page, "what are my account balances")
        await wait_chips(page)
        await page.wait_for_selector("#chat-list a.chat-link")

        await page.reload()
        await open_ui(page, live.http, page.url.removeprefix(live.http))
        assert not await dialog.is_visible()
        # The history is fetched after the page opens: wait for it before counting.
        await page.locator("#transcript .turn").first.wait_for()
        assert await page.locator("#transcript .turn").count() == 1

        await page.get_by_role("button", name="Sign out").click()
        await dialog.wait_for()
        assert await page.evaluate("() => ({...localStorage})") == {}


async def test_reconnect_delays_grow_with_jitter_up_to_a_cap(live: LiveServer, page: Page) -> None:
    await open_ui(page, live.http)
    delays = await page.evaluate("""async () => {
        const { backoffDelay, BACKOFF } = await import('/static/js/backoff.js');
        const at = (attempt, r) => backoffDelay(attempt, BACKOFF, () => r);
        return {
            low: [0, 1, 2, 3, 4, 5, 10].map(a => at(a, 0)),
            high: [0, 1, 2, 3, 4, 5, 10].map(a => at(a, 1)),
            random: Array.from({length: 200}, () => backoffDelay(3)),
            cap: BACKOFF.capMs,
        };
    }""")
    assert delays["high"] == [500, 1000, 2000, 4000, 8000, 15000, 15000]
    assert delays["low"] == [250, 500, 1000, 2000, 4000, 7500, 7500]
    assert all(2000 <= d <= 4000 for d in delays["random"])
    assert len(set(delays["random"])) > 20, "no jitter: reconnects would arrive together"
