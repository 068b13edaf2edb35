"""What sits around an answer, in Chromium: highlighted code blocks with a copy button,
a copy button for the whole answer (its Markdown source), message times, the token counts
behind a Details toggle, streaming Markdown that never shows a half-typed marker, "Jump to
latest" and auto-scroll that leave a person who scrolled up alone, and Escape as Stop.
The model is the scripted fake Open Responses server (its ``stall`` break keeps an
answer streaming for as long as a test needs), or the offline demo model where a turn
must wait on an approval."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from playwright.async_api import Browser, BrowserContext, Page

from app.settings import Settings
from tests.browser.pages import (
    RECORD_STREAMING,
    approval_card,
    assistant_texts,
    cards_loaded,
    chat_id_of,
    csp_violations,
    open_ui,
    rest_events,
    send,
    wait_turns_ended,
)
from tests.fakes.model_server import FakeModelServer, Say, reply, running_model_server
from tests.support.browser import DESKTOP
from tests.support.models import API_KEY, model_spec
from tests.support.servers import LiveServer, serve

CODE = 'import asyncio\n\n\nasync def main() -> None:\n    print("hello")\n\n\nasyncio.run(main())'
ANSWER = (
    "Run **two coroutines** at once with `asyncio.gather`; see "
    "[the docs](https://docs.python.org/3/library/asyncio.html):\n\n"
    f"```python\n{CODE}\n```\n\n"
    "Then install it:\n\n```bash\npip install httpx\n```\n\nThat is *all*."
)
# Streamed three characters at a time and frozen after this many deltas: the python block
# has closed, the bash block is still open ("```bash\npip inst").
FROZEN_AFTER = (ANSWER.index("pip inst") + len("pip inst")) // 3
LONG = "\n\n".join(
    f"Paragraph {n}: **some** text to read back, with `code` in it." for n in range(60)
)


@pytest.fixture
async def fake_model() -> AsyncIterator[FakeModelServer]:
    async with running_model_server(FakeModelServer(api_key=API_KEY)) as server:
        server.structured["FollowUps"] = {"prompts": []}
        server.structured["ChatTitle"] = {"title": "Asyncio"}
        yield server


@pytest.fixture
async def live(
    ui_settings: Callable[..., Settings], fake_model: FakeModelServer
) -> AsyncIterator[LiveServer]:
    settings: dict[str, Any] = {
        "model": model_spec("responses", fake_model),
        "model_api_key": API_KEY,
        "model_timeout": 60,
    }
    async with serve(ui_settings(**settings)) as server:
        yield server


async def clipboard(page: Page) -> str:
    text: str = await page.evaluate("() => navigator.clipboard.readText()")
    return text


async def announced(page: Page, text: str) -> None:
    await page.wait_for_function(
        "t => document.getElementById('announcer').textContent === t", arg=text
    )


async def running(page: Page) -> None:
    await page.wait_for_selector("#cancel:not([hidden])")


async def test_code_is_highlighted_and_answers_and_code_blocks_copy(
    live: LiveServer, fake_model: FakeModelServer, context: BrowserContext, page: Page
) -> None:
    await context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.http)
    fake_model.script(reply(Say(ANSWER, chunk=3)))
    await open_ui(page, live.http)
    await send(page, "how do I run two coroutines at once?")
    await wait_turns_ended(page, 1)
    blocks = page.locator("#transcript .message.assistant .code-block")
    assert await blocks.count() == 2
    python = blocks.nth(0)
    assert await python.locator(".code-language").text_content() == "python"
    assert await python.locator("code.hljs .hljs-keyword").count() >= 3  # import, async, def
    assert await python.locator("code").text_content() == f"{CODE}\n"  # colour, not other text
    assert await blocks.nth(1).locator(".code-language").text_content() == "bash"
    assert await blocks.nth(1).locator("code.hljs").count() == 1

    # Copy the code, from the keyboard.
    await python.get_by_role("button", name="Copy code").focus()
    await page.keyboard.press("Enter")
    await python.get_by_role("button", name="Copied").wait_for()
    await announced(page, "Copied the python code.")
    assert await clipboard(page) == CODE

    # Copy the whole answer: its Markdown source.
    foot = page.locator("#transcript .turn .turn-foot")
    await foot.get_by_role("button", name="Copy", exact=True).click()
    await foot.get_by_role("button", name="Copied").wait_for()
    await announced(page, "Copied the answer.")
    assert await clipboard(page) == ANSWER

    # The button comes back for the next copy.
    await foot.get_by_role("button", name="Copy", exact=True).wait_for()

    # Reopened, the answer has the same highlighting and buttons.
    await page.reload()
    await wait_turns_ended(page, 1)
    assert await page.locator("#transcript .code-block code.hljs .hljs-keyword").count() >= 3
    assert await page.get_by_role("button", name="Copy code").count() == 2


async def test_copy_falls_back_when_the_clipboard_api_refuses(
    live: LiveServer, fake_model: FakeModelServer, context: BrowserContext, page: Page
) -> None:
    await context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.http)
    await page.add_init_script(
        "navigator.clipboard.writeText = () => Promise.reject(new DOMException('no', 'NotAllowedError'));"
    )
    fake_model.script(reply(Say(ANSWER, chunk=40)))
    await open_ui(page, live.http)
    await send(page, "how do I run two coroutines at once?")
    await wait_turns_ended(page, 1)
    await page.get_by_role("button", name="Copy code").first.click()
    await page.get_by_role("button", name="Copied").wait_for()
    assert await clipboard(page) == CODE


async def test_streaming_markdown_never_shows_half_typed_markers(
    live: LiveServer, fake_model: FakeModelServer, page: Page
) -> None:
    await page.add_init_script(RECORD_STREAMING)
    fake_model.script(
        reply(Say(ANSWER, chunk=3), break_after=FROZEN_AFTER, break_with="stall", delay=0.005)
    )
    await open_ui(page, live.http)
    await send(page, "how do I run two coroutines at once?")
    await page.wait_for_function(
        "() => (document.querySelector('.message.assistant.streaming .markdown')"
        "?.textContent || '').includes('pip inst')"
    )
    streamed: list[str] = await page.evaluate("() => window.__streamed")
    assert len(streamed) > 3, streamed
    # No frame showed a raw marker (the code in this answer has none of its own).
    for text in streamed:
        assert "**" not in text and "](" not in text and "`" not in text, text
        assert "[the docs" not in text and not text.rstrip().endswith("*"), text
    # While streaming: the closed python block is coloured, the open bash block plain
    # and without copy buttons until the answer is whole.
    message = page.locator("#transcript .message.assistant.streaming")
    codes = message.locator("pre > code")
    assert await codes.count() == 2
    assert await codes.nth(0).locator(".hljs-keyword").count() >= 3
    assert await codes.nth(1).evaluate("el => el.classList.contains('hljs')") is False
    assert await codes.nth(1).text_content() == "pip inst\n"
    assert await message.get_by_role("button", name="Copy code").count() == 0
    # The bold and the link rendered as such, not as markers.
    assert await message.locator("strong").first.text_content() == "two coroutines"
    assert await message.locator("a").first.get_attribute("href") == (
        "https://docs.python.org/3/library/asyncio.html"
    )
    # Escape stops it, like Stop.
    await page.focus("#prompt")
    await page.keyboard.press("Escape")
    await page.wait_for_selector("#transcript .turn.status-cancelled")


async def test_times_and_details_show_under_messages_also_after_a_reload(
    live: LiveServer, fake_model: FakeModelServer, page: Page
) -> None:
    fake_model.script(reply(Say("Hello **there**.", chunk=4), input_tokens=6300, output_tokens=116))
    await open_ui(page, live.http)
    await send(page, "hi")
    await wait_turns_ended(page, 1)
    events = await rest_events(live, chat_id_of(page))
    prompt_ts = next(e["ts"] for e in events if e["type"] == "user_prompt")
    end_ts = next(e["ts"] for e in events if e["type"] == "end_of_stream")

    async def check() -> None:
        times = await page.eval_on_selector_all(
            "#transcript time.msg-time",
            "els => els.map(el => [el.dateTime, el.title, el.textContent,"
            " el.classList.contains('user-time') ? 'user' : 'answer'])",
        )
        iso = await page.evaluate(
            "ts => ts.map(t => new Date(t).toISOString())", [prompt_ts, end_ts]
        )
        assert [(t[0], t[3]) for t in times] == [(iso[0], "user"), (iso[1], "answer")]
        for _, title, short, _ in times:
            assert end_ts[:4] in title  # the full date, with its year
            assert short and len(short) < len(title)
        # The token counts wait behind "Details".
        details = page.locator("#transcript .turn-foot details.turn-details")
        assert await details.get_attribute("open") is None
        assert not await page.get_by_text("6,416").is_visible()
        await details.locator("summary").click()
        terms = await details.locator("dt").all_text_contents()
        values = await details.locator("dd").all_text_contents()
        shown = dict(zip(terms, values, strict=True))
        assert shown["Tokens in"] == "6,300" and shown["Tokens out"] == "116"
        assert shown["Total tokens"] == "6,416" and shown["Model requests"] == "1"
        assert shown["Took"].endswith(" s")
        assert await page.get_by_text("6,416").is_visible()

    await check()
    await page.reload()
    await wait_turns_ended(page, 1)
    await check()


async def test_escape_stops_only_when_the_key_is_not_meant_for_something_else(
    live: LiveServer, fake_model: FakeModelServer, page: Page
) -> None:
    # Stalls after "Paragraph 0: **s": inside the bold.
    fake_model.script(reply(Say(LONG, chunk=8), break_after=2, break_with="stall"))
    await open_ui(page, live.http)
    await send(page, "write a lot")
    await running(page)
    await page.wait_for_function(
        "() => document.querySelector('.message.assistant.streaming strong')?.textContent === 's'"
    )

    async def still_running() -> None:
        # cancel() changes the button at once: the key's handler has run by now.
        assert (await page.locator("#cancel").inner_text()).strip() == "Stop"
        assert await page.locator("#cancel").is_enabled()
        assert await page.locator("#transcript .turn[class*='status-']").count() == 0

    # The search box clears itself with Escape.
    await page.fill("#chat-search", "zz")
    await page.press("#chat-search", "Escape")
    assert await page.input_value("#chat-search") == ""
    await still_running()
    # A dialog closes with Escape.
    await page.click("#open-connections")
    await page.wait_for_selector("#connections-dialog[open]")
    await page.keyboard.press("Escape")
    await page.wait_for_function("() => !document.getElementById('connections-dialog').open")
    await still_running()
    # Anywhere else it stops the answer, as Stop does.
    await page.locator("#transcript .message.user").click()
    await page.keyboard.press("Escape")
    await page.wait_for_selector("#transcript .turn.status-cancelled")
    assert await page.locator("#cancel").is_hidden()
    # With nothing running, Escape does nothing (and sends nothing).
    await page.keyboard.press("Escape")
    assert await page.locator(".toast").count() == 0
    # The stopped answer ends tidily, live and reopened: bold, not "**s".
    for reload in (False, True):
        if reload:
            await page.reload()
            await wait_turns_ended(page, 1)
        stopped = page.locator("#transcript .message.assistant.stopped")
        assert await stopped.get_attribute("data-text") == "Paragraph 0: **s"
        assert await stopped.locator(".markdown").inner_text() == "Paragraph 0: s"
        assert await stopped.locator("strong").inner_text() == "s"


async def scroll_state(page: Page) -> dict[str, Any]:
    state: dict[str, Any] = await page.evaluate("""() => {
        const el = document.getElementById('scroller');
        return { top: el.scrollTop, distance: el.scrollHeight - el.scrollTop - el.clientHeight,
                 button: !document.querySelector('.jump-latest').hidden };
    }""")
    return state


async def test_scrolled_up_the_view_stays_and_jump_to_latest_brings_it_back(
    live: LiveServer, fake_model: FakeModelServer, context: BrowserContext, page: Page
) -> None:
    fake_model.script(reply(Say(LONG, chunk=200)), reply(Say(LONG, chunk=200)))
    await open_ui(page, live.http)
    await send(page, "write a lot")
    await wait_turns_ended(page, 1)
    # Followed to the end while it streamed; no button at the bottom.
    state = await scroll_state(page)
    assert state["distance"] <= 24 and not state["button"]
    # The person scrolls up a little (less than the old 80 px "near the bottom"): that is
    # enough to stop following.
    box = await page.locator("#scroller").bounding_box()
    assert box
    await page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    await page.mouse.wheel(0, -60)
    await page.wait_for_function("() => !document.querySelector('.jump-latest').hidden")
    up = await scroll_state(page)
    # More arrives below: another tab asks a question in the same chat.
    other = await context.new_page()
    await open_ui(other, live.http, f"/#/chat/{chat_id_of(page)}")
    await wait_turns_ended(other, 1)
    await send(other, "and more")
    await wait_turns_ended(page, 2)
    assert await assistant_texts(page) == [LONG, LONG]
    after = await scroll_state(page)
    assert after["top"] == up["top"], "the view was pulled away from what the person reads"
    assert after["button"] and after["distance"] > up["distance"]
    # The button goes to the end, hides, and following resumes.
    await page.get_by_role("button", name="Jump to latest").click()
    await page.wait_for_function("() => document.querySelector('.jump-latest').hidden")
    assert (await scroll_state(page))["distance"] <= 24
    await other.close()


HOSTILE = (
    "Markup in code is code:\n\n"
    '```html\n<img src="x" onerror="alert(1)"><script>alert(2)</script>\n```\n\n'
    '```"><img src=x onerror=alert(3)>\n<b>plain</b>\n```\n\n'
    "Done `<i>x</i>`."
)


async def test_code_answers_run_under_the_policy_and_code_stays_text(
    live: LiveServer, fake_model: FakeModelServer, browser: Browser
) -> None:
    fake_model.script(reply(Say(HOSTILE, chunk=5)))
    # Enforced (no bypass_csp): the highlighter's styles and spans are all the policy allows.
    context = await browser.new_context(viewport=DESKTOP, color_scheme="dark")
    try:
        page = await context.new_page()
        violations = csp_violations(page)
        await page.goto(live.http + "/")
        await page.fill("#prompt", "show me some html")
        await page.press("#prompt", "Enter")
        await page.locator("#transcript .turn .turn-foot .copy-answer").wait_for()
        codes = page.locator("#transcript .message.assistant pre > code")
        assert await codes.count() == 2
        assert await codes.nth(0).text_content() == (
            '<img src="x" onerror="alert(1)"><script>alert(2)</script>\n'
        )
        assert await codes.nth(0).locator(".hljs-tag").count() >= 3  # coloured as HTML
        # The odd "language" is no class, no attribute, no markup: the block stays plain.
        assert await codes.nth(1).get_attribute("class") is None
        assert await codes.nth(1).text_content() == "<b>plain</b>\n"
        found = await page.evaluate("""() => {
            const root = document.getElementById('transcript');
            return {
                tags: [...new Set([...root.querySelectorAll('pre *')].map(el => el.tagName))],
                handlers: [...root.querySelectorAll('*')].flatMap(el => [...el.attributes]
                    .filter(a => a.name.startsWith('on')).map(a => a.name)),
                images: root.querySelectorAll('img').length,
            };
        }""")
        assert found == {"tags": ["CODE", "SPAN"], "handlers": [], "images": 0}
        # The dark theme of the highlighter is the one in force.
        colour = (
            await codes.nth(0)
            .locator(".hljs-tag")
            .first.evaluate("el => getComputedStyle(el.querySelector('.hljs-name') || el).color")
        )
        assert colour == "rgb(126, 231, 135)", colour  # github-dark's tag names
        assert violations == []
    finally:
        await context.close()


async def test_escape_on_an_approval_card_goes_back_to_the_message_box_first(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    # The offline demo model: its email asks for an approval, and the turn waits on it.
    async with serve(ui_settings(offline_delta_delay=0.002)) as offline:
        await open_ui(page, offline.http)
        await cards_loaded(page)
        await send(page, "find sushi in Boston and email the list to bob@example.com")
        card = approval_card(page, "pending")
        await card.wait_for()
        await card.focus()
        await page.keyboard.press("Escape")
        # The card's own Escape: back to the message box, the request still waiting.
        assert await page.evaluate("() => document.activeElement.id") == "prompt"
        assert await approval_card(page, "pending").count() == 1
        assert (await page.locator("#cancel").inner_text()).strip() == "Stop"
        # From the message box, Escape is Stop: the waiting turn is cancelled.
        await page.keyboard.press("Escape")
        await page.wait_for_selector("#transcript .turn.status-cancelled")
        assert await approval_card(page, "pending").count() == 0
