"""Regenerate, edit and continue in the bundled UI (docs/protocol.md, "Regenerate, edit and
continue"): the buttons, the inline editor, the superseded turns folded away, the
continuation after a stopped answer, and a reload showing the same."""

from __future__ import annotations

from collections.abc import Callable

from playwright.async_api import Page

from app.settings import Settings
from tests.browser.pages import (
    approve,
    assistant_texts,
    chat_id_of,
    open_ui,
    rest_events,
    send,
    wait_chips,
    wait_turns_ended,
)
from tests.browser.test_resilience import PROMPT, SLOW, wait_streaming
from tests.support.servers import LiveServer, serve

EMAIL = "find sushi in Boston and email the list to bob@example.com"


async def turn_states(page: Page) -> list[dict[str, object]]:
    """Each turn as the page shows it."""
    return await page.eval_on_selector_all(
        "#transcript .turn",
        """els => els.map(el => ({
            superseded: el.classList.contains('superseded'),
            folded: el.classList.contains('folded'),
            note: el.querySelector(':scope > .superseded-note span')?.textContent ?? null,
            continued: el.classList.contains('continuation'),
            prompt: el.querySelector(':scope > .message.user p')?.textContent ?? null,
            actions: [...el.querySelectorAll(':scope > .turn-actions button')]
                .map(b => b.dataset.action),
        }))""",
    )


async def test_regenerate_folds_the_old_answer_and_a_reload_shows_the_same(
    live: LiveServer, page: Page
) -> None:
    await open_ui(page, live.http)
    await send(page, "hello")
    await wait_chips(page, 1)
    first = await turn_states(page)
    assert [t["actions"] for t in first] == [["regenerate"]]
    await page.get_by_role("button", name="Regenerate").click()
    await wait_chips(page, 2)
    shown = await turn_states(page)
    assert [(t["superseded"], t["folded"], t["note"], t["prompt"]) for t in shown] == [
        (True, True, "Replaced by a newer answer", "hello"),
        (False, False, None, "hello"),
    ]
    assert [t["actions"] for t in shown] == [[], ["regenerate"]]
    # Folded, the old answer is out of sight; "Show" brings it back, dimmed.
    old = page.locator("#transcript .turn").first
    assert await old.locator(".turn-body").is_hidden()
    toggle = old.get_by_role("button", name="Show")
    await toggle.click()
    assert await old.locator(".turn-body").is_visible()
    assert await old.get_by_role("button", name="Hide").get_attribute("aria-expanded") == "true"
    texts = await assistant_texts(page)
    marks = [e for e in await rest_events(live, chat_id_of(page)) if e["type"] == "turn_superseded"]
    assert len(texts) == 2 and len(marks) == 1

    await page.reload()
    await wait_turns_ended(page, 2)
    assert await turn_states(page) == shown
    assert await assistant_texts(page) == texts


async def test_edit_in_place_replaces_that_turn_and_the_ones_after(
    live: LiveServer, page: Page
) -> None:
    await open_ui(page, live.http)
    for turn, prompt in enumerate(("hello", "what can you do?"), 1):
        await send(page, prompt)
        await wait_chips(page, turn)
    first = page.locator("#transcript .turn").first
    await first.hover()
    await first.get_by_role("button", name="Edit message").click()
    editor = page.get_by_role("textbox", name="Edit your message")
    assert await editor.input_value() == "hello"
    assert await editor.evaluate("el => el === document.activeElement")
    assert await first.locator(".message.user").inner_text() == "Cancel\nSend"
    # Esc leaves it as it was.
    await editor.press("Escape")
    assert await editor.count() == 0
    assert (await turn_states(page))[0]["prompt"] == "hello"

    await first.hover()
    await first.get_by_role("button", name="Edit message").click()
    await editor.fill("help")
    await editor.press("Enter")
    await wait_chips(page, 3)
    shown = await turn_states(page)
    assert [(t["superseded"], t["note"], t["prompt"]) for t in shown] == [
        (True, "Replaced: the message was edited", "hello"),
        (True, "Replaced: the message was edited", "what can you do?"),
        (False, None, "help"),
    ]
    # Superseded messages offer nothing more.
    assert await page.get_by_role("button", name="Edit message").count() == 1

    await page.reload()
    await wait_turns_ended(page, 3)
    assert await turn_states(page) == shown


async def test_continue_after_stop_reads_on_below_the_stopped_answer(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    async with serve(ui_settings(offline_delta_delay=SLOW)) as live:
        await open_ui(page, live.http)
        await send(page, PROMPT)
        await wait_streaming(page, 5)
        await page.click("#cancel")
        await wait_turns_ended(page, 1)
        assert [t["actions"] for t in await turn_states(page)] == [["continue", "regenerate"]]
        await page.get_by_role("button", name="Continue").click()
        await page.locator("#transcript .turn.continuation").wait_for()
        await wait_turns_ended(page, 2)
        shown = await turn_states(page)
        assert [(t["superseded"], t["continued"], t["actions"]) for t in shown] == [
            (False, False, []),
            (False, True, ["regenerate"]),
        ]
        divider = page.locator("#transcript .turn.continuation > .message.user")
        assert await divider.inner_text() == "Continued"
        assert await page.locator("#transcript .turn.continuation .message.assistant").count() == 1
        # The stopped answer keeps its mark; no second bubble of the user's.
        assert await page.locator("#transcript .message.assistant.stopped").count() == 1

        await page.reload()
        await wait_turns_ended(page, 2)
        assert await turn_states(page) == shown
        assert await divider.inner_text() == "Continued"


async def test_regenerating_an_answer_that_sent_an_email_warns_first(
    live: LiveServer, page: Page
) -> None:
    await open_ui(page, live.http)
    await send(page, EMAIL)
    await approve(page)
    await wait_chips(page, 1)
    await page.get_by_role("button", name="Regenerate").click()
    warning = page.get_by_role("alert").filter(has_text="stays done")
    await warning.wait_for()
    await warning.get_by_role("button", name="Keep it").click()
    assert await warning.count() == 0
    assert len(await assistant_texts(page)) == 1  # nothing was sent
    await page.get_by_role("button", name="Regenerate").click()
    await warning.get_by_role("button", name="Regenerate anyway").click()
    # The new turn starts (and asks again before sending anything).
    await page.locator("#transcript .turn.superseded").wait_for()
