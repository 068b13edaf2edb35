"""Feedback on answers in Chromium: thumbs up or down under a finished answer, by mouse
and keyboard, a comment after a thumbs-down, the saved rating shown after a reload, and
a refusal shown (with nothing pressed) when the server cannot store it."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Page, expect

from tests.browser.pages import chat_id_of, open_ui, send, wait_chips
from tests.support.servers import LiveServer

HOSTILE = 'Wrong month <img src=x id="injected"> **not bold**'


async def stored(live: LiveServer, chat_id: str) -> list[Any]:
    """Each turn's rating, as the REST API returns it."""
    async with live.client() as http:
        response = await http.get(f"/api/chats/{chat_id}")
        response.raise_for_status()
        return [turn["feedback"] for turn in response.json()["turns"]]


async def test_rate_comment_reload_change_and_clear(live: LiveServer, page: Page) -> None:
    await open_ui(page, live.http)
    await send(page, "find coffee near me")
    await wait_chips(page)
    chat_id = chat_id_of(page)
    up = page.get_by_role("button", name="Good answer")
    down = page.get_by_role("button", name="Bad answer")
    await expect(up).to_have_attribute("aria-pressed", "false")
    await expect(down).to_have_attribute("aria-pressed", "false")

    # By keyboard: Tab-reachable buttons, Enter presses; the comment box takes the focus.
    await down.focus()
    await page.keyboard.press("Enter")
    await expect(down).to_have_attribute("aria-pressed", "true")
    comment = page.get_by_label("What was wrong? (optional)")
    await expect(comment).to_be_focused()
    await comment.fill(HOSTILE)
    await page.keyboard.press("Control+Enter")  # saves (a plain Enter is a new line)
    note = page.locator("#transcript .feedback-note")
    await expect(note).to_have_text(f"Your comment: {HOSTILE}")
    await expect(comment).to_be_hidden()
    saved = await stored(live, chat_id)
    assert [(f["rating"], f["comment"]) for f in saved] == [("down", HOSTILE)]

    # After a reload the rating and its comment are shown again, as text.
    await page.reload()
    await wait_chips(page)
    await expect(down).to_have_attribute("aria-pressed", "true")
    await expect(up).to_have_attribute("aria-pressed", "false")
    await expect(note).to_have_text(f"Your comment: {HOSTILE}")
    assert await page.locator("#injected").count() == 0

    # Esc closes an opened comment box without saving; its button saves an edit.
    await page.get_by_role("button", name="Edit comment").click()
    await comment.fill("never sent")
    await page.keyboard.press("Escape")
    await expect(comment).to_be_hidden()
    assert (await stored(live, chat_id))[0]["comment"] == HOSTILE
    await page.get_by_role("button", name="Edit comment").click()
    await comment.fill("Still the wrong month")
    await page.get_by_role("button", name="Save comment").click()
    await expect(note).to_have_text("Your comment: Still the wrong month")
    assert (await stored(live, chat_id))[0]["comment"] == "Still the wrong month"

    # The other thumb replaces the rating (and its comment); pressing it again clears it.
    await up.click()
    await expect(up).to_have_attribute("aria-pressed", "true")
    await expect(down).to_have_attribute("aria-pressed", "false")
    await expect(note).to_be_hidden()
    assert [(f["rating"], f["comment"]) for f in await stored(live, chat_id)] == [("up", None)]
    await up.click()
    await expect(up).to_have_attribute("aria-pressed", "false")
    assert await stored(live, chat_id) == [None]


async def test_a_refusal_is_shown_and_nothing_stays_pressed(live: LiveServer, page: Page) -> None:
    await open_ui(page, live.http)
    await send(page, "what are my account balances")
    await wait_chips(page)
    chat_id = chat_id_of(page)
    # Deleted elsewhere (another tab): the server no longer has the answer to rate.
    async with live.client() as http:
        assert (await http.delete(f"/api/chats/{chat_id}")).status_code == 204
    up = page.get_by_role("button", name="Good answer")
    await up.click()
    await expect(page.get_by_role("alert").filter(has_text="feedback")).to_have_text(
        "Could not save your feedback: chat not found"
    )
    await expect(up).to_have_attribute("aria-pressed", "false")
    await expect(up).to_be_enabled()
