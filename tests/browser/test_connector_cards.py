"""A plug-in connector's own UI card in Chromium: its module renders its response type and
lays out its approval, its stylesheet styles them, history is first painted with them, a
module that fails leaves the generic card (never a blank one), and the page's policy
lets it all run. Each plug-in is a real installed distribution (tests/support/card_plugin.py)."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents.testing import ScriptedModel, assistant_message, function_call
from playwright.async_api import Browser, ConsoleMessage, Page, Route, expect

from app.settings import Settings
from connectors.approvals import side_effect_of
from connectors.responses import ToolResponse
from connectors.scaffold import write_package
from connectors.tooling import connector_tool
from tests.browser.pages import (
    approval_card,
    approve,
    body_items,
    cards_loaded,
    open_ui,
    send,
    wait_turns_ended,
)
from tests.support.browser import DESKTOP, WAIT_MS
from tests.support.card_plugin import CardPlugin, forget, install_card_plugin
from tests.support.models import scripted
from tests.support.servers import LiveServer, serve

DESK_JS = """
export default function deskCard(ui) {
  const { h, asText, isObject } = ui;
  return {
    renderers: {
      desk_ticket: (ticket, output) => {
        if (!isObject(ticket)) return ui.genericBody(output);
        return h("div", { class: "desk-ticket" },
          h("p", { class: "desk-ticket-title", text: asText(ticket.title) }),
          h("span", { class: "desk-ticket-status", text: asText(ticket.status) }));
      },
    },
    approvals: {
      close_desk_ticket: {
        action: "close a ticket",
        approveLabel: "Approve and close",
        summary: (args) => `close ticket ${asText(args.ticket_id)}`,
      },
    },
  };
}
"""
DESK_CSS = ".desk-ticket-status { color: rgb(1, 2, 3); }\n"
# Records, from before the page's own scripts run, every card put in the transcript and
# whether it was drawn the generic way.
RECORD_CARDS = """
window.__cards = [];
const seen = new WeakSet();
new MutationObserver((changes) => {
  for (const change of changes) {
    for (const node of change.addedNodes) {
      const cards = node.nodeType === 1
        ? [...(node.matches('.card') ? [node] : []), ...node.querySelectorAll('.card')] : [];
      for (const card of cards.filter((c) => !seen.has(c))) {
        seen.add(card);
        window.__cards.push(card.dataset.responseType + ('generic' in card.dataset ? ':generic' : ''));
      }
    }
  }
}).observe(document, { subtree: true, childList: true });
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root


@pytest.fixture
def desk(site: Path) -> Iterator[CardPlugin]:
    plugin = install_card_plugin(site, "desk", card_js=DESK_JS, card_css=DESK_CSS, icon="review")
    yield plugin
    forget(plugin)


def gated(tools: list[Any]) -> list[Any]:
    """The tools, the writes among them flagged for approval as the server's policy does."""
    for tool in tools:
        if side_effect_of(tool):
            tool.needs_approval = True
    return tools


def show(name: str, ticket: str = "T-7", call_id: str = "s1") -> Any:
    return function_call(f"show_{name}_ticket", {"ticket_id": ticket}, call_id=call_id)


def warnings_of(page: Page) -> list[str]:
    """The page's warnings about cards (the browser may warn about other things)."""
    found: list[str] = []

    def keep(message: ConsoleMessage) -> None:
        if message.type == "warning" and "card" in message.text:
            found.append(message.text)

    page.on("console", keep)
    return found


@pytest.fixture
async def desk_server(
    ui_settings: Callable[..., Settings], desk: CardPlugin
) -> AsyncIterator[LiveServer]:
    model = ScriptedModel([[show("desk")], [assistant_message("Here is the ticket.")]])
    async with serve(ui_settings(), hooks=(scripted(model, desk.tools()),)) as live:
        yield live


# --------------------------------------------------------------------------- rendering


