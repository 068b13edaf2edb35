"""Reviewing old chats: the sidebar, reopening a chat exactly as it looked, deleting."""

from __future__ import annotations

from playwright.async_api import Page

from tests.browser.pages import chat_id_of, open_ui, send, wait_chips
from tests.support.servers import LiveServer

# One prompt per card family the offline model produces.
PROMPTS = [
    "what's in my inbox",
    "open email ca425da8ea3b8409",
    "what are my account balances",
    "show my transactions from last week",
    "how much did I spend by category",
    "show reviews for Umi Sushi Bar in Boston",
    "search the web for python asyncio",
]
CARDS = {
    "google_email_inbox",
    "google_email_message",
    "plaid_accounts_response",
    "plaid_transactions_response",
    "plaid_spending_summary",
    "yelp_search_results",
    "yelp_reviews",
    "google_search_results",
}


async def transcript_html(page: Page) -> str:
    return await page.eval_on_selector("#transcript", "el => el.innerHTML")


async def test_an_old_chat_opened_from_the_sidebar_looks_exactly_as_it_did_live(
    live: LiveServer, page: Page
) -> None:
    await open_ui(page, live.http)
    for turn, prompt in enumerate(PROMPTS, 1):
        await send(page, prompt)
        await wait_chips(page, turns=turn)
    old_chat = chat_id_of(page)
    shown = set(
        await page.eval_on_selector_all(
            "#transcript .card", "els => els.map(el => el.dataset.responseType)"
        )
    )
    assert shown >= CARDS
    live_html = await transcript_html(page)

    await page.click("#new-chat")
    await page.wait_for_selector("#welcome:not([hidden])")
    assert await page.locator("#transcript .turn").count() == 0
    await send(page, "find coffee near me")
    await wait_chips(page)
    new_chat = chat_id_of(page)
    assert new_chat != old_chat

    # The sidebar lists both, newest first, with their titles.
    links = page.locator("#chat-list a.chat-link")
    await page.wait_for_function(
        "() => document.querySelectorAll('#chat-list a.chat-link').length === 2"
    )
    assert [await links.nth(i).get_attribute("data-chat-id") for i in range(2)] == [
        new_chat,
        old_chat,
    ]
    assert await links.nth(0).get_attribute("aria-current") == "page"

    await links.nth(1).click()
    await page.wait_for_function(
        "n => document.querySelectorAll('#transcript .turn').length === n", arg=len(PROMPTS)
    )
    await page.wait_for_function("() => !document.getElementById('transcript').ariaBusy")
    assert chat_id_of(page) == old_chat
    assert await transcript_html(page) == live_html
    assert await links.nth(1).get_attribute("aria-current") == "page"

    # A reload renders the same history again.
    await page.reload()
    await page.wait_for_function(
        "n => document.querySelectorAll('#transcript .turn').length === n", arg=len(PROMPTS)
    )
    assert await transcript_html(page) == live_html


async def test_deleting_a_chat_asks_first_and_removes_it(live: LiveServer, page: Page) -> None:
    await open_ui(page, live.http)
    await send(page, "what are my account balances")
    await wait_chips(page)
    chat_id = chat_id_of(page)
    item = page.locator(f"#chat-list li:has(a[data-chat-id='{chat_id}'])")
    await item.wait_for()

    # Cancel keeps it.
    await item.locator("button.delete-chat").click()
    dialog = page.locator("#confirm-dialog")
    await dialog.wait_for()
    # Named as the chat list names it (its title, or its first prompt until it has one).
    assert "what are my account balances" in (await dialog.inner_text()).lower()
    await dialog.locator("button[value=cancel]").click()
    await dialog.wait_for(state="hidden")
    async with live.client() as http:
        assert (await http.get(f"/api/chats/{chat_id}")).status_code == 200

    # Confirm deletes it, and the open chat becomes a new one.
    await item.locator("button.delete-chat").click()
    await dialog.locator("button[value=confirm]").click()
    await item.wait_for(state="detached")
    async with live.client() as http:
        assert (await http.get(f"/api/chats/{chat_id}")).status_code == 404
    await page.wait_for_selector("#welcome:not([hidden])")
    assert await page.locator("#transcript .turn").count() == 0
    assert await page.locator("#chat-title").inner_text() == "New chat"
