"""Cancel, reload mid-turn, a dropped connection: the page resumes from its last seq with
no text missing or shown twice."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.async_api import Page

from app.settings import Settings
from tests.browser.pages import (
    RECORD_STREAMING,
    assistant_texts,
    body_items,
    chat_id_of,
    open_ui,
    rest_events,
    retry_now,
    send,
    wait_chips,
    wait_turns_ended,
)
from tests.support.clients import open_client
from tests.support.proxies import dropping_proxy
from tests.support.servers import serve

# ~40 streamed words at 50 ms: about two seconds of streaming to interrupt.
SLOW = 0.05
PROMPT = "search the web for python asyncio"


async def streamed_text(page: Page) -> str:
    return await page.eval_on_selector(
        "#transcript .message.assistant.streaming .markdown", "el => el.textContent"
    )


async def wait_streaming(page: Page, at_least: int = 20) -> str:
    await page.wait_for_function(
        """n => {
            const el = document.querySelector('#transcript .message.assistant.streaming .markdown');
            return el && el.textContent.length >= n;
        }""",
        arg=at_least,
    )
    return await streamed_text(page)


def words(text: str) -> str:
    # Rendered Markdown ends paragraphs with a line break; compare the words only.
    return " ".join(text.split())


async def final_rendered(page: Page) -> str:
    return words(
        await page.eval_on_selector(
            "#transcript .message.assistant .markdown", "el => el.textContent"
        )
    )


async def observations(page: Page) -> list[str]:
    return [words(text) for text in await page.evaluate("() => window.__streamed") if text.strip()]


async def test_stop_cancels_the_turn_and_history_shows_it_the_same(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    async with serve(ui_settings(offline_delta_delay=SLOW)) as live:
        await open_ui(page, live.http)
        await send(page, PROMPT)
        await wait_streaming(page, 5)
        stop = page.locator("#cancel")
        assert await stop.is_visible()
        assert await page.locator("#send").is_disabled()
        await stop.click()
        await wait_turns_ended(page, 1)

        assert await page.locator("#transcript .turn.status-cancelled").count() == 1
        assert await page.locator(".turn-status.cancelled").inner_text() == "Stopped"
        assert await stop.is_hidden()
        assert await page.locator("#send").is_enabled()
        assert await page.locator("#transcript .message.assistant.stopped").count() == 1
        chat_id = chat_id_of(page)
        async with live.client() as http:
            turn = (await http.get(f"/api/chats/{chat_id}")).json()["turns"][0]
        assert turn["status"] == "cancelled"
        live_text = (await assistant_texts(page))[0]
        assert live_text and turn["final_text"].startswith(live_text)
        # A cancelled turn offers no suggestions.
        assert await page.locator("#transcript .chips .chip").count() == 0

        # Reopened, the stopped answer shows what the server kept of it.
        await page.reload()
        await wait_turns_ended(page, 1)
        assert await assistant_texts(page) == [turn["final_text"]]
        assert await page.locator("#transcript .message.assistant.stopped").count() == 1
        assert await page.locator(".turn-status.cancelled").inner_text() == "Stopped"


async def test_a_reload_mid_turn_resumes_the_running_turn(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    await page.add_init_script(RECORD_STREAMING)
    async with serve(ui_settings(offline_delta_delay=SLOW)) as live:
        await open_ui(page, live.http)
        await send(page, PROMPT)
        before = await wait_streaming(page)
        await page.reload()
        await wait_chips(page)

        events = await rest_events(live, chat_id_of(page))
        final = next(e["text"] for e in events if e["type"] == "llm_response")
        assert await assistant_texts(page) == [final]
        assert await page.locator("#transcript .turn").count() == 1
        assert await page.locator("#transcript .message.user").count() == 1
        assert await body_items(page) == ["agent:Search", "card:google_search_results", "text"]
        rendered = await final_rendered(page)
        seen = await observations(page)
        # After the reload the page drew the text so far at once (the server's snapshot),
        # then grew it: every state it showed is a beginning of the final text.
        assert seen, "the resumed turn was not shown streaming after the reload"
        assert len(seen[0]) >= len(words(before))
        for text in seen:
            assert rendered.startswith(text), f"shown mid-turn but not in the answer: {text!r}"


@pytest.mark.parametrize("outage", ["mid_turn", "whole_turn"])
async def test_a_dropped_connection_reconnects_and_resumes_without_duplicates(
    ui_settings: Callable[..., Settings], page: Page, outage: str
) -> None:
    await page.add_init_script(RECORD_STREAMING)
    async with (
        serve(ui_settings(offline_delta_delay=SLOW)) as live,
        dropping_proxy(live.port) as proxy,
    ):
        await open_ui(page, proxy.http)
        await send(page, PROMPT)
        before = await wait_streaming(page)

        # A socket of the test's own on the chat, straight to the server: it gets every event
        # of the turn (those stored so far replayed, then the rest live), in order.
        async with open_client(live.ws_url(chat_id_of(page), after_seq=0)) as watcher:
            proxy.refusing = True
            proxy.drop()
            banner = page.locator("#banner")
            await banner.wait_for()
            assert "Connection lost" in await banner.inner_text()
            assert await page.get_attribute("#conn-status", "data-state") == "reconnecting"
            if outage == "whole_turn":
                # The turn goes on without the page and ends while it is away.
                assert await live.services.turns.wait_idle(60), "the turn never ended"
            else:
                # The page stays away until the turn has sent something it missed: what
                # the watcher gets after the pong to this ping was sent after the drop, and
                # a turn that has not ended yet sends at least its end_of_stream.
                await watcher.send({"type": "ping"})
                if "end_of_stream" not in [e["type"] for e in await watcher.until("pong")]:
                    while (await watcher.recv())["type"] not in (
                        "llm_response_delta",
                        "end_of_stream",
                    ):
                        pass
        proxy.refusing = False
        await retry_now(page)
        await banner.wait_for(state="hidden")
        assert await page.get_attribute("#conn-status", "data-state") == "online"
        await wait_chips(page)

        events = await rest_events(live, chat_id_of(page))
        final = next(e["text"] for e in events if e["type"] == "llm_response")
        assert await assistant_texts(page) == [final]
        assert await body_items(page) == ["agent:Search", "card:google_search_results", "text"]
        assert await page.locator("#transcript .turn").count() == 1
        chips = next(e["prompts"] for e in events if e["type"] == "suggested_prompts")
        assert await page.locator("#transcript .chips .chip").all_inner_texts() == chips
        rendered = await final_rendered(page)
        seen = await observations(page)
        assert words(before) in seen
        for text in seen:
            assert rendered.startswith(text), f"shown mid-turn but not in the answer: {text!r}"


async def test_a_prompt_typed_while_offline_is_sent_once_the_connection_is_back(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    async with (
        serve(ui_settings(offline_delta_delay=0.002)) as live,
        dropping_proxy(live.port) as proxy,
    ):
        await open_ui(page, proxy.http)
        await send(page, "what are my account balances")
        await wait_chips(page)

        proxy.refusing = True
        proxy.drop()
        await page.locator("#banner").wait_for()
        await send(page, "show my transactions from last week")
        pending = page.locator("#transcript .message.user.pending")
        await pending.wait_for()
        assert "Waiting for the connection" in await pending.inner_text()

        proxy.refusing = False
        await retry_now(page)
        await wait_chips(page, turns=2)
        assert await pending.count() == 0
        prompts = [
            e["text"]
            for e in await rest_events(live, chat_id_of(page))
            if e["type"] == "user_prompt"
        ]
        assert prompts == ["what are my account balances", "show my transactions from last week"]
        assert await page.locator("#transcript .turn").count() == 2
