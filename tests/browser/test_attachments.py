"""Attachments in the browser: pick an image and a text file, see them upload into the
tray, send them, see the previews and the offline model's acknowledgement, and see them
again after a reload; a refused file says why and is not sent."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Page

from tests.browser.pages import (
    chat_id_of,
    open_ui,
    rest_events,
    send,
    wait_chips,
    wait_turns_ended,
)
from tests.support.files import png
from tests.support.servers import LiveServer

NOTES = b"milk\neggs\nbread\n"


async def attach(page: Page, *paths: Path) -> None:
    async with page.expect_file_chooser() as chooser:
        await page.click("#attach")
    await (await chooser.value).set_files([str(path) for path in paths])


async def test_attach_send_preview_and_reload(live: LiveServer, page: Page, tmp_path: Path) -> None:
    image = tmp_path / "sunset.png"
    image.write_bytes(png(120, 80, (230, 120, 40)))
    notes = tmp_path / "shopping.txt"
    notes.write_bytes(NOTES)
    await open_ui(page, live.http)
    await attach(page, image, notes)
    # Both upload, and the tray says what the server found them to be.
    await page.wait_for_selector("#attachment-tray .attachment-chip.ready >> nth=1")
    chips = await page.locator("#attachment-tray .attachment-chip").all_inner_texts()
    assert "sunset.png" in chips[0] and "PNG image" in chips[0]
    assert "shopping.txt" in chips[1] and "Text" in chips[1]

    await send(page, "What do you make of these?")
    await wait_turns_ended(page, 1)
    assert await page.locator("#attachment-tray").is_hidden()
    answer = await page.locator("#transcript .message.assistant").last.inner_text()
    assert f"I received sunset.png (PNG image, {image.stat().st_size:,} bytes, 120×80)" in answer
    assert "shopping.txt (text file, 16 bytes)" in answer

    async def previews() -> tuple[int, list[str]]:
        user = page.locator("#transcript .turn .message.user").last
        img = user.locator(".attachment-preview.image img")
        await page.wait_for_function(
            "() => document.querySelector('#transcript .attachment-preview img')?.naturalWidth === 120"
        )
        files = await user.locator("a.attachment-chip").all_inner_texts()
        return await img.count(), files

    count, files = await previews()
    assert count == 1 and len(files) == 1 and "shopping.txt" in files[0]
    events = await rest_events(live, chat_id_of(page))
    assert [a["name"] for a in events[0]["attachments"]] == ["sunset.png", "shopping.txt"]

    await page.reload()
    await open_ui(page, live.http, f"/#/chat/{chat_id_of(page)}")
    await page.wait_for_selector("#transcript .message.assistant")
    count, files = await previews()
    assert count == 1 and "shopping.txt" in files[0]


async def test_a_refused_file_is_shown_and_not_sent(
    live: LiveServer, page: Page, tmp_path: Path
) -> None:
    fake = tmp_path / "photo.png"
    fake.write_bytes(b"<html><script>alert(1)</script></html>")
    await open_ui(page, live.http)
    await attach(page, fake)
    failed = page.locator("#attachment-tray .attachment-chip.failed")
    await failed.wait_for()
    assert "HTML" in await page.locator("#toasts").inner_text()
    await failed.get_by_role("button", name="Remove photo.png").click()
    assert await page.locator("#attachment-tray").is_hidden()
    await send(page, "hello")
    await wait_chips(page)
    events = await rest_events(live, chat_id_of(page))
    assert "attachments" not in events[0]
