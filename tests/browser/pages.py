"""What a person does on the chat page, and what the tests read back from it."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Locator, Page

from tests.support.servers import LiveServer


async def open_ui(page: Page, base: str, path: str = "/") -> None:
    await page.goto(base + path)
    # The page is ready when it knows who the user is.
    await page.wait_for_function("() => document.getElementById('whoami').textContent !== ''")


def csp_violations(page: Page) -> list[str]:
    """The Content Security Policy violations the page reports from now on (its console
    says each), filled in as they come."""
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    return violations


async def cards_loaded(page: Page) -> None:
    """Wait until every connector's card module has loaded (or failed): the page draws
    without them after a while, and a live approval built before its module came uses the
    generic words."""
    await page.wait_for_function("() => document.documentElement.dataset.cards === 'loaded'")


async def send(page: Page, text: str) -> None:
    await page.fill("#prompt", text)
    await page.press("#prompt", "Enter")


async def retry_now(page: Page) -> None:
    """Press "Retry now" unless the page's own backoff has already reconnected.

    Checking and clicking in one step inside the page: a separate visibility check and
    click would race the automatic reconnect, which may hide the banner in between.
    """
    await page.evaluate("""() => {
        if (!document.getElementById('banner').hidden) {
            document.getElementById('banner-action').click();
        }
    }""")


async def wait_turns_ended(page: Page, count: int) -> None:
    """Until ``count`` turns have their end_of_stream (any status)."""
    await page.wait_for_function(
        "n => document.querySelectorAll('#transcript .turn[class*=\"status-\"]').length >= n",
        arg=count,
    )


async def wait_chips(page: Page, turns: int = 1) -> None:
    """Until the last of ``turns`` turns shows its suggested prompts."""
    await wait_turns_ended(page, turns)
    await page.wait_for_selector("#transcript .turn:last-of-type .chips .chip")


async def assistant_texts(page: Page) -> list[str]:
    """The source text of each finished assistant message, in order."""
    return await page.eval_on_selector_all(
        "#transcript .message.assistant", "els => els.map(el => el.dataset.text ?? null)"
    )


async def body_items(page: Page, turn: int = -1) -> list[str]:
    """What a turn shows, in order: 'agent:<name>', 'card:<response_type>', 'tool:<name>',
    'approval:<tool name>', 'text', 'error:<code>'."""
    return await page.evaluate(
        """i => {
            const turns = [...document.querySelectorAll('#transcript .turn')];
            const turn = turns.at(i);
            return [...turn.querySelector('.turn-body').children].map(el =>
                el.classList.contains('agent-badge') ? 'agent:' + el.dataset.agent
                : el.classList.contains('card') ? 'card:' + el.dataset.responseType
                : el.classList.contains('tool-row') ? 'tool:' + el.dataset.tool
                : el.classList.contains('approval') ? 'approval:' + el.dataset.tool
                : el.classList.contains('assistant') ? 'text'
                : el.classList.contains('error-row') ? 'error:' + el.dataset.code
                : el.className);
        }""",
        turn,
    )


def approval_card(page: Page, state: str | None = None) -> Locator:
    """The (last) approval card of the page, optionally only in ``state``: pending,
    deciding, approved, rejected, expired or superseded."""
    selector = "#transcript .approval"
    if state:
        selector += f"[data-state={state}]"
    return page.locator(selector).last


async def approve(page: Page) -> None:
    """Approve the pending approval card (waiting for it to appear and arm)."""
    card = approval_card(page, "pending")
    await card.wait_for()
    await card.get_by_role("button", name="Approve").click()
    await approval_card(page, "approved").wait_for()


async def rest_events(live: LiveServer, chat_id: str) -> list[dict[str, Any]]:
    async with live.client() as http:
        response = await http.get(f"/api/chats/{chat_id}/events")
        response.raise_for_status()
        return list(response.json()["events"])


def chat_id_of(page: Page) -> str:
    fragment = page.url.split("#/chat/", 1)
    assert len(fragment) == 2, f"the page does not name a chat: {page.url}"
    return fragment[1]


# Records, on every change, the text of the assistant message being streamed. Installed
# before the page's own scripts, so a reload or a resume cannot slip past it.
RECORD_STREAMING = """
window.__streamed = [];
new MutationObserver(() => {
  for (const el of document.querySelectorAll('.message.assistant.streaming .markdown')) {
    const text = el.textContent;
    if (window.__streamed.at(-1) !== text) window.__streamed.push(text);
  }
}).observe(document, { subtree: true, childList: true, characterData: true });
"""
