"""The cards the demo connectors do not produce on their own: account cards, links, errors,
replies, and the generic card from display_as hints (diff, link, JSON, fallbacks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.testing import ScriptedModel, assistant_message, function_call
from playwright.async_api import Page

from app.settings import Settings
from connectors.gmail.responses import ConnectGoogleAccount
from connectors.plaid.responses import ConnectPlaidAccountResponse
from connectors.responses import (
    ErrorResponse,
    OpenTabResponse,
    OpenWindowResponse,
    ToolResponse,
)
from connectors.tooling import connector_tool
from tests.browser.pages import body_items, open_ui, send, wait_turns_ended
from tests.support.models import scripted
from tests.support.servers import serve

PATCH = "--- a/app/greet.py\n+++ b/app/greet.py\n@@ -1,2 +1,2 @@\n def greet():\n-    return 'hi'\n+    return 'hello'\n"

RESPONSES: dict[str, ToolResponse] = {
    "plaid": ConnectPlaidAccountResponse(),
    "google": ConnectGoogleAccount(),
    "tab": OpenTabResponse("Web", "https://example.com/tab"),
    "window": OpenWindowResponse("Web", "https://example.com/window"),
    "error": ErrorResponse("Web", "the quota is used up for today"),
    "reply": ToolResponse(
        "reply_to_google_email",
        "GMail",
        "Sent Reply",
        {
            "to": ["ann@example.com"],
            "cc": [],
            "bcc": [],
            "subject": "Re: Lunch",
            "body": "Sounds good!",
            "in_reply_to": "abc",
            "thread_id": "t1",
        },
    ),
    "diff": ToolResponse(
        "rap_result",
        "Remote",
        "Edited app/greet.py",
        "patched",
        display_as=[
            {"type": "diff", "content": {"path": "app/greet.py", "patch": PATCH}},
            {"type": "text", "content": "patched"},
        ],
    ),
    "link": ToolResponse(
        "doc_link",
        "Docs",
        "A document",
        {"url": "https://example.com/doc"},
        display_as=[
            {"type": "hologram", "content": "?"},
            {"type": "link", "content": {"url": "https://example.com/doc", "title": "The guide"}},
        ],
    ),
    "json": ToolResponse("inventory", "Shop", "Inventory", {"apples": 3, "pears": 0}),
}


@connector_tool(agent_name="Cards")
async def show(kind: str) -> dict[str, Any]:
    """Show one kind of card.

    Args:
        kind: Which card.
    """
    return RESPONSES[kind].to_dict()


async def test_every_other_card_type_renders(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    kinds = list(RESPONSES)
    model = ScriptedModel(
        [
            [function_call("show", {"kind": kind}, call_id=f"c-{kind}") for kind in kinds],
            [assistant_message("Here they are.")],
        ]
    )
    async with serve(ui_settings(), hooks=(scripted(model, [show]),)) as live:
        await open_ui(page, live.http)
        await send(page, "show me every card")
        await wait_turns_ended(page, 1)

    items = await body_items(page)
    assert items == [f"card:{RESPONSES[kind].response_type}" for kind in kinds] + ["text"]
    # The error event that follows an error card does not repeat it.
    assert "error:tool_error" not in items

    plaid = page.locator(".card-connect_plaid_account")
    assert "Connect a bank account" in await plaid.inner_text()
    assert await plaid.get_by_role("button", name="Connect bank").is_visible()
    google = page.locator(".card-connect_google_account")
    assert await google.get_by_role("button", name="Connect Google").is_visible()

    for kind, url in (
        ("open_tab", "https://example.com/tab"),
        ("open_window", "https://example.com/window"),
    ):
        link = page.locator(f".card-{kind} a.button")
        assert await link.get_attribute("href") == url
        assert await link.get_attribute("rel") == "noopener noreferrer"

    error = page.locator(".card-error")
    assert await error.locator(".card-body").inner_text() == "the quota is used up for today"

    reply = page.locator(".card-reply_to_google_email")
    assert "Reply sent" in await reply.inner_text()
    assert "ann@example.com" in await reply.locator(".fields").inner_text()

    diff = page.locator(".card-rap_result figure.diff")
    assert await diff.locator(".diff-path").inner_text() == "app/greet.py"
    assert await diff.locator(".diff-line.add").all_inner_texts() == ["+    return 'hello'\n"]
    assert await diff.locator(".diff-line.del").all_inner_texts() == ["-    return 'hi'\n"]
    assert await diff.locator(".diff-line.hunk").count() == 1
    assert await diff.locator(".diff-stat").inner_text() == "+1 −1"

    # An unknown hint type is skipped for the next one the page supports.
    doc = page.locator(".card-doc_link a")
    assert await doc.inner_text() == "The guide"
    assert await doc.get_attribute("href") == "https://example.com/doc"

    # No hints at all: the response as JSON.
    shown = await page.locator(".card-inventory pre.json").inner_text()
    assert '"apples": 3' in shown and '"pears": 0' in shown


@connector_tool(agent_name="Pages", side_effect=False)
async def fetch_long_page() -> ToolResponse:
    """Fetch a page far longer than the size cap."""
    return ToolResponse("long_page", "Pages", "Long page", "lorem ipsum " * 100_000)


async def test_a_result_cut_to_the_size_cap_says_so_on_its_card(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    model = ScriptedModel(
        [
            [function_call("fetch_long_page", {}, call_id="c1")],
            [assistant_message("It was cut.")],
        ]
    )
    settings = ui_settings(tool_result_max_chars=4096)
    async with serve(settings, hooks=(scripted(model, [fetch_long_page]),)) as live:
        await open_ui(page, live.http)
        await send(page, "fetch the long page")
        await wait_turns_ended(page, 1)

    card = page.locator(".card-long_page")
    mark = card.locator(".card-head .card-truncated")
    assert await mark.is_visible()
    assert await mark.inner_text() == "truncated"
    assert "only its first part" in (await mark.get_attribute("title") or "")
    shown = await card.locator(".card-body").inner_text()
    assert shown.startswith("lorem ipsum") and len(shown) <= 4096
    assert await page.locator(".card-truncated").count() == 1  # only the cut card is marked
