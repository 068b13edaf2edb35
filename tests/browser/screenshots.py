"""Take the README's screenshots of the chat UI: ``.venv/bin/python -m tests.browser.screenshots``.

Runs the real server (offline demo model, demo connectors) on a temporary SQLite database
and Debian's chromium, and writes ``docs/screenshots/*.png``. Not part of the test run:
pictures change with every style tweak; the tests check behaviour.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, async_playwright

from app.settings import load_settings
from storage.migrate import upgrade
from tests.browser.pages import approval_card, approve, open_ui, retry_now, send, wait_chips
from tests.fakes.model_server import FakeModelServer, Say, reply, running_model_server
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.files import gradient_png
from tests.support.models import API_KEY, model_spec
from tests.support.proxies import dropping_proxy
from tests.support.servers import LiveServer, serve

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
DESKTOP = {"width": 1280, "height": 820}
PHONE = {"width": 390, "height": 844}
EMAIL = "find sushi in Boston and email the list to bob@example.com"


async def new_page(browser: Browser, **options: Any) -> Page:
    context = await browser.new_context(
        viewport=options.pop("viewport", DESKTOP), bypass_csp=True, **options
    )
    page = await context.new_page()
    page.set_default_timeout(20_000)
    return page


async def chat(page: Page, *prompts: str) -> None:
    for turn, prompt in enumerate(prompts, 1):
        await send(page, prompt)
        await wait_chips(page, turns=turn)


async def ask_approval(page: Page, prompt: str = EMAIL) -> None:
    """Send ``prompt`` and wait until its approval card waits for the person."""
    await send(page, prompt)
    await approval_card(page, "pending").wait_for()
    # The From line fills in once the connections are known.
    await page.wait_for_function("""() => {
        const from = document.querySelector('#transcript .approval .approval-fields dd');
        return from && from.textContent !== '…';
    }""")


async def shoot(page: Page, name: str) -> None:
    await page.wait_for_timeout(250)  # let images and the last frame settle
    await page.screenshot(path=str(OUT / name))
    print(f"wrote docs/screenshots/{name}")


async def fast_states(browser: Browser, live: LiveServer) -> None:
    page = await new_page(browser)
    await open_ui(page, live.http)
    # A few chats for the sidebar, then the multi-agent turn.
    await chat(page, "what are my account balances", "show my transactions from last week")
    history_url = page.url
    for prompt in ("search the web for python asyncio", "what's in my inbox"):
        await page.click("#new-chat")
        await chat(page, prompt)
    await page.click("#new-chat")
    await ask_approval(page)
    await shoot(page, "approval-card.png")
    await approve(page)
    await wait_chips(page)
    await shoot(page, "multi-agent-turn.png")

    await page.goto(history_url)
    await page.wait_for_selector("#transcript .turn:nth-of-type(2) .chips .chip")
    await page.evaluate("() => { document.getElementById('scroller').scrollTop = 0; }")
    await shoot(page, "history.png")

    await page.click("#open-connections")
    await page.wait_for_selector("#connector-list .connector")
    await shoot(page, "connections.png")
    await page.keyboard.press("Escape")

    async with live.client() as http:
        (await http.delete("/api/connectors/plaid")).raise_for_status()
    await page.click("#new-chat")
    await send(page, "how much did I spend by category")
    await page.wait_for_selector("#transcript .card-connect_plaid_account")
    await page.wait_for_selector("#transcript .turn[class*='status-']")
    await page.get_by_role("button", name="Connect bank").click()
    await page.get_by_text("Connected.").wait_for()
    await page.get_by_role("button", name="Ask again").click()
    await wait_chips(page, turns=2)
    await shoot(page, "connect-card.png")
    await page.context.close()

    dark = await new_page(browser, color_scheme="dark")
    await open_ui(dark, live.http)
    await chat(dark, "find coffee near me", "show reviews for Umi Sushi Bar in Boston")
    await shoot(dark, "cards-dark.png")
    await dark.context.close()

    # Left waiting: the phone's chat list below shows its "Needs approval" marker.
    dark_phone = await new_page(
        browser, viewport=PHONE, device_scale_factor=2, has_touch=True, color_scheme="dark"
    )
    await open_ui(dark_phone, live.http)
    await ask_approval(dark_phone)
    await dark_phone.evaluate("""() => {
        const card = document.querySelector('#transcript .approval');
        document.getElementById('scroller').scrollTop = card.offsetTop - 8;
    }""")
    await shoot(dark_phone, "approval-phone-dark.png")
    await dark_phone.context.close()

    phone = await new_page(browser, viewport=PHONE, device_scale_factor=2, has_touch=True)
    await open_ui(phone, live.http)
    await send(phone, EMAIL)
    await approve(phone)
    await wait_chips(phone)
    await shoot(phone, "phone.png")
    await phone.click("#open-sidebar")
    await phone.wait_for_selector("#sidebar", state="visible")
    await shoot(phone, "phone-chats.png")
    await phone.context.close()


async def slow_states(browser: Browser, live: LiveServer) -> None:
    async with dropping_proxy(live.port) as proxy:
        page = await new_page(browser)
        await open_ui(page, proxy.http)
        await send(page, "search the web for python asyncio")
        await page.wait_for_function("""() => {
            const el = document.querySelector('.message.assistant.streaming .markdown');
            return el && el.textContent.length > 60;
        }""")
        await shoot(page, "streaming.png")
        proxy.refusing = True
        proxy.drop()
        await page.wait_for_selector("#banner:not([hidden])")
        await page.wait_for_timeout(600)
        await shoot(page, "reconnecting.png")
        proxy.refusing = False
        await retry_now(page)
        await wait_chips(page)
        await page.context.close()


async def history_states(browser: Browser, live: LiveServer) -> None:
    """The sidebar's search with its snippets, and a chat's rename/download menu."""
    page = await new_page(browser)
    await open_ui(page, live.http)
    await chat(page, "find coffee near me")
    for prompt in ("what are my account balances", "show reviews for Umi Sushi Bar in Boston"):
        await page.click("#new-chat")
        await chat(page, prompt)
    await page.fill("#chat-search", "sushi")
    await page.wait_for_selector("#chat-list .chat-snippet")
    await shoot(page, "history-search.png")
    await page.press("#chat-search", "Escape")
    await page.wait_for_selector("#chat-list .chat-group-title")
    await page.locator("#chat-list li.chat-item .chat-menu-button").first.click()
    await shoot(page, "history-menu.png")
    await page.context.close()


async def feedback_states(browser: Browser, live: LiveServer) -> None:
    """An answer rated thumbs down, its comment box open."""
    page = await new_page(browser)
    await open_ui(page, live.http)
    await chat(page, "what did I spend on coffee last month")
    await page.get_by_role("button", name="Bad answer").click()
    await page.get_by_label("What was wrong? (optional)").fill(
        "I asked about coffee only, not every category."
    )
    await shoot(page, "feedback.png")
    await page.context.close()


CODE_ANSWER = """Run the two calls at once with `asyncio.gather`; it returns their results **in order**:

