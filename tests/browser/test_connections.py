"""Connecting accounts from the page: the connect card in a chat, and the connections panel."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page

from app.settings import Settings
from tests.browser.pages import body_items, open_ui, send, wait_chips, wait_turns_ended
from tests.fakes.fake_service import serve_fake
from tests.support.mcp import NOTES_SERVER, python_without_mcp
from tests.support.notes_plugin import GOOD_KEY, FakeNotes, install_notes
from tests.support.servers import LiveServer, serve


async def connectors(live: LiveServer) -> dict[str, dict[str, Any]]:
    async with live.client() as http:
        response = await http.get("/api/connectors")
        response.raise_for_status()
        return {c["name"]: c for c in response.json()["connectors"]}


async def test_a_demo_account_connects_from_its_card_and_the_question_is_asked_again(
    live: LiveServer, page: Page
) -> None:
    async with live.client() as http:
        (await http.delete("/api/connectors/gmail")).raise_for_status()
    assert (await connectors(live))["gmail"]["connected"] is False

    await open_ui(page, live.http)
    await send(page, "what's in my inbox")
    await wait_turns_ended(page, 1)
    card = page.locator("#transcript .card-google_account_needed")
    await card.get_by_role("button", name="Connect Google").click()
    await card.get_by_text("Connected.").wait_for()
    assert (await connectors(live))["gmail"]["connected"] is True

    await card.get_by_role("button", name="Ask again").click()
    await wait_chips(page, turns=2)
    assert "card:google_email_inbox" in await body_items(page)
    prompts = await page.locator("#transcript .message.user").all_inner_texts()
    assert prompts == ["what's in my inbox", "what's in my inbox"]


async def test_the_connections_panel_lists_modes_and_connects_and_disconnects(
    live: LiveServer, page: Page
) -> None:
    await open_ui(page, live.http)
    await page.get_by_role("button", name="Connections").click()
    panel = page.locator("#connections-dialog")
    await panel.locator(".connector").first.wait_for()
    names = await panel.locator(".connector").evaluate_all(
        "els => els.map(e => e.dataset.connector)"
    )
    assert sorted(names) == sorted(await connectors(live))

    gmail = panel.locator(".connector[data-connector=gmail]")
    assert await gmail.locator(".badge").inner_text() == "demo"
    assert await gmail.locator(".connector-state").inner_text() == "Connected: me@example.com"
    await gmail.get_by_role("button", name="Disconnect Gmail").click()
    await gmail.get_by_text("Not connected").wait_for()
    assert (await connectors(live))["gmail"]["connected"] is False

    await gmail.get_by_role("button", name="Connect Gmail").click()
    await gmail.get_by_text("Connected: me@example.com").wait_for()
    assert (await connectors(live))["gmail"]["connected"] is True

    # A connector on the server's own keys has nothing to connect.
    yelp = panel.locator(".connector[data-connector=yelp]")
    assert await yelp.locator(".connector-state").inner_text() == "Always available"
    assert await yelp.get_by_role("button").count() == 0

    await page.keyboard.press("Escape")
    await panel.wait_for(state="hidden")


async def test_the_panel_says_why_a_server_is_unavailable_or_a_connector_not_loaded(
    ui_settings: Callable[..., Settings], page: Page, tmp_path: Path
) -> None:
    script = tmp_path / "notes_server.py"
    script.write_text("from mcp.server.mcpserver import MCPServer\n")
    servers = {
        # The PATH's python under `make run`: no mcp package.
        "notes": {"command": str(python_without_mcp(tmp_path / "bin")), "args": [str(script)]},
        "search": {"command": sys.executable, "args": [str(NOTES_SERVER), "stdio"]},
    }
    async with serve(ui_settings(mcp_servers=json.dumps(servers))) as server:
        await open_ui(page, server.http)
        await page.get_by_role("button", name="Connections").click()
        panel = page.locator("#connections-dialog")
        notes = panel.locator(".connector[data-connector=notes]")
        await notes.get_by_text("Unavailable").wait_for()
        reason = await notes.locator(".connector-reason").inner_text()
        failed = panel.locator(".failed-connector[data-connector=search]")
        failed_text = await failed.inner_text()

    assert reason.startswith("the connection closed (the server exited or crashed); its last")
    assert reason.endswith("ModuleNotFoundError: No module named 'mcp'")
    assert "Not loaded (SWITCHBOARD_MCP_SERVERS)" in failed_text
    assert "the name 'search' is already taken by the built-in connectors" in failed_text


@pytest.fixture
def notes_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from install_notes(tmp_path, monkeypatch)


@pytest.fixture
async def notes_service() -> AsyncIterator[FakeNotes]:
    fake = FakeNotes()
    async with serve_fake(fake):
        yield fake


async def test_a_plugins_api_key_flow_runs_from_the_panel(
    notes_installed: None,
    notes_service: FakeNotes,
    ui_settings: Callable[..., Settings],
    page: Page,
) -> None:
    settings = ui_settings(
        connector_modes={"notes": "live"},
        connector_options={"notes": {"base_url": notes_service.base_url}},
    )
    async with serve(settings) as server:
        await open_ui(page, server.http)
        await page.get_by_role("button", name="Connections").click()
        notes = page.locator("#connections-dialog .connector[data-connector=notes]")
        await notes.get_by_text("Not connected").wait_for()

        # A wrong key: the dialog closes, the service's refusal is shown, nothing is kept.
        await notes.get_by_role("button", name="Connect Notes").click()
        ask = page.get_by_role("dialog", name="Connect Notes")
        await ask.get_by_text("Create one under Settings, API keys, in Notes.").wait_for()
        await ask.get_by_label("Notes API key").fill("nk_live_wrong")
        await ask.get_by_role("button", name="Connect").click()
        await notes.get_by_text("Notes refused this key: check it and paste it again").wait_for()
        assert (await connectors(server))["notes"]["connected"] is False

        await notes.get_by_role("button", name="Connect Notes").click()
        await ask.get_by_label("Notes API key").fill(GOOD_KEY)
        await ask.get_by_role("button", name="Connect").click()
        await notes.get_by_text("Connected: ada@notes.example").wait_for()
        assert (await connectors(server))["notes"]["account"]["email"] == "ada@notes.example"
        assert GOOD_KEY not in await page.content()

        await notes.get_by_role("button", name="Disconnect Notes").click()
        await notes.get_by_text("Not connected").wait_for()
        assert notes_service.revoked == [GOOD_KEY]