async def test_a_plugin_renders_its_own_card_and_approval(
    ui_settings: Callable[..., Settings], desk: CardPlugin, page: Page
) -> None:
    model = ScriptedModel(
        [
            [show("desk")],
            [
                function_call(
                    "close_desk_ticket",
                    {"ticket_id": "T-7", "comment": "The fire is out."},
                    call_id="c1",
                )
            ],
            [assistant_message("Closed.")],
        ]
    )
    warnings = warnings_of(page)
    async with serve(ui_settings(), hooks=(scripted(model, gated(desk.tools())),)) as live:
        await open_ui(page, live.http)
        await cards_loaded(page)  # the approval below must be built with the module's words
        await send(page, "close my printer ticket")

        card = page.locator("#transcript .card-desk_ticket")
        await expect(card.locator(".desk-ticket-title")).to_have_text("Printer on fire")
        assert await card.get_attribute("data-generic") is None
        # Its stylesheet is in the page; its icon is the one its manifest names.
        status = card.locator(".desk-ticket-status")
        assert await status.evaluate("el => getComputedStyle(el).color") == "rgb(1, 2, 3)"
        assert await card.locator(".card-head svg.icon-review").count() == 1

        # The approval: the module's words, every argument still shown (the id last).
        pending = approval_card(page, "pending")
        await pending.wait_for()
        await expect(page.locator("#announcer")).to_have_text("Approval needed: close ticket T-7")
        assert (
            await pending.locator(".approval-title").inner_text()
            == "Switchboard wants to close a ticket"
        )
        assert await pending.locator(".approval-summary").inner_text() == "Close ticket T-7"
        assert await pending.locator(".approval-args dt").all_inner_texts() == [
            "Comment",
            "Ticket id",
        ]
        assert await pending.locator(".approval-args dd code.arg-id").inner_text() == "T-7"
        await pending.get_by_role("button", name="Approve and close").wait_for()
        await approve(page)
        await wait_turns_ended(page, 1)
        assert await body_items(page) == [
            "card:desk_ticket",
            "approval:close_desk_ticket",
            "card:text",
            "text",
        ]

        # Reopened: drawn the same way from history.
        await page.reload()
        await wait_turns_ended(page, 1)
        await expect(card.locator(".desk-ticket-title")).to_have_text("Printer on fire")
        record = approval_card(page, "approved")
        assert await record.locator(".approval-title").inner_text() == (
            "Switchboard asked to close a ticket"
        )
    assert warnings == []


async def test_a_broken_card_module_leaves_the_generic_card(
    ui_settings: Callable[..., Settings], site: Path, page: Page
) -> None:
    broken = install_card_plugin(
        site, "desk", card_js="export default function (ui) {\n  return {;\n}\n"
    )
    throwing = install_card_plugin(
        site,
        "help",
        card_js="""
        export default (ui) => ({
          renderers: {
            help_ticket: () => { throw new Error("cannot read this ticket"); },
            error: () => ui.h("p", { text: "not my card" }),
          },
        });
        """,
    )
    empty = install_card_plugin(
        site,
        "shop",
        card_js="export default (ui) => ({ renderers: { shop_ticket: () => null } });\n",
    )
    odd = install_card_plugin(
        site,
        "odd",
        card_js="export default (ui) => ({ renderers: { odd_ticket: (ticket) => ticket } });\n",
    )
    failing = install_card_plugin(site, "lost", card_js="throw new Error('nope');\n")
    plugins = [broken, throwing, empty, odd, failing]
    model = ScriptedModel(
        [
            [show(p.name, call_id=f"s-{p.name}") for p in plugins],
            [assistant_message("Here they are.")],
        ]
    )
    tools = [tool for plugin in plugins for tool in plugin.tools()]
    warnings = warnings_of(page)
    try:
        async with serve(ui_settings(), hooks=(scripted(model, tools),)) as live:
            await open_ui(page, live.http)
            await send(page, "show the tickets")
            await wait_turns_ended(page, 1)
            # Each is the generic card of its display_as hint: readable, never blank.
            for plugin in plugins:
                body = page.locator(f"#transcript .card-{plugin.name}_ticket .card-body")
                assert await body.inner_text() == "Ticket T-7: Printer on fire"
            assert await body_items(page) == [
                *(f"card:{p.name}_ticket" for p in plugins),
                "text",
            ]
    finally:
        forget(*plugins)
    text = "\n".join(warnings)
    assert "the card module of desk did not load; its cards use the generic view" in text
    assert "the card module of lost did not load" in text
    assert "card for help_ticket fell back to the generic view" in text
    assert "card for shop_ticket fell back to the generic view" in text
    assert "card for odd_ticket fell back to the generic view" in text  # an object, not a node
    # A type every connector shares is not a plug-in's to take.
    assert "card module of help: error is a type every connector shares; skipped" in text


