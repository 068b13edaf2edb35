"""Chatting in the browser: the multi-agent turn, cards, streamed text, chips, keyboard."""

from __future__ import annotations

from playwright.async_api import Page

from tests.browser.pages import (
    approval_card,
    approve,
    assistant_texts,
    body_items,
    chat_id_of,
    open_ui,
    rest_events,
    send,
    wait_chips,
)
from tests.support.servers import LiveServer

MULTI_AGENT = "find sushi in Boston and email the list to bob@example.com"


async def test_multi_agent_turn_shows_agents_cards_text_and_chips_in_order(
    live: LiveServer, page: Page
) -> None:
    await open_ui(page, live.http)
    await send(page, MULTI_AGENT)
    # The send waits for the person, right after its (now waiting) progress row.
    await approval_card(page, "pending").wait_for()
    assert await body_items(page) == [
        "agent:Yelp",
        "card:yelp_search_results",
        "agent:GMail",
        "tool:send_google_email",
        "approval:send_google_email",
    ]
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
    events = await rest_events(live, chat_id_of(page))
    final = next(e["text"] for e in events if e["type"] == "llm_response")
    suggestions = next(e["prompts"] for e in events if e["type"] == "suggested_prompts")
    assert await assistant_texts(page) == [final]
    # The Markdown is rendered, not shown as source.
    bold = await page.locator("#transcript .message.assistant strong").all_inner_texts()
    assert "Umi Sushi Bar" in bold
    assert await page.locator("#transcript .turn .chips .chip").all_inner_texts() == suggestions

    user = await page.locator("#transcript .turn .message.user").inner_text()
    assert user == MULTI_AGENT
    businesses = page.locator(".card-yelp_search_results .business")
    assert await businesses.count() == 4
    first = businesses.first
    assert await first.locator("h4").inner_text() == "Umi Sushi Bar"
    assert await first.locator(".stars").get_attribute("aria-label") == "Rated 4.4 out of 5"
    assert await first.locator(".price").inner_text() == "$$$"
    assert (
        await first.locator("h4 a").get_attribute("href")
        == "https://www.yelp.com/biz/umi-sushi-bar-boston"
    )
    sent = page.locator(".card-send_google_email")
    assert "Email sent" in await sent.inner_text()
    assert "bob@example.com" in await sent.locator(".fields").inner_text()

    # Nothing is left running: no spinner, no cursor, Stop hidden, Send usable.
    assert await page.locator(".tool-row.running, .message.streaming").count() == 0
    assert await page.locator("#cancel").is_hidden()
    assert await page.locator("#send").is_enabled()
    # The conversation now has its own address and is first in the chat list.
    await page.wait_for_selector(f"#chat-list a[data-chat-id='{chat_id_of(page)}']")


async def test_the_streaming_message_is_a_polite_live_region_while_it_streams(
    ui_settings, page: Page
) -> None:
    from tests.support.servers import serve

    async with serve(ui_settings(offline_delta_delay=0.04)) as server:
        await open_ui(page, server.http)
        await send(page, "search the web for python asyncio")
        streaming = page.locator("#transcript .message.assistant.streaming")
        await streaming.wait_for()
        assert await streaming.get_attribute("aria-live") == "polite"
        assert await streaming.get_attribute("aria-busy") == "true"
        await wait_chips(page)
        done = page.locator("#transcript .message.assistant")
        assert await done.get_attribute("aria-busy") == "false"
        assert await done.get_attribute("aria-live") == "polite"


async def test_a_suggested_prompt_chip_sends_its_prompt(live: LiveServer, page: Page) -> None:
    await open_ui(page, live.http)
    await send(page, "what are my account balances")
    await wait_chips(page)
    chip = page.locator("#transcript .turn:last-of-type .chips .chip").first
    text = await chip.inner_text()
    await chip.click()
    await wait_chips(page, turns=2)
    prompts = await page.locator("#transcript .turn .message.user").all_inner_texts()
    assert prompts == ["what are my account balances", text]
    # Only the newest turn offers chips.
    assert await page.locator("#transcript .turn:first-of-type .chips").is_hidden()


async def test_citations_link_to_the_cited_sources(live: LiveServer, page: Page) -> None:
    await open_ui(page, live.http)
    await send(page, "search the web for python asyncio")
    await wait_chips(page)
    events = await rest_events(live, chat_id_of(page))
    chunks = next(e["output"]["content_chunks"] for e in events if e["type"] == "tool_output")
    citations = page.locator("#transcript .message.assistant a.citation")
    assert await citations.count() >= 2
    for index in range(await citations.count()):
        link = citations.nth(index)
        number = (await link.inner_text()).strip("[]")
        chunk = next(c for c in chunks if str(c["id"]) == number)
        assert await link.get_attribute("href") == chunk["url"]
        assert await link.get_attribute("target") == "_blank"
        assert set((await link.get_attribute("rel") or "").split()) >= {"noopener", "noreferrer"}
    results = page.locator(".card-google_search_results .search-result")
    assert await results.count() == len(chunks)


async def test_keyboard_only_enter_sends_and_shift_enter_adds_a_line(
    live: LiveServer, page: Page
) -> None:
    await open_ui(page, live.http)
    # Tab from the top of the page to the message box.
    for _ in range(40):
        if await page.evaluate("() => document.activeElement?.id") == "prompt":
            break
        await page.keyboard.press("Tab")
    else:
        raise AssertionError("the message box cannot be reached with Tab")
    await page.keyboard.type("what's in my inbox")
    await page.keyboard.press("Shift+Enter")
    await page.keyboard.type("and the newest one")
    assert await page.input_value("#prompt") == "what's in my inbox\nand the newest one"
    await page.keyboard.press("Enter")
    await wait_chips(page)
    assert (
        await page.locator("#transcript .message.user").inner_text()
        == "what's in my inbox\nand the newest one"
    )
    assert await page.input_value("#prompt") == ""

    # A chip is reachable and works from the keyboard too.
    for _ in range(60):
        if await page.evaluate(
            "() => document.activeElement?.classList.contains('chip')"
            " && !!document.activeElement.closest('.turn')"
        ):
            break
        await page.keyboard.press("Tab")
    else:
        raise AssertionError("no suggested prompt can be reached with Tab")
    chosen = await page.evaluate("() => document.activeElement.textContent")
    await page.keyboard.press("Enter")
    await wait_chips(page, turns=2)
    assert (await page.locator("#transcript .message.user").all_inner_texts())[-1] == chosen


UNNAMED_CONTROLS = """() => {
    const name = el => (el.getAttribute('aria-label') || el.textContent || '').trim()
        || [...(el.labels || [])].map(l => l.textContent.trim()).join('');
    return [...document.querySelectorAll('button, a[href], textarea, input, select')]
        .filter(el => !el.closest('[hidden]') && !name(el))
        .map(el => el.outerHTML.slice(0, 120));
}"""


async def test_every_control_has_an_accessible_name(live: LiveServer, page: Page) -> None:
    await open_ui(page, live.http)
    await send(page, MULTI_AGENT)
    # The approval card with its reason field open: every control of it is on the page.
    card = approval_card(page, "pending")
    await card.get_by_role("button", name="Reject").click()
    await card.get_by_label("Reason (optional)").wait_for()
    assert await page.evaluate(UNNAMED_CONTROLS) == []
    await card.get_by_role("button", name="Back").click()
    await approve(page)
    await wait_chips(page)
    await page.click("#open-connections")
    await page.wait_for_selector(".connector")
    assert await page.evaluate(UNNAMED_CONTROLS) == []
