"""The prompt limit in the page: a counter near it, Send held past it, and a prompt that
a connection refuses is never sent again in a loop, and the page says why.

The limits come from the server (app/ui.py writes them into the page). The page counts
characters as the server does (code points), so an emoji counts once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from playwright.async_api import Page, WebSocket, expect

from app.settings import Settings
from tests.browser.pages import open_ui, send, wait_chips
from tests.support.servers import LiveServer, serve

LIMIT = 32_000
EMOJI = "😀"  # one character for the server, two UTF-16 units for String.length
FOLLOW_UP = "What are my account balances?"


@dataclass
class Frames:
    """What the page sent on its sockets, as the browser reports it."""

    sockets: int = 0
    prompts: list[str] = field(default_factory=list)
    prompt_bytes: list[int] = field(default_factory=list)

    def watch(self, page: Page) -> None:
        page.on("websocket", self._opened)

    def _opened(self, socket: WebSocket) -> None:
        self.sockets += 1
        socket.on("framesent", self._sent)

    def _sent(self, payload: str | bytes) -> None:
        frame = json.loads(payload)
        if frame.get("type") == "prompt":
            self.prompts.append(frame["text"])
            self.prompt_bytes.append(len(payload.encode() if isinstance(payload, str) else payload))


async def stored_prompts(live: LiveServer) -> list[str]:
    """Every prompt the server took (a user_prompt event), over all of the user's chats."""
    async with live.client() as http:
        chats = (await http.get("/api/chats")).json()["chats"]
        texts = []
        for chat in chats:
            events = (await http.get(f"/api/chats/{chat['id']}/events")).json()["events"]
            texts += [event["text"] for event in events if event["type"] == "user_prompt"]
        return texts