# --------------------------------------------------------------------------- no card at all

NOTES = "\n".join(f"Step {n}: check the form, then sign it." for n in range(1, 13))


@connector_tool(agent_name="Work", side_effect=True)
async def create_work_item(
    project_id: str, title: str, notes: str, tags: list[str]
) -> ToolResponse:
    """Add an item to a project.

    Args:
        project_id: The project's id, from find_work_project.
        title: The item's title.
        notes: Notes on the item.
        tags: Labels.
    """
    return ToolResponse("text", "Work", "Added", f"added {title}")


async def test_a_write_tool_without_a_card_shows_its_arguments_readably(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    arguments = {"project_id": "prj_1", "title": "Renew passport", "notes": NOTES, "tags": ["home"]}
    model = ScriptedModel(
        [
            [function_call("create_work_item", arguments, call_id="w1")],
            [assistant_message("Added.")],
        ]
    )
    async with serve(ui_settings(), hooks=(scripted(model, gated([create_work_item])),)) as live:
        await open_ui(page, live.http)
        await send(page, "add renew passport to my home project")
        card = approval_card(page, "pending")
        await card.wait_for()
        # What the person judges first; the id last, as quiet code: all of them, as they run.
        args = card.locator(".approval-args")
        assert await args.locator("dt").all_inner_texts() == [
            "Title",
            "Notes",
            "Tags",
            "Project id",
        ]
        assert await args.locator("dd code.arg-id").inner_text() == "prj_1"
        assert await args.locator("dt.arg-id").inner_text() == "Project id"
        # A long text: in a box that scrolls, whole, with a button that shows it all.
        box = args.locator(".text-box")
        assert await box.locator("p").text_content() == NOTES
        assert await box.evaluate("el => el.scrollHeight > el.clientHeight")
        more = card.get_by_role("button", name=f"Show all ({len(NOTES)} characters)")
        await more.click()
        assert await box.evaluate("el => el.scrollHeight <= el.clientHeight + 1")
        assert await card.get_by_role("button", name="Show less").get_attribute(
            "aria-expanded"
        ) == ("true")
        await approve(page)
        await wait_turns_ended(page, 1)
        # The record keeps every value whole, with nothing left to expand.
        record = approval_card(page, "approved")
        await record.locator("summary").click()
        assert await record.locator(".text-box.expanded p").text_content() == NOTES
        assert await record.locator(".text-box-expand").count() == 0


# --------------------------------------------------------------------------- the scaffold


@pytest.fixture
def errands(tmp_path: Path, site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new connector from ``switchboard connectors new errands``, installed as pip -e
    would: its folder on sys.path, its entry point in a .dist-info."""
    root = write_package("errands", tmp_path / "src")
    monkeypatch.syspath_prepend(str(root))
    info = site / "switchboard_errands-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: switchboard-errands\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[switchboard.connectors]\nerrands = switchboard_errands:connector\n"
    )
    importlib.invalidate_caches()
    yield "errands"
    for module in [m for m in sys.modules if m.startswith("switchboard_errands")]:
        sys.modules.pop(module, None)


async def test_a_new_connector_from_the_scaffold_shows_its_own_cards(
    errands: str, live: LiveServer, page: Page
) -> None:
    # In the offline demo, as a new connector's author first tries it.
    await open_ui(page, live.http)
    await cards_loaded(page)
    await send(page, "add an item 'renew passport' to the Home project")
    card = approval_card(page, "pending")
    await card.wait_for()
    assert await card.locator(".approval-title").inner_text() == "Errands wants to add an item"
    await expect(page.locator("#announcer")).to_have_text(
        "Approval needed: add “renew passport” to a project"
    )
    assert await card.locator(".approval-args dt").all_inner_texts() == ["Title", "Project id"]
    assert await card.locator(".approval-args code.arg-id").inner_text() == "prj_1"
    await card.get_by_role("button", name="Approve and add").click()
    await wait_turns_ended(page, 1)
    added = page.locator("#transcript .card-errands_item")
    await expect(added.locator(".status-line")).to_have_text("Added “renew passport” to Home")

    await send(page, "what's in my Home project?")
    await wait_turns_ended(page, 2)
    titles = page.locator("#transcript .card-errands_items .errands-title")
    assert (await titles.all_inner_texts())[-1] == "renew passport"
    assert await page.locator("#transcript .card[data-generic]").count() == 0


# --------------------------------------------------------------------------- load order


async def hold_module(page: Page, name: str) -> tuple[asyncio.Event, asyncio.Event]:
    """Hold the answer to ``name``'s card module until ``release`` is set; ``asked`` is set
    once the page asks for it. (Routing turns the browser's cache off.)"""
    asked, release = asyncio.Event(), asyncio.Event()

    async def held(route: Route) -> None:
        asked.set()
        await release.wait()
        await route.continue_()

    await page.route(f"**/connectors/{name}/card.js*", held)
    return asked, release


async def test_history_is_first_painted_with_the_plugin_card(
    desk_server: LiveServer, page: Page
) -> None:
    await open_ui(page, desk_server.http)
    await send(page, "show my ticket")
    await wait_turns_ended(page, 1)

    await page.add_init_script(RECORD_CARDS)
    asked, release = await hold_module(page, "desk")
    await page.reload(wait_until="commit")
    await asyncio.wait_for(asked.wait(), WAIT_MS / 1000)
    # The page goes on with what does not need the cards (the chat list) …
    await page.locator("#chat-list .chat-link").first.wait_for()
    # … but draws no history until the module is there.
    assert await page.locator("#transcript .turn").count() == 0
    release.set()
    await wait_turns_ended(page, 1)
    await expect(page.locator(".card-desk_ticket .desk-ticket-title")).to_have_text(
        "Printer on fire"
    )
    assert await page.evaluate("() => window.__cards") == ["desk_ticket"]


async def test_a_module_that_comes_late_draws_its_cards_again_in_place(
    desk_server: LiveServer, page: Page
) -> None:
    await open_ui(page, desk_server.http)
    await send(page, "show my ticket")
    await wait_turns_ended(page, 1)

    asked, release = await hold_module(page, "desk")
    await page.reload(wait_until="commit")
    await asyncio.wait_for(asked.wait(), WAIT_MS / 1000)
    # Past the page's wait for cards (5 s), history is drawn the generic way …
    generic = page.locator("#transcript .card-desk_ticket[data-generic]")
    await generic.wait_for(timeout=WAIT_MS + 5000)
    assert await generic.locator(".card-body").inner_text() == "Ticket T-7: Printer on fire"
    # … and drawn again by the module once it arrives, where it was.
    release.set()
    title = page.locator("#transcript .card-desk_ticket:not([data-generic]) .desk-ticket-title")
    await expect(title).to_have_text("Printer on fire")
    assert await page.locator("#transcript .card").count() == 1
    assert await body_items(page) == ["card:desk_ticket", "text"]


# --------------------------------------------------------------------------- the policy


async def test_a_plugin_card_runs_under_the_page_policy(
    desk_server: LiveServer, browser: Browser
) -> None:
    # Enforced (no bypass): the module, its stylesheet and its card, with no violation.
    context = await browser.new_context(viewport=DESKTOP)
    try:
        page = await context.new_page()
        reports: list[str] = []
        page.on(
            "console",
            lambda message: (
                reports.append(message.text)
                if "Content Security Policy" in message.text or "card" in message.text
                else None
            ),
        )
        await page.goto(desk_server.http + "/")
        await page.fill("#prompt", "show my ticket")
        await page.press("#prompt", "Enter")
        status = page.locator("#transcript .card-desk_ticket .desk-ticket-status")
        await expect(status).to_have_text("open")
        await expect(status).to_have_css("color", "rgb(1, 2, 3)")
        assert reports == []
    finally:
        await context.close()
