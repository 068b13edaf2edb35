"""The sidebar's history tools in Chromium: date groups, search, rename, export."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from playwright.async_api import Page
from sqlalchemy import update

from storage.models import chats
from tests.browser.pages import chat_id_of, open_ui, send, wait_chips, wait_turns_ended
from tests.support.servers import LiveServer


async def new_chat_with(page: Page, prompt: str) -> str:
    await page.click("#new-chat")
    await page.wait_for_selector("#welcome:not([hidden])")
    await send(page, prompt)
    await wait_chips(page)
    return chat_id_of(page)


async def chat_ids_shown(page: Page) -> list[str]:
    return await page.eval_on_selector_all(
        "#chat-list a.chat-link", "els => els.map(el => el.dataset.chatId)"
    )


async def wait_chat_count(page: Page, count: int) -> None:
    await page.wait_for_function(
        "n => document.querySelectorAll('#chat-list a.chat-link').length === n", arg=count
    )


async def test_groups_search_rename_and_export(
    live: LiveServer, page: Page, tmp_path: Path
) -> None:
    await open_ui(page, live.http)
    await send(page, "find coffee near me")
    await wait_chips(page)
    coffee = chat_id_of(page)
    balances = await new_chat_with(page, "what are my account balances")
    inbox = await new_chat_with(page, "what's in my inbox")
    await wait_chat_count(page, 3)

    # Age two chats; the sidebar groups by the viewer's days.
    now = datetime.now(UTC)
    async with live.services.db.session(write=True) as session:
        for chat_id, age in ((balances, timedelta(days=3)), (coffee, timedelta(days=40))):
            await session.execute(
                update(chats).where(chats.c.id == chat_id).values(updated_at=now - age)
            )
        await session.commit()
    await page.reload()
    await wait_chat_count(page, 3)
    groups = await page.eval_on_selector_all(
        "#chat-list .chat-group-title", "els => els.map(el => el.textContent)"
    )
    assert groups == ["Today", "Previous 7 days", "Older"]
    assert await chat_ids_shown(page) == [inbox, balances, coffee]

    # Search: only the matching chat, with a snippet, no groups; Escape brings all back.
    await page.fill("#chat-search", "coffee")
    await page.wait_for_function(
        "() => document.getElementById('chat-list-status').textContent === '1 chat matches.'"
    )
    assert await chat_ids_shown(page) == [coffee]
    snippet = await page.text_content("#chat-list .chat-snippet")
    assert snippet is not None and "coffee" in snippet.lower()
    assert await page.locator("#chat-list .chat-group").count() == 0
    await page.fill("#chat-search", "zzzz-nothing")
    await page.wait_for_selector("#chat-list .empty:has-text('No chats match.')")
    await page.press("#chat-search", "Escape")
    await wait_chat_count(page, 3)

    # Rename by double-click: the list, the page title and the server agree.
    await page.dblclick(f"#chat-list a.chat-link[data-chat-id='{inbox}']")
    await page.fill("#chat-list .chat-rename", "  Inbox triage  ")
    await page.press("#chat-list .chat-rename", "Enter")
    renamed = f"#chat-list a.chat-link[data-chat-id='{inbox}'] .chat-title"
    await page.wait_for_selector(f"{renamed}:has-text('Inbox triage')")
    async with live.client() as http:
        assert (await http.get(f"/api/chats/{inbox}")).json()["title"] == "Inbox triage"
    # Escape leaves the title as it was.
    await page.dblclick(f"#chat-list a.chat-link[data-chat-id='{inbox}']")
    await page.fill("#chat-list .chat-rename", "not this")
    await page.press("#chat-list .chat-rename", "Escape")
    assert await page.text_content(renamed) == "Inbox triage"

    if os.environ.get("SWITCHBOARD_HISTORY_SCREENSHOT"):
        await page.click(f"#chat-list li.chat-item[data-chat-id='{inbox}'] .chat-menu-button")
        await page.screenshot(path=os.environ["SWITCHBOARD_HISTORY_SCREENSHOT"])
        await page.keyboard.press("Escape")

    # Export from the chat's menu: a Markdown file named after the title.
    for extension, entry in (("md", "Download as Markdown"), ("json", "Download as JSON")):
        await page.click(f"#chat-list li.chat-item[data-chat-id='{inbox}'] .chat-menu-button")
        async with page.expect_download() as waiting:
            await page.get_by_role("menuitem", name=entry).click()
        download = await waiting.value
        assert download.suggested_filename == f"Inbox-triage.{extension}"
        saved = tmp_path / download.suggested_filename
        await download.save_as(saved)
        text = saved.read_text()
        if extension == "md":
            assert text.startswith("# Inbox triage\n")
            assert "what's in my inbox" in text and "## Assistant" in text
        else:
            assert '"type":"user_prompt"' in text.replace(" ", "")


async def test_an_old_connect_card_shows_the_connection_as_it_is_now(
    live: LiveServer, page: Page
) -> None:
    async with live.client() as http:
        (await http.delete("/api/connectors/gmail")).raise_for_status()
    await open_ui(page, live.http)
    await send(page, "what's in my inbox")
    await wait_turns_ended(page, 1)
    card = page.locator("#transcript .card-google_account_needed")
    connect = card.get_by_role("button", name="Connect Google")
    await connect.wait_for()

    # Connected elsewhere (another tab, the API): the reopened chat's card says so.
    async with live.client() as http:
        (await http.post("/api/connectors/gmail/connect")).raise_for_status()
    await page.reload()
    await card.get_by_text("Connected.").wait_for()
    assert not await connect.is_visible()
    assert await card.get_by_role("button", name="Ask again").is_visible()

    # Disconnected again: the card offers to connect again.
    async with live.client() as http:
        (await http.delete("/api/connectors/gmail")).raise_for_status()
    await page.reload()
    await connect.wait_for()
    assert not await card.get_by_role("button", name="Ask again").is_visible()
    assert await card.locator(".connect-status").text_content() == ""