async def test_the_counter_appears_near_the_limit_and_send_waits_past_it(
    live: LiveServer, page: Page
) -> None:
    await open_ui(page, live.http)
    assert await page.get_attribute("body", "data-max-prompt-chars") == str(LIMIT)
    prompt = page.locator("#prompt")
    counter = page.locator("#prompt-count")
    error = page.locator("#composer-error")
    send_button = page.locator("#send")
    # No hard cut: a long paste stays whole, and the page says what to do about it.
    assert await prompt.get_attribute("maxlength") is None
    assert "prompt-count" in (await prompt.get_attribute("aria-describedby") or "").split()

    await prompt.fill("a" * (LIMIT * 9 // 10 - 1))
    await expect(counter).to_be_hidden()

    # 29,000 emoji: String.length says 58,000, the server (and the counter) 29,000.
    await prompt.fill(EMOJI * 29_000)
    await expect(counter).to_have_text("3,000 characters left (the limit is 32,000)")
    await expect(counter).to_have_attribute("data-state", "near")
    await expect(send_button).to_be_enabled()

    await prompt.fill(EMOJI * (LIMIT + 1))
    too_many = (
        "1 character too many: a message can be at most 32,000 characters. Shorten it to send it."
    )
    await expect(counter).to_have_text(too_many)
    await expect(counter).to_have_attribute("data-state", "over")
    await expect(send_button).to_be_disabled()
    await expect(prompt).to_have_attribute("aria-invalid", "true")
    await expect(prompt).to_have_accessible_description(re.compile(re.escape(too_many)))
    assert await prompt.input_value() == EMOJI * (LIMIT + 1)

    # Enter does not get round the disabled button: nothing is sent, and a screen reader
    # hears why (the screen shows it already).
    await prompt.press("Enter")
    await expect(page.locator("#announcer")).to_have_text(f"Not sent: {too_many}")
    await expect(error).to_have_text("")
    assert await page.locator("#transcript .message.user").count() == 0
    assert await prompt.input_value() == EMOJI * (LIMIT + 1)

    # At the limit exactly it may be sent again.
    await prompt.press("End")
    await prompt.press("Backspace")
    await expect(counter).to_have_text("0 characters left (the limit is 32,000)")
    await expect(counter).to_have_attribute("data-state", "near")
    await expect(send_button).to_be_enabled()
    await expect(prompt).not_to_have_attribute("aria-invalid", "true")
    assert await stored_prompts(live) == []


async def test_the_limit_is_the_servers(ui_settings: Callable[..., Settings], page: Page) -> None:
    async with serve(ui_settings(max_prompt_chars=100)) as live:
        await open_ui(page, live.http)
        await page.locator("#prompt").fill(EMOJI * 95)
        await expect(page.locator("#prompt-count")).to_have_text(
            "5 characters left (the limit is 100)"
        )
        await page.locator("#prompt").fill(EMOJI * 101)
        await expect(page.locator("#send")).to_be_disabled()


async def test_a_prompt_refused_as_too_big_is_not_sent_again_and_the_page_says_why(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    # A server whose frame limit is below its prompt limit: the settings refuse that pair
    # at start-up, so model_copy (no validation) stands in for an older or misconfigured
    # server. The page believes 32,000 characters are fine; the server closes with 1009.
    settings = ui_settings().model_copy(update={"max_frame_bytes": 2048})
    frames = Frames()
    frames.watch(page)
    text = "€" * 1000  # 1,000 characters, 3,000 bytes in UTF-8
    async with serve(settings) as live:
        await open_ui(page, live.http)
        await send(page, text)
        error = page.locator("#composer-error")
        await expect(error).to_contain_text("Not sent: this message is too long for the server")
        await expect(error).to_contain_text(
            f"it takes {frames.prompt_bytes[0]:,} bytes as "
            "sent, and the server accepts at most 2,048 bytes"
        )
        # Nothing lost: the text is back in the box, no "Sending…" left in the conversation.
        assert await page.locator("#prompt").input_value() == text
        assert await page.locator("#transcript .message.user").count() == 0

        # The page reconnects (the chat goes on) without sending it again: a prompt that
        # fits goes through on the new connection, and it is the only other one sent.
        await page.wait_for_selector("#conn-status[data-state=online]")
        await expect(page.locator("#banner")).to_be_hidden()
        await page.locator("#prompt").fill("")
        await send(page, FOLLOW_UP)
        await wait_chips(page)
        assert frames.prompts == [text, FOLLOW_UP]
        assert frames.sockets == 2
        assert await stored_prompts(live) == [FOLLOW_UP]
        # A later prompt clears the explanation of the earlier one.
        await expect(error).to_have_text("")


class ResettingProxy:
    """Stands between the page and the server and resets any WebSocket connection on which
    the page sends more than ``limit`` bytes: a middlebox with a lower limit than the
    server's, which tells the browser nothing but an abnormal close (1006)."""

    def __init__(self, target_port: int, limit: int) -> None:
        self.target_port = target_port
        self.limit = limit
        self.port = 0
        self.resets = 0
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        upstream = asyncio.create_task(self._pipe(up_reader, writer))
        self._tasks.add(upstream)
        try:
            websocket = False
            sent = 0
            while data := await reader.read(65536):
                if b"upgrade: websocket" in data.lower():
                    websocket = True  # count what the page sends after the handshake
                elif websocket:
                    sent += len(data)
                    if sent > self.limit:
                        self.resets += 1
                        break
                up_writer.write(data)
                await up_writer.drain()
        except OSError:
            pass
        finally:
            writer.transport.abort()
            up_writer.transport.abort()
            upstream.cancel()
            self._tasks.discard(upstream)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()


@asynccontextmanager
async def resetting_proxy(target_port: int, limit: int) -> AsyncIterator[ResettingProxy]:
    proxy = ResettingProxy(target_port, limit)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    try:
        yield proxy
    finally:
        server.close()
        for task in list(proxy._tasks):
            task.cancel()
        await server.wait_closed()


async def test_a_prompt_the_connection_keeps_closing_on_is_not_sent_forever(
    live: LiveServer, page: Page
) -> None:
    frames = Frames()
    frames.watch(page)
    # Legal for the server, too much for the proxy: random CJK, so that the socket's
    # compression (permessage-deflate) cannot shrink it under the proxy's limit.
    chooser = random.Random(15)
    text = "".join(chr(chooser.randrange(0x4E00, 0xA000)) for _ in range(2000))
    async with resetting_proxy(live.port, limit=2048) as proxy:
        await open_ui(page, proxy.http)
        await send(page, text)
        error = page.locator("#composer-error")
        await expect(error).to_contain_text(
            "Not sent: the connection closed each time this message was sent (3 times)"
        )
        assert frames.prompts == [text] * 3
        assert proxy.resets == 3
        assert await page.locator("#prompt").input_value() == text
        assert await page.locator("#transcript .message.user").count() == 0

        await page.wait_for_selector("#conn-status[data-state=online]")
        await page.locator("#prompt").fill("")
        await send(page, FOLLOW_UP)
        await wait_chips(page)
        assert frames.prompts == [text] * 3 + [FOLLOW_UP]
        assert await stored_prompts(live) == [FOLLOW_UP]