```python
import asyncio

import httpx


async def fetch_all(urls: list[str]) -> list[int]:
    async with httpx.AsyncClient(timeout=10) as client:
        responses = await asyncio.gather(*(client.get(url) for url in urls))
    return [response.status_code for response in responses]


print(asyncio.run(fetch_all(["https://example.com", "https://example.org"])))
```

Install the client first with `pip install httpx`."""


async def code_states(browser: Browser, tmp: str) -> None:
    """A highlighted code block with its copy button and the answer's Details, in light
    and dark, on desktop and phone. The model is the scripted fake model server."""
    model = FakeModelServer(api_key=API_KEY)
    model.structured["FollowUps"] = {"prompts": ["Add a timeout per request", "Retry failed calls"]}
    model.structured["ChatTitle"] = {"title": "Concurrent requests with asyncio"}
    async with running_model_server(model):
        # Its own database: these chats stay out of the other pictures' chat lists.
        database = f"sqlite+aiosqlite:///{tmp}/code.db"
        await asyncio.to_thread(upgrade, database)
        settings = load_settings(
            database_url=database,
            data_dir=Path(tmp) / "data",
            model=model_spec("responses", model),
            model_api_key=API_KEY,
        )
        async with serve(settings) as live:
            for name, options in (
                ("code-answer.png", {}),
                ("code-answer-dark.png", {"color_scheme": "dark"}),
                (
                    "code-answer-phone.png",
                    {"viewport": PHONE, "device_scale_factor": 2, "has_touch": True},
                ),
            ):
                model.script(
                    reply(Say(CODE_ANSWER, chunk=12), input_tokens=6300, output_tokens=116)
                )
                page = await new_page(browser, **options)
                await open_ui(page, live.http)
                await send(page, "How do I fetch two URLs at once in Python?")
                await wait_chips(page)
                await page.locator("#transcript .turn-details summary").click()
                await page.get_by_role("button", name="Copy code").focus()
                await page.evaluate(
                    "() => { const s = document.getElementById('scroller');"
                    " s.scrollTop = s.scrollHeight; }"
                )
                await shoot(page, name)
                if name == "code-answer-phone.png":
                    # Scrolled up to read: the view stays, "Jump to latest" offers the way back.
                    model.script(reply(Say(CODE_ANSWER, chunk=12)))
                    await send(page, "And with a timeout for each request?")
                    await wait_chips(page, turns=2)
                    await page.mouse.move(195, 400)
                    await page.mouse.wheel(0, -700)
                    await page.locator(".jump-latest").wait_for()
                    await shoot(page, "jump-latest-phone.png")
                await page.context.close()


async def turn_action_states(browser: Browser, live: LiveServer) -> None:
    """A regenerated answer (the old one folded under its note) with a message being
    edited in place."""
    page = await new_page(browser)
    await open_ui(page, live.http)
    await chat(page, "what can you do?")
    await page.get_by_role("button", name="Regenerate").click()
    await wait_chips(page, turns=2)
    await page.locator("#transcript .turn").first.get_by_role("button", name="Show").click()
    last = page.locator("#transcript .turn").last
    await last.hover()
    await last.get_by_role("button", name="Edit message").click()
    await page.get_by_role("textbox", name="Edit your message").fill(
        "What can you do with my email?"
    )
    await shoot(page, "turn-actions.png")
    await page.context.close()


async def continue_states(browser: Browser, live: LiveServer) -> None:
    """An answer stopped mid-way, then continued below it."""
    page = await new_page(browser)
    await open_ui(page, live.http)
    await send(page, "help")
    await page.wait_for_function("""() => {
        const el = document.querySelector('.message.assistant.streaming .markdown');
        return el && el.textContent.length > 40;
    }""")
    await page.click("#cancel")
    await page.get_by_role("button", name="Continue").click()
    await page.locator("#transcript .turn.continuation[class*='status-']").wait_for()
    await shoot(page, "continue.png")


async def attachment_states(browser: Browser, live: LiveServer, folder: Path) -> None:
    """A prompt with an image and a CSV file, its previews and the offline model's
    acknowledgement, and the next file waiting in the composer's tray."""
    sky, costs, notes = folder / "dusk.png", folder / "costs.csv", folder / "notes.md"
    sky.write_bytes(gradient_png(320, 200))
    costs.write_text("date,item,amount\n2026-11-02,coffee,4.50\n2026-11-03,lunch,12.00\n")
    notes.write_text("# Trip notes\n\n- book the train\n")
    page = await new_page(browser)
    await open_ui(page, live.http)
    for files in ([sky, costs], [notes]):
        async with page.expect_file_chooser() as chooser:
            await page.click("#attach")
        await (await chooser.value).set_files([str(path) for path in files])
        await page.wait_for_selector(
            f"#attachment-tray .attachment-chip.ready >> nth={len(files) - 1}"
        )
        if files[0] == sky:
            await send(page, "Here's the view from the hotel and my costs so far")
            await page.wait_for_selector("#transcript .turn[class*='status-']")
            await page.wait_for_function(
                "() => document.querySelector('#transcript .attachment-preview img')?.naturalWidth"
            )
    await page.fill("#prompt", "And my notes for tomorrow")
    await shoot(page, "attachments.png")
    await page.context.close()


async def main() -> int:
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: run `make browser-deps`", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        database = f"sqlite+aiosqlite:///{tmp}/screens.db"
        await asyncio.to_thread(upgrade, database)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            try:
                settings = load_settings(
                    database_url=database, data_dir=Path(tmp) / "data", offline_delta_delay=0.002
                )
                async with serve(settings) as live:
                    await fast_states(browser, live)
                    await history_states(browser, live)
                    await feedback_states(browser, live)
                    await turn_action_states(browser, live)
                    await attachment_states(browser, live, Path(tmp))
                await code_states(browser, tmp)
                slow = load_settings(
                    database_url=database, data_dir=Path(tmp) / "data", offline_delta_delay=0.08
                )
                async with serve(slow) as live:
                    await slow_states(browser, live)
                    await continue_states(browser, live)
            finally:
                await browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
