"""Connecting accounts from the page: the connect card in a chat, and the connections panel."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Page

from tests.browser.pages import body_items, open_ui, send, wait_chips, wait_turns_ended
from tests.support.servers import LiveServer


async def connectors(live: LiveServer) -> dict[str, dict[str, Any]]:
    async with live.client() as http:
        response = await http.get("/api/connectors")
        response.raise_for_status()
        return {c["name"]: c for c in response.json()["connectors"]}


async def test_a_demo_account_connects_from_its_card_and_the_question_is_asked_again(
    live: LiveServer, page: Page
) -> None:
    async with live.client() as http:
        (await http.delete("/api/connectors/gmail")).raise_for_status()
    assert (await connectors(live))["gmail"]["connected"] is False

    await open_ui(page, live.http)
    await send(page, "what's in my inbox")
    await wait_turns_ended(page, 1)
    card = page.locator("#transcript .card-google_account_needed")
    await card.get_by_role("button", name="Connect Google").click()
    await card.get_by_text("Connected.").wait_for()
    assert (await connectors(live))["gmail"]["connected"] is True

    await card.get_by_role("button", name="Ask again").click()
    await wait_chips(page, turns=2)
    assert "card:google_email_inbox" in await body_items(page)
    prompts = await page.locator("#transcript .message.user").all_inner_texts()
    assert prompts == ["what's in my inbox", "what's in my inbox"]


async def test_the_connections_panel_lists_modes_and_connects_and_disconnects(
    live: LiveServer, page: Page
) -> None:
    await open_ui(page, live.http)
    await page.get_by_role("button", name="Connections").click()
    panel = page.locator("#connections-dialog")
    await panel.locator(".connector").first.wait_for()
    names = await panel.locator(".connector").evaluate_all(
        "els => els.map(e => e.dataset.connector)"
    )
    assert sorted(names) == sorted(await connectors(live))

    gmail = panel.locator(".connector[data-connector=gmail]")
    assert await gmail.locator(".badge").inner_text() == "demo"
    assert await gmail.locator(".connector-state").inner_text() == "Connected: me@example.com"
    await gmail.get_by_role("button", name="Disconnect Gmail").click()
    await gmail.get_by_text("Not connected").wait_for()
    assert (await connectors(live))["gmail"]["connected"] is False

    await gmail.get_by_role("button", name="Connect Gmail").click()
    await gmail.get_by_text("Connected: me@example.com").wait_for()
    assert (await connectors(live))["gmail"]["connected"] is True

    # A connector on the server's own keys has nothing to connect.
    yelp = panel.locator(".connector[data-connector=yelp]")
    assert await yelp.locator(".connector-state").inner_text() == "Always available"
    assert await yelp.get_by_role("button").count() == 0

    await page.keyboard.press("Escape")
    await panel.wait_for(state="hidden")
